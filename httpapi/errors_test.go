package httpapi_test

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/httpapi"
)

// ids returns n comma-separated ids, 1 to n.
func ids(n int) string {
	s := make([]string, n)
	for i := range s {
		s[i] = strconv.Itoa(i + 1)
	}
	return strings.Join(s, ",")
}

// idsBody returns a body {"ids": [...]} of n ids, 1 to n.
func idsBody(n int) []byte {
	return []byte(`{"ids":["` + strings.ReplaceAll(ids(n), ",", `","`) + `"]}`)
}

// TestServer_Errors sends requests that must fail, each to a fresh server
// whose graph holds 1→2, 2→1 and 1→3, and checks the status, the code,
// what api/openapi.yaml says of the request (rejects tells whether it
// rejects it: where the document can say so, it agrees with the server;
// it cannot bound ids to 2^63-1, nor does kin-openapi see a malformed
// query string or data after a JSON body),
// and that the graph did not change.
func TestServer_Errors(t *testing.T) {
	key := followgraph.Key{Millis: t0.UnixMilli(), ID: 2}
	cursorOf := followgraph.EncodeCursor
	padded := append(append([]byte(`{"ids": ["1"]`), strings.Repeat(" ", 2<<20)...), '}')

	tests := []struct {
		name         string
		req          request
		maxFollowing int
		setup        func(f *fixture) // beyond the follows every test has
		status       int
		code         string
		rejects      bool // api/openapi.yaml rejects the request
	}{
		// Ids in paths.
		{name: "PathIDZero", req: request{method: "PUT", target: "/v1/users/0/following/2"}, status: 400, code: "invalid_id", rejects: true},
		{name: "PathIDNegative", req: request{method: "PUT", target: "/v1/users/-1/following/2"}, status: 400, code: "invalid_id", rejects: true},
		{name: "PathIDLeadingZero", req: request{method: "PUT", target: "/v1/users/007/following/2"}, status: 400, code: "invalid_id", rejects: true},
		{name: "PathID2To63", req: request{method: "PUT", target: "/v1/users/9223372036854775808/following/2"}, status: 400, code: "invalid_id"},
		{name: "PathIDHuge", req: request{method: "PUT", target: "/v1/users/99999999999999999999/following/2"}, status: 400, code: "invalid_id", rejects: true},
		{name: "PathIDLetters", req: request{method: "PUT", target: "/v1/users/abc/following/2"}, status: 400, code: "invalid_id", rejects: true},
		{name: "PathIDPlus", req: request{method: "PUT", target: "/v1/users/+1/following/2"}, status: 400, code: "invalid_id", rejects: true},
		{name: "PathIDSpace", req: request{method: "PUT", target: "/v1/users/%201/following/2"}, status: 400, code: "invalid_id", rejects: true},
		{name: "PathIDFloat", req: request{method: "PUT", target: "/v1/users/1.0/following/2"}, status: 400, code: "invalid_id", rejects: true},
		{name: "PathTargetZero", req: request{method: "PUT", target: "/v1/users/1/following/0"}, status: 400, code: "invalid_id", rejects: true},
		{name: "PathIDOnUnfollow", req: request{method: "DELETE", target: "/v1/users/1/following/-2"}, status: 400, code: "invalid_id", rejects: true},
		{name: "PathIDOnIsFollowing", req: request{method: "GET", target: "/v1/users/1/following/007"}, status: 400, code: "invalid_id", rejects: true},
		{name: "PathIDOnCounts", req: request{method: "GET", target: "/v1/users/0"}, status: 400, code: "invalid_id", rejects: true},
		{name: "PathIDOnFollowing", req: request{method: "GET", target: "/v1/users/x/following"}, status: 400, code: "invalid_id", rejects: true},
		{name: "PathIDOnFollowers", req: request{method: "GET", target: "/v1/users/9223372036854775808/followers"}, status: 400, code: "invalid_id"},
		{name: "PathIDOnRelations", req: request{method: "GET", target: "/v1/users/0/relations?ids=1"}, status: 400, code: "invalid_id", rejects: true},
		{name: "PathIDOnRelationsPost", req: request{method: "POST", target: "/v1/users/0/relations", body: []byte(`{"ids":["1"]}`)}, status: 400, code: "invalid_id", rejects: true},
		{name: "PathIDOnMutuals", req: request{method: "GET", target: "/v1/users/-5/mutuals"}, status: 400, code: "invalid_id", rejects: true},
		{name: "PathIDOnCommonFollowing", req: request{method: "GET", target: "/v1/users/1/common-following/0"}, status: 400, code: "invalid_id", rejects: true},
		{name: "PathIDOnCommonFollowers", req: request{method: "GET", target: "/v1/users/abc/common-followers/1"}, status: 400, code: "invalid_id", rejects: true},
		{name: "PathIDOnKnownFollowers", req: request{method: "GET", target: "/v1/users/1/known-followers/01"}, status: 400, code: "invalid_id", rejects: true},
		{name: "PathIDOnSuggestions", req: request{method: "GET", target: "/v1/users/0/suggestions"}, status: 400, code: "invalid_id", rejects: true},
		{name: "InvalidIDWinsOverSelfFollow", req: request{method: "PUT", target: "/v1/users/0/following/0"}, status: 400, code: "invalid_id", rejects: true},
		{name: "InvalidIDWinsOverLimit", req: request{method: "GET", target: "/v1/users/0/followers?limit=0"}, status: 400, code: "invalid_id", rejects: true},

		// Ids in queries.
		{name: "QueryIDZero", req: request{method: "GET", target: "/v1/users?ids=1,0"}, status: 400, code: "invalid_id", rejects: true},
		{name: "QueryIDNegative", req: request{method: "GET", target: "/v1/users?ids=-1"}, status: 400, code: "invalid_id", rejects: true},
		{name: "QueryIDLeadingZero", req: request{method: "GET", target: "/v1/users?ids=007"}, status: 400, code: "invalid_id", rejects: true},
		{name: "QueryID2To63", req: request{method: "GET", target: "/v1/users?ids=9223372036854775808"}, status: 400, code: "invalid_id"},
		{name: "QueryIDLetters", req: request{method: "GET", target: "/v1/users?ids=1,abc"}, status: 400, code: "invalid_id", rejects: true},
		{name: "QueryIDEmptyElement", req: request{method: "GET", target: "/v1/users?ids=1,,2"}, status: 400, code: "invalid_id", rejects: true},
		{name: "QueryIDTrailingComma", req: request{method: "GET", target: "/v1/users?ids=1,"}, status: 400, code: "invalid_id", rejects: true},
		{name: "QueryIDOnRelations", req: request{method: "GET", target: "/v1/users/1/relations?ids=2,-3"}, status: 400, code: "invalid_id", rejects: true},
		{name: "ViewerZero", req: request{method: "GET", target: "/v1/users/1/following?viewer=0"}, status: 400, code: "invalid_id", rejects: true},
		{name: "ViewerLetters", req: request{method: "GET", target: "/v1/users/1/followers?viewer=me"}, status: 400, code: "invalid_id", rejects: true},
		{name: "ViewerEmpty", req: request{method: "GET", target: "/v1/users/1/followers?viewer="}, status: 400, code: "invalid_id", rejects: true},
		{name: "ViewerTwice", req: request{method: "GET", target: "/v1/users/1/followers?viewer=1&viewer=2"}, status: 400, code: "invalid_argument"},
		{name: "IDsTwice", req: request{method: "GET", target: "/v1/users?ids=1&ids=2"}, status: 400, code: "invalid_argument"},
		{name: "MalformedQuery", req: request{method: "GET", target: "/v1/users?ids=%zz"}, status: 400, code: "invalid_argument"},

		// Ids in bodies.
		{name: "BodyIDNumber", req: request{method: "POST", target: "/v1/users/1/relations", body: []byte(`{"ids":[2]}`)}, status: 400, code: "invalid_id", rejects: true},
		{name: "BodyIDNumberAmongStrings", req: request{method: "POST", target: "/v1/users/1/relations", body: []byte(`{"ids":["2",3]}`)}, status: 400, code: "invalid_id", rejects: true},
		{name: "BodyIDHugeNumber", req: request{method: "POST", target: "/v1/users/1/relations", body: []byte(`{"ids":[1e400]}`)}, status: 400, code: "invalid_id", rejects: true},
		{name: "BodyIDNull", req: request{method: "POST", target: "/v1/users/1/relations", body: []byte(`{"ids":[null]}`)}, status: 400, code: "invalid_id", rejects: true},
		{name: "BodyIDArray", req: request{method: "POST", target: "/v1/users/1/relations", body: []byte(`{"ids":[["2"]]}`)}, status: 400, code: "invalid_id", rejects: true},
		{name: "BodyIDZero", req: request{method: "POST", target: "/v1/users/1/relations", body: []byte(`{"ids":["0"]}`)}, status: 400, code: "invalid_id", rejects: true},
		{name: "BodyIDNegative", req: request{method: "POST", target: "/v1/users/1/relations", body: []byte(`{"ids":["-1"]}`)}, status: 400, code: "invalid_id", rejects: true},
		{name: "BodyIDLeadingZero", req: request{method: "POST", target: "/v1/users/1/relations", body: []byte(`{"ids":["007"]}`)}, status: 400, code: "invalid_id", rejects: true},
		{name: "BodyID2To63", req: request{method: "POST", target: "/v1/users/1/relations", body: []byte(`{"ids":["9223372036854775808"]}`)}, status: 400, code: "invalid_id"},
		{name: "BodyIDLetters", req: request{method: "POST", target: "/v1/users/1/relations", body: []byte(`{"ids":["abc"]}`)}, status: 400, code: "invalid_id", rejects: true},
		{name: "BodyIDSpace", req: request{method: "POST", target: "/v1/users/1/relations", body: []byte(`{"ids":[" 2"]}`)}, status: 400, code: "invalid_id", rejects: true},

		// Limits.
		{name: "LimitZero", req: request{method: "GET", target: "/v1/users/1/following?limit=0"}, status: 400, code: "invalid_argument", rejects: true},
		{name: "LimitNegative", req: request{method: "GET", target: "/v1/users/1/followers?limit=-1"}, status: 400, code: "invalid_argument", rejects: true},
		{name: "LimitOverMax", req: request{method: "GET", target: "/v1/users/1/mutuals?limit=1001"}, status: 400, code: "invalid_argument", rejects: true},
		{name: "LimitHuge", req: request{method: "GET", target: "/v1/users/1/common-following/2?limit=99999999999999999999"}, status: 400, code: "invalid_argument", rejects: true},
		{name: "LimitLetters", req: request{method: "GET", target: "/v1/users/1/common-followers/2?limit=ten"}, status: 400, code: "invalid_argument", rejects: true},
		{name: "LimitFloat", req: request{method: "GET", target: "/v1/users/1/known-followers/2?limit=1.5"}, status: 400, code: "invalid_argument", rejects: true},
		{name: "LimitEmpty", req: request{method: "GET", target: "/v1/users/1/following?limit="}, status: 400, code: "invalid_argument", rejects: true},
		{name: "LimitSpace", req: request{method: "GET", target: "/v1/users/1/following?limit=%205"}, status: 400, code: "invalid_argument", rejects: true},
		{name: "LimitTwice", req: request{method: "GET", target: "/v1/users/1/following?limit=5&limit=6"}, status: 400, code: "invalid_argument"},
		{name: "SuggestionsLimitZero", req: request{method: "GET", target: "/v1/users/1/suggestions?limit=0"}, status: 400, code: "invalid_argument", rejects: true},
		{name: "SuggestionsLimitOverMax", req: request{method: "GET", target: "/v1/users/1/suggestions?limit=1001"}, status: 400, code: "invalid_argument", rejects: true},

		// Cursors.
		{name: "CursorGarbage", req: request{method: "GET", target: "/v1/users/1/following?cursor=garbage"}, status: 400, code: "invalid_cursor"},
		{name: "CursorOffset", req: request{method: "GET", target: "/v1/users/1/followers?cursor=20"}, status: 400, code: "invalid_cursor"},
		{name: "CursorOfFollowersOnFollowing", req: request{method: "GET", target: "/v1/users/1/following?cursor=" + cursorOf("followers/1", key)}, status: 400, code: "invalid_cursor"},
		{name: "CursorOfAnotherUser", req: request{method: "GET", target: "/v1/users/1/following?cursor=" + cursorOf("following/2", key)}, status: 400, code: "invalid_cursor"},
		{name: "CursorOfSwappedPair", req: request{method: "GET", target: "/v1/users/1/common-following/2?cursor=" + cursorOf("common-following/2/1", key)}, status: 400, code: "invalid_cursor"},
		{name: "CursorOfCommonFollowingOnKnownFollowers", req: request{method: "GET", target: "/v1/users/1/known-followers/2?cursor=" + cursorOf("common-following/1/2", key)}, status: 400, code: "invalid_cursor"},
		{name: "CursorOfMutualsOnCommonFollowers", req: request{method: "GET", target: "/v1/users/1/common-followers/2?cursor=" + cursorOf("mutuals/1", key)}, status: 400, code: "invalid_cursor"},
		{name: "CursorForged", req: request{method: "GET", target: "/v1/users/1/mutuals?cursor=" + forge(cursorOf("mutuals/1", key))}, status: 400, code: "invalid_cursor"},
		{name: "CursorTruncated", req: request{method: "GET", target: "/v1/users/1/mutuals?cursor=" + cursorOf("mutuals/1", key)[1:]}, status: 400, code: "invalid_cursor"},

		// Writes the graph refuses.
		{name: "SelfFollow", req: request{method: "PUT", target: "/v1/users/1/following/1"}, status: 400, code: "self_follow"},
		{name: "FollowingLimit", req: request{method: "PUT", target: "/v1/users/1/following/4"}, maxFollowing: 2, status: 409, code: "following_limit"},

		// Too many ids.
		{name: "CountsOf1001", req: request{method: "GET", target: "/v1/users?ids=" + ids(1001)}, status: 400, code: "invalid_argument", rejects: true},
		{name: "RelationsGet1001", req: request{method: "GET", target: "/v1/users/1/relations?ids=" + ids(1001)}, status: 400, code: "invalid_argument", rejects: true},
		{name: "RelationsPost10001", req: request{method: "POST", target: "/v1/users/1/relations", body: idsBody(10001)}, status: 400, code: "invalid_argument", rejects: true},

		// Malformed bodies.
		{name: "BodyEmpty", req: request{method: "POST", target: "/v1/users/1/relations", body: []byte{}}, status: 400, code: "invalid_argument", rejects: true},
		{name: "BodyNotJSON", req: request{method: "POST", target: "/v1/users/1/relations", body: []byte(`ids=1,2`)}, status: 400, code: "invalid_argument", rejects: true},
		{name: "BodyCut", req: request{method: "POST", target: "/v1/users/1/relations", body: []byte(`{"ids":["1"`)}, status: 400, code: "invalid_argument", rejects: true},
		{name: "BodyArray", req: request{method: "POST", target: "/v1/users/1/relations", body: []byte(`["1","2"]`)}, status: 400, code: "invalid_argument", rejects: true},
		{name: "BodyNull", req: request{method: "POST", target: "/v1/users/1/relations", body: []byte(`null`)}, status: 400, code: "invalid_argument", rejects: true},
		{name: "BodyNoIDs", req: request{method: "POST", target: "/v1/users/1/relations", body: []byte(`{}`)}, status: 400, code: "invalid_argument", rejects: true},
		{name: "BodyIDsNull", req: request{method: "POST", target: "/v1/users/1/relations", body: []byte(`{"ids":null}`)}, status: 400, code: "invalid_argument", rejects: true},
		{name: "BodyIDsString", req: request{method: "POST", target: "/v1/users/1/relations", body: []byte(`{"ids":"1,2"}`)}, status: 400, code: "invalid_argument", rejects: true},
		{name: "BodyIDsObject", req: request{method: "POST", target: "/v1/users/1/relations", body: []byte(`{"ids":{"0":"1"}}`)}, status: 400, code: "invalid_argument", rejects: true},
		{name: "BodyOtherField", req: request{method: "POST", target: "/v1/users/1/relations", body: []byte(`{"ids":["1"],"viewer":"2"}`)}, status: 400, code: "invalid_argument", rejects: true},
		{name: "BodyFieldCase", req: request{method: "POST", target: "/v1/users/1/relations", body: []byte(`{"IDS":["1"]}`)}, status: 400, code: "invalid_argument", rejects: true},
		{name: "BodyTwoObjects", req: request{method: "POST", target: "/v1/users/1/relations", body: []byte(`{"ids":["1"]}{"ids":["2"]}`)}, status: 400, code: "invalid_argument"},
		{name: "BodyTrailingGarbage", req: request{method: "POST", target: "/v1/users/1/relations", body: []byte(`{"ids":["1"]} x`)}, status: 400, code: "invalid_argument"},

		// Blocks, mutes, settings and follow requests.
		{name: "PathIDOnBlock", req: request{method: "PUT", target: "/v1/users/0/blocks/2"}, status: 400, code: "invalid_id", rejects: true},
		{name: "PathIDOnUnblock", req: request{method: "DELETE", target: "/v1/users/1/blocks/x"}, status: 400, code: "invalid_id", rejects: true},
		{name: "PathIDOnIsBlocking", req: request{method: "GET", target: "/v1/users/1/blocks/9223372036854775808"}, status: 400, code: "invalid_id"},
		{name: "PathIDOnBlocks", req: request{method: "GET", target: "/v1/users/-1/blocks"}, status: 400, code: "invalid_id", rejects: true},
		{name: "PathIDOnMute", req: request{method: "PUT", target: "/v1/users/1/mutes/0"}, status: 400, code: "invalid_id", rejects: true},
		{name: "PathIDOnUnmute", req: request{method: "DELETE", target: "/v1/users/01/mutes/2"}, status: 400, code: "invalid_id", rejects: true},
		{name: "PathIDOnIsMuting", req: request{method: "GET", target: "/v1/users/1/mutes/abc"}, status: 400, code: "invalid_id", rejects: true},
		{name: "PathIDOnMutes", req: request{method: "GET", target: "/v1/users/0/mutes"}, status: 400, code: "invalid_id", rejects: true},
		{name: "PathIDOnSettings", req: request{method: "GET", target: "/v1/users/0/settings"}, status: 400, code: "invalid_id", rejects: true},
		{name: "PathIDOnSetSettings", req: request{method: "PUT", target: "/v1/users/0/settings", body: []byte(`{"private": true}`)}, status: 400, code: "invalid_id", rejects: true},
		{name: "PathIDOnFollowRequests", req: request{method: "GET", target: "/v1/users/x/follow-requests"}, status: 400, code: "invalid_id", rejects: true},
		{name: "PathIDOnIsRequested", req: request{method: "GET", target: "/v1/users/1/follow-requests/0"}, status: 400, code: "invalid_id", rejects: true},
		{name: "PathIDOnApprove", req: request{method: "PUT", target: "/v1/users/1/followers/-3"}, status: 400, code: "invalid_id", rejects: true},
		{name: "PathIDOnRemoveFollower", req: request{method: "DELETE", target: "/v1/users/0/followers/3"}, status: 400, code: "invalid_id", rejects: true},
		{name: "InvalidIDWinsOverMuteBody", req: request{method: "PUT", target: "/v1/users/0/mutes/2", body: []byte(`{"duration_seconds": -1}`)}, status: 400, code: "invalid_id", rejects: true},
		{name: "SelfBlock", req: request{method: "PUT", target: "/v1/users/1/blocks/1"}, status: 400, code: "self_follow"},
		{name: "SelfMute", req: request{method: "PUT", target: "/v1/users/1/mutes/1"}, status: 400, code: "self_follow"},
		{name: "SelfApprove", req: request{method: "PUT", target: "/v1/users/1/followers/1"}, status: 400, code: "self_follow"},
		{name: "FollowOfBlocker", req: request{method: "PUT", target: "/v1/users/1/following/4"}, setup: blocks(4, 1), status: 403, code: "blocked"},
		{name: "FollowOfBlocked", req: request{method: "PUT", target: "/v1/users/4/following/1"}, setup: blocks(4, 1), status: 403, code: "blocked"},
		{name: "RequestOfBlocker", req: request{method: "PUT", target: "/v1/users/1/following/4"}, setup: func(f *fixture) { f.setPrivate(4); blocks(4, 1)(f) }, status: 403, code: "blocked"},
		{name: "ApproveNoRequest", req: request{method: "PUT", target: "/v1/users/1/followers/3"}, status: 404, code: "no_request"},
		{name: "LimitOnBlocks", req: request{method: "GET", target: "/v1/users/1/blocks?limit=0"}, status: 400, code: "invalid_argument", rejects: true},
		{name: "LimitOnMutes", req: request{method: "GET", target: "/v1/users/1/mutes?limit=1001"}, status: 400, code: "invalid_argument", rejects: true},
		{name: "LimitOnFollowRequests", req: request{method: "GET", target: "/v1/users/1/follow-requests?limit=x"}, status: 400, code: "invalid_argument", rejects: true},
		{name: "CursorOnBlocks", req: request{method: "GET", target: "/v1/users/1/blocks?cursor=garbage"}, status: 400, code: "invalid_cursor"},
		{name: "CursorOfFollowingOnFollowRequests", req: request{method: "GET", target: "/v1/users/1/follow-requests?cursor=" + cursorOf("following/1", key)}, status: 400, code: "invalid_cursor"},

		// A mute's body.
		{name: "MuteNegative", req: request{method: "PUT", target: "/v1/users/1/mutes/2", body: []byte(`{"duration_seconds": -1}`)}, status: 400, code: "invalid_argument", rejects: true},
		{name: "MuteFraction", req: request{method: "PUT", target: "/v1/users/1/mutes/2", body: []byte(`{"duration_seconds": 1.5}`)}, status: 400, code: "invalid_argument", rejects: true},
		{name: "MuteExponent", req: request{method: "PUT", target: "/v1/users/1/mutes/2", body: []byte(`{"duration_seconds": 1e3}`)}, status: 400, code: "invalid_argument"},
		{name: "MuteOverMax", req: request{method: "PUT", target: "/v1/users/1/mutes/2", body: []byte(`{"duration_seconds": 3153600001}`)}, status: 400, code: "invalid_argument", rejects: true},
		{name: "MuteHuge", req: request{method: "PUT", target: "/v1/users/1/mutes/2", body: []byte(`{"duration_seconds": 99999999999999999999999}`)}, status: 400, code: "invalid_argument", rejects: true},
		{name: "MuteMillisOverMax", req: request{method: "PUT", target: "/v1/users/1/mutes/2", body: []byte(`{"duration_ms": 3153600000001}`)}, status: 400, code: "invalid_argument", rejects: true},
		{name: "MuteBothUnits", req: request{method: "PUT", target: "/v1/users/1/mutes/2", body: []byte(`{"duration_seconds": 1, "duration_ms": 1000}`)}, status: 400, code: "invalid_argument", rejects: true},
		{name: "MuteString", req: request{method: "PUT", target: "/v1/users/1/mutes/2", body: []byte(`{"duration_seconds": "60"}`)}, status: 400, code: "invalid_argument", rejects: true},
		{name: "MuteNull", req: request{method: "PUT", target: "/v1/users/1/mutes/2", body: []byte(`{"duration_seconds": null}`)}, status: 400, code: "invalid_argument", rejects: true},
		{name: "MuteOtherField", req: request{method: "PUT", target: "/v1/users/1/mutes/2", body: []byte(`{"seconds": 60}`)}, status: 400, code: "invalid_argument", rejects: true},
		{name: "MuteArray", req: request{method: "PUT", target: "/v1/users/1/mutes/2", body: []byte(`[60]`)}, status: 400, code: "invalid_argument", rejects: true},
		{name: "MuteNotJSON", req: request{method: "PUT", target: "/v1/users/1/mutes/2", body: []byte(`60`)}, status: 400, code: "invalid_argument", rejects: true},
		{name: "MuteTrailingGarbage", req: request{method: "PUT", target: "/v1/users/1/mutes/2", body: []byte(`{} x`)}, status: 400, code: "invalid_argument"},
		{name: "MuteTooLarge", req: request{method: "PUT", target: "/v1/users/1/mutes/2", body: padded, chunked: true}, status: 413, code: "too_large", rejects: true},

		// The body of the settings.
		{name: "SettingsNoBody", req: request{method: "PUT", target: "/v1/users/1/settings"}, status: 400, code: "invalid_argument", rejects: true},
		{name: "SettingsEmptyObject", req: request{method: "PUT", target: "/v1/users/1/settings", body: []byte(`{}`)}, status: 400, code: "invalid_argument", rejects: true},
		{name: "SettingsString", req: request{method: "PUT", target: "/v1/users/1/settings", body: []byte(`{"private": "true"}`)}, status: 400, code: "invalid_argument", rejects: true},
		{name: "SettingsNull", req: request{method: "PUT", target: "/v1/users/1/settings", body: []byte(`{"private": null}`)}, status: 400, code: "invalid_argument", rejects: true},
		{name: "SettingsOtherField", req: request{method: "PUT", target: "/v1/users/1/settings", body: []byte(`{"private": true, "id": "1"}`)}, status: 400, code: "invalid_argument", rejects: true},
		{name: "SettingsTooLarge", req: request{method: "PUT", target: "/v1/users/1/settings", body: padded}, status: 413, code: "too_large", rejects: true},

		// Account states.
		{name: "PathIDOnState", req: request{method: "GET", target: "/v1/users/0/state"}, status: 400, code: "invalid_id", rejects: true},
		{name: "PathIDOnSetState", req: request{method: "PUT", target: "/v1/users/abc/state", body: []byte(`{"state": "deactivated"}`)}, status: 400, code: "invalid_id", rejects: true},
		{name: "InvalidIDWinsOverStateBody", req: request{method: "PUT", target: "/v1/users/0/state", body: []byte(`{"state": "gone"}`)}, status: 400, code: "invalid_id", rejects: true},
		{name: "StateNoBody", req: request{method: "PUT", target: "/v1/users/1/state"}, status: 400, code: "invalid_argument", rejects: true},
		{name: "StateEmptyObject", req: request{method: "PUT", target: "/v1/users/1/state", body: []byte(`{}`)}, status: 400, code: "invalid_argument", rejects: true},
		{name: "StateUnknownWord", req: request{method: "PUT", target: "/v1/users/1/state", body: []byte(`{"state": "banned"}`)}, status: 400, code: "invalid_argument", rejects: true},
		{name: "StateWordCase", req: request{method: "PUT", target: "/v1/users/1/state", body: []byte(`{"state": "Deactivated"}`)}, status: 400, code: "invalid_argument", rejects: true},
		{name: "StateEmptyWord", req: request{method: "PUT", target: "/v1/users/1/state", body: []byte(`{"state": ""}`)}, status: 400, code: "invalid_argument", rejects: true},
		{name: "StateNumber", req: request{method: "PUT", target: "/v1/users/1/state", body: []byte(`{"state": 1}`)}, status: 400, code: "invalid_argument", rejects: true},
		{name: "StateNull", req: request{method: "PUT", target: "/v1/users/1/state", body: []byte(`{"state": null}`)}, status: 400, code: "invalid_argument", rejects: true},
		{name: "StateOtherField", req: request{method: "PUT", target: "/v1/users/1/state", body: []byte(`{"state": "deactivated", "since": null}`)}, status: 400, code: "invalid_argument", rejects: true},
		{name: "StateBareString", req: request{method: "PUT", target: "/v1/users/1/state", body: []byte(`"deactivated"`)}, status: 400, code: "invalid_argument", rejects: true},
		{name: "StateTrailingGarbage", req: request{method: "PUT", target: "/v1/users/1/state", body: []byte(`{"state": "deactivated"} x`)}, status: 400, code: "invalid_argument"},
		{name: "StateTooLarge", req: request{method: "PUT", target: "/v1/users/1/state", body: padded, chunked: true}, status: 413, code: "too_large", rejects: true},

		// Bodies over 1 MiB.
		{name: "BodyTooLarge", req: request{method: "POST", target: "/v1/users/1/relations", body: padded}, status: 413, code: "too_large"},
		{name: "BodyTooLargeChunked", req: request{method: "POST", target: "/v1/users/1/relations", body: padded, chunked: true}, status: 413, code: "too_large"},
		{name: "BodyTooLargeOnFollow", req: request{method: "PUT", target: "/v1/users/1/following/4", body: padded}, status: 413, code: "too_large"},

		// Routes.
		{name: "UnknownRoot", req: request{method: "GET", target: "/"}, status: 404, code: "not_found"},
		{name: "UnknownVersion", req: request{method: "GET", target: "/v2/users/1"}, status: 404, code: "not_found"},
		{name: "UnknownList", req: request{method: "GET", target: "/v1/users/1/friends"}, status: 404, code: "not_found"},
		{name: "UnknownDeeper", req: request{method: "GET", target: "/v1/users/1/following/2/3"}, status: 404, code: "not_found"},
		{name: "TrailingSlash", req: request{method: "GET", target: "/v1/users/1/"}, status: 404, code: "not_found"},
		{name: "NotCanonical", req: request{method: "GET", target: "/v1//users/1"}, status: 404, code: "not_found"},
		{name: "DotSegment", req: request{method: "PUT", target: "/v1/users/1/following/../following/4"}, status: 404, code: "not_found"},
		{name: "UnknownWithWrongMethod", req: request{method: "DELETE", target: "/nothing"}, status: 404, code: "not_found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, fixtureConfig{maxFollowing: tt.maxFollowing})
			f.follow(1, 2)
			f.follow(2, 1)
			f.follow(1, 3)
			if tt.setup != nil {
				tt.setup(f)
			}
			before := f.state(1, 2, 3, 4)
			a := f.do(tt.req)
			if a.status != tt.status || a.errorCode() != tt.code {
				t.Errorf("%s %.80s: %d %.300s, want %d %s", tt.req.method, tt.req.target, a.status, a.body, tt.status, tt.code)
			}
			if a.found && (a.requestErr != nil) != tt.rejects {
				t.Errorf("api/openapi.yaml rejects the request: %v, want %v (%v)", a.requestErr != nil, tt.rejects, a.requestErr)
			}
			if a.errorMessage() == "" {
				t.Errorf("no error message in %s", a.body)
			}
			if after := f.state(1, 2, 3, 4); after != before {
				t.Errorf("the request changed the graph:\nbefore:\n%s\nafter:\n%s", before, after)
			}
			if l := f.log.String(); l != "" {
				t.Errorf("a refused request was logged: %s", l)
			}
		})
	}
}

