package postgres

// The list queries, for the test that checks their plans.
const (
	FollowingSQL = followingSQL
	FollowersSQL = followersSQL
)
