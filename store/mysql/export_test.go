package mysql

// What the tests of package mysql_test see of the package's insides.
var (
	SplitStatements = splitStatements
	StatementRows   = statementRows
)

// ListQueries are the list and count queries with the arguments of one
// call, for checking their plans with EXPLAIN.
var ListQueries = map[string]string{
	"Following":      followingSQL,
	"FollowingAfter": followingAfterSQL,
	"Followers":      followersSQL,
	"FollowersAfter": followersAfterSQL,
}

const MaxRows = maxRows