// blocks returns the setup of a test in which user blocks target.
func blocks(user, target followgraph.UserID) func(f *fixture) {
	return func(f *fixture) {
		f.tb.Helper()
		if _, err := f.g.Block(context.Background(), user, target); err != nil {
			f.tb.Fatalf("Block(%d, %d): %v", user, target, err)
		}
	}
}

// forge flips a bit in the middle of cursor c.
func forge(c string) string {
	b := []byte(c)
	if b[len(b)/2] == 'A' {
		b[len(b)/2] = 'B'
	} else {
		b[len(b)/2] = 'A'
	}
	return string(b)
}

// TestServer_MethodNotAllowed checks that a known route with another
// method is a JSON 405 that names the allowed methods.
func TestServer_MethodNotAllowed(t *testing.T) {
	tests := []struct {
		method, target, allow string
	}{
		{"POST", "/v1/users/1/following/2", "DELETE, GET, HEAD, PUT"},
		{"PATCH", "/v1/users/1/following/2", "DELETE, GET, HEAD, PUT"},
		{"DELETE", "/v1/users/1", "GET, HEAD"},
		{"PUT", "/v1/users/1/relations", "GET, HEAD, POST"},
		{"POST", "/v1/users", "GET, HEAD"},
		{"DELETE", "/v1/users/1/followers", "GET, HEAD"},
		{"OPTIONS", "/v1/users/1/mutuals", "GET, HEAD"},
		{"POST", "/healthz", "GET, HEAD"},
		{"PUT", "/metrics", "GET, HEAD"},
		{"GET", "/v1/users/1/followers/2", "DELETE, PUT"},
		{"POST", "/v1/users/1/blocks/2", "DELETE, GET, HEAD, PUT"},
		{"PATCH", "/v1/users/1/mutes/2", "DELETE, GET, HEAD, PUT"},
		{"POST", "/v1/users/1/settings", "GET, HEAD, PUT"},
		{"DELETE", "/v1/users/1/follow-requests", "GET, HEAD"},
		{"PUT", "/v1/users/1/follow-requests/2", "GET, HEAD"},
		// The path decides the route; its ids are not even looked at.
		{"POST", "/v1/users/0/following/abc", "DELETE, GET, HEAD, PUT"},
	}
	f := newFixture(t, fixtureConfig{})
	f.follow(1, 2)
	before := f.state(1, 2)
	for _, tt := range tests {
		a := f.do(request{method: tt.method, target: tt.target})
		if a.status != http.StatusMethodNotAllowed || a.errorCode() != "method_not_allowed" {
			t.Errorf("%s %s: %d %s, want 405 method_not_allowed", tt.method, tt.target, a.status, a.body)
		}
		if got := a.header.Get("Allow"); got != tt.allow {
			t.Errorf("%s %s: Allow %q, want %q", tt.method, tt.target, got, tt.allow)
		}
	}
	if after := f.state(1, 2); after != before {
		t.Errorf("the requests changed the graph:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// TestServer_RateLimit checks that a user's writes over the rate are
// answered 429 with Retry-After and change nothing, while other users
// write on.
func TestServer_RateLimit(t *testing.T) {
	// One write, then one per 1000 s: the second write of a user is over.
	f := newFixture(t, fixtureConfig{opts: []httpapi.Option{httpapi.WithWriteRate(0.001, 1)}})
	if a := f.do(request{method: "PUT", target: "/v1/users/1/following/2"}); a.status != http.StatusOK {
		t.Fatalf("the first write: %d %s", a.status, a.body)
	}
	before := f.state(1, 2, 3)
	for _, r := range []request{
		{method: "PUT", target: "/v1/users/1/following/3"},
		{method: "DELETE", target: "/v1/users/1/following/2"},
		{method: "PUT", target: "/v1/users/1/following/2"},
		{method: "PUT", target: "/v1/users/1/blocks/3"},
		{method: "DELETE", target: "/v1/users/1/blocks/3"},
		{method: "PUT", target: "/v1/users/1/mutes/3", body: []byte(`{"duration_seconds": 60}`)},
		{method: "DELETE", target: "/v1/users/1/mutes/3"},
		{method: "PUT", target: "/v1/users/1/settings", body: []byte(`{"private": true}`)},
		{method: "PUT", target: "/v1/users/1/followers/3"},
		{method: "DELETE", target: "/v1/users/1/followers/3"},
	} {
		a := f.do(r)
		if a.status != http.StatusTooManyRequests || a.errorCode() != "rate_limited" {
			t.Errorf("%s %s: %d %s, want 429 rate_limited", r.method, r.target, a.status, a.body)
		}
		if s, err := strconv.Atoi(a.header.Get("Retry-After")); err != nil || s < 1 || s > 1000 {
			t.Errorf("%s %s: Retry-After %q, want seconds from 1 to 1000", r.method, r.target, a.header.Get("Retry-After"))
		}
	}
	if after := f.state(1, 2, 3); after != before {
		t.Errorf("refused writes changed the graph:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	// Reads are not limited, nor are other users' writes, nor is setting
	// a user's state (an administrator's act, not a write by the user),
	// nor are writes refused before the limit is consulted.
	for _, r := range []request{
		{method: "GET", target: "/v1/users/1/following/2"},
		{method: "PUT", target: "/v1/users/3/following/1"},
		{method: "PUT", target: "/v1/users/1/state", body: []byte(`{"state": "active"}`)},
	} {
		if a := f.do(r); a.status != http.StatusOK {
			t.Errorf("%s %s: %d %s, want 200", r.method, r.target, a.status, a.body)
		}
	}
	if a := f.do(request{method: "PUT", target: "/v1/users/4/following/4"}); a.errorCode() != "self_follow" {
		t.Errorf("a self follow: %d %s, want self_follow", a.status, a.body)
	}
	if a := f.do(request{method: "PUT", target: "/v1/users/4/mutes/5", body: []byte(`{"duration_seconds": -1}`)}); a.errorCode() != "invalid_argument" {
		t.Errorf("a mute with a bad body: %d %s, want invalid_argument", a.status, a.body)
	}
	if a := f.do(request{method: "PUT", target: "/v1/users/4/following/5"}); a.status != http.StatusOK {
		t.Errorf("the first write of 4, after a refused self follow: %d %s, want 200", a.status, a.body)
	}
}

// failing is a Graph whose every method returns err, or panics with it
// when panics is set.
type failing struct {
	followgraph.Graph
	err    error
	panics bool
}

func (g failing) fail() error {
	if g.panics {
		panic(g.err)
	}
	return g.err
}

func (g failing) Follow(context.Context, followgraph.UserID, followgraph.UserID) (followgraph.FollowResult, error) {
	return followgraph.FollowResult{}, g.fail()
}

func (g failing) Unfollow(context.Context, followgraph.UserID, followgraph.UserID) (bool, error) {
	return false, g.fail()
}

func (g failing) Followers(context.Context, followgraph.UserID, followgraph.PageRequest) (followgraph.Page, error) {
	return followgraph.Page{}, g.fail()
}

func (g failing) Relations(context.Context, followgraph.UserID, []followgraph.UserID) ([]followgraph.RelationInfo, error) {
	return nil, g.fail()
}

func (g failing) SetState(context.Context, followgraph.UserID, followgraph.State) (followgraph.AccountState, error) {
	return followgraph.AccountState{}, g.fail()
}

func (g failing) Mutuals(context.Context, followgraph.UserID, followgraph.PageRequest) (followgraph.SetPage, error) {
	return followgraph.SetPage{}, g.fail()
}

// TestServer_BackendErrors checks the answers to errors of the graph: an
// unavailable backend is 503 with its message; anything else is 500 with
// a message that says nothing of it, and a log line that does.
func TestServer_BackendErrors(t *testing.T) {
	const secret = "dial tcp 10.0.0.7:6379: password=hunter2"
	tests := []struct {
		name    string
		g       failing
		status  int
		code    string
		message string // "" for any
		logged  bool
	}{
		{"Unavailable", failing{err: followgraph.Errorf(followgraph.EUnavailable, "redis is down")}, 503, "unavailable", "redis is down", true},
		{"UnavailableWrapped", failing{err: errors.Join(errors.New(secret), followgraph.Errorf(followgraph.EUnavailable, "redis is down"))}, 503, "unavailable", "redis is down", true},
		{"Internal", failing{err: errors.New(secret)}, 500, "internal", "internal error", true},
		{"InternalCode", failing{err: followgraph.Errorf(followgraph.EInternal, "%s", secret)}, 500, "internal", "internal error", true},
		{"UnknownCode", failing{err: followgraph.Errorf("disk_on_fire", "%s", secret)}, 500, "internal", "internal error", true},
		{"Panic", failing{err: errors.New(secret), panics: true}, 500, "internal", "internal error", true},
	}
	requests := []request{
		{method: "PUT", target: "/v1/users/1/following/2"},
		{method: "DELETE", target: "/v1/users/1/following/2"},
		{method: "GET", target: "/v1/users/1/followers"},
		{method: "GET", target: "/v1/users/1/relations?ids=2,3"},
		{method: "POST", target: "/v1/users/1/relations", body: []byte(`{"ids":["2"]}`)},
		{method: "GET", target: "/v1/users/1/mutuals"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, fixtureConfig{wrap: func(g followgraph.Graph) followgraph.Graph {
				tt.g.Graph = g
				return tt.g
			}})
			f.follow(1, 2)
			before := f.state(1, 2)
			for _, r := range requests {
				a := f.do(r)
				if a.status != tt.status || a.errorCode() != tt.code || a.errorMessage() != tt.message {
					t.Errorf("%s %s: %d %s, want %d %s %q", r.method, r.target, a.status, a.body, tt.status, tt.code, tt.message)
				}
				if strings.Contains(string(a.body), "hunter2") {
					t.Errorf("%s %s: the answer leaks the error: %s", r.method, r.target, a.body)
				}
			}
			if after := f.state(1, 2); after != before {
				t.Errorf("failed writes changed the graph:\nbefore:\n%s\nafter:\n%s", before, after)
			}
			log := f.log.String()
			if n := strings.Count(log, "\n"); tt.logged && n != len(requests) {
				t.Errorf("%d log lines for %d failed requests:\n%s", n, len(requests), log)
			}
			if tt.code == "internal" && strings.Count(log, "hunter2") != len(requests) {
				t.Errorf("the log does not say what went wrong:\n%s", log)
			}
		})
	}
}

// TestServer_ParamNamedInError: an id that is not valid in a query
// parameter is refused naming the parameter (and, in a list, its place),
// as in a body.
func TestServer_ParamNamedInError(t *testing.T) {
	f := newFixture(t, fixtureConfig{})
	for target, want := range map[string]string{
		"/v1/users/1/followers?viewer=abc": `viewer: invalid user id "abc"`,
		"/v1/users/1/following?viewer=":    `viewer: invalid user id ""`,
		"/v1/users?ids=1,x":                `ids[1]: invalid user id "x"`,
		"/v1/users/1/relations?ids=0":      `ids[0]: invalid user id "0"`,
	} {
		a := f.get(target)
		if a.status != http.StatusBadRequest || !strings.HasPrefix(a.errorMessage(), want) {
			t.Errorf("GET %s: %d %q, want 400 with a message beginning %q", target, a.status, a.errorMessage(), want)
		}
	}
}
