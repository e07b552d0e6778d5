package postgres

// The list queries, for the test that checks their plans.
const (
	FollowingSQL = followingSQL
	FollowersSQL = followersSQL
)

// SetSplitMin sets the smallest batch written in two halves, and returns
// a function that restores it.
func SetSplitMin(n int) (restore func()) {
	old := splitMin
	splitMin = n
	return func() { splitMin = old }
}
