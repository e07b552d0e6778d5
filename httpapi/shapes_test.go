package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"

	"github.com/followgraph/followgraph"
)

// TestServer_Shapes checks the exact JSON of every endpoint: field names,
// ids as strings, times in UTC to the millisecond, null where docs/API.md says
// null, and relation only where a viewer is given.
func TestServer_Shapes(t *testing.T) {
	const top = "9223372036854775807"
	f := newFixture(t, fixtureConfig{})
	put := func(target string) answer { return f.do(request{method: http.MethodPut, target: target}) }
	del := func(target string) answer { return f.do(request{method: http.MethodDelete, target: target}) }

	// 05.123: 1→2
	checkJSON(t, "follow", put("/v1/users/1/following/2"),
		`{"user": "1", "target": "2", "following": true, "created": true, "since": "2026-11-30T15:04:05.123Z"}`)
	f.advance(1) // 05.124: 2→1
	checkJSON(t, "follow again", put("/v1/users/1/following/2"),
		`{"user": "1", "target": "2", "following": true, "created": false, "since": "2026-11-30T15:04:05.123Z"}`)
	put("/v1/users/2/following/1")
	f.advance(1) // 05.125: 1→3
	put("/v1/users/1/following/3")
	f.advance(1) // 05.126: 3→2
	put("/v1/users/3/following/2")
	f.advance(1) // 05.127: 4→2, 4→3
	put("/v1/users/4/following/2")
	put("/v1/users/4/following/3")
	f.advance(1) // 05.128: 1→top
	checkJSON(t, "follow the largest id", put("/v1/users/1/following/"+top),
		`{"user": "1", "target": "`+top+`", "following": true, "created": true, "since": "2026-11-30T15:04:05.128Z"}`)

	checkJSON(t, "is following", f.get("/v1/users/1/following/2"),
		`{"user": "1", "target": "2", "following": true, "since": "2026-11-30T15:04:05.123Z"}`)
	checkJSON(t, "is not following", f.get("/v1/users/2/following/3"),
		`{"user": "2", "target": "3", "following": false, "since": null}`)

	checkJSON(t, "counts", f.get("/v1/users/1"),
		`{"id": "1", "following_count": 3, "follower_count": 1, "follow_requests_count": 0}`)
	checkJSON(t, "counts of a user with no edges", f.get("/v1/users/77"),
		`{"id": "77", "following_count": 0, "follower_count": 0, "follow_requests_count": 0}`)
	checkJSON(t, "counts of several", f.get("/v1/users?ids=2,9,"+top+",2"),
		`{"users": [
			{"id": "2", "following_count": 1, "follower_count": 3, "follow_requests_count": 0},
			{"id": "9", "following_count": 0, "follower_count": 0, "follow_requests_count": 0},
			{"id": "`+top+`", "following_count": 0, "follower_count": 1, "follow_requests_count": 0},
			{"id": "2", "following_count": 1, "follower_count": 3, "follow_requests_count": 0}]}`)
	checkJSON(t, "counts of none", f.get("/v1/users?ids="), `{"users": []}`)
	checkJSON(t, "counts of none, no ids", f.get("/v1/users"), `{"users": []}`)

	checkJSON(t, "following", f.get("/v1/users/1/following"),
		`{"users": [
			{"id": "`+top+`", "since": "2026-11-30T15:04:05.128Z"},
			{"id": "3", "since": "2026-11-30T15:04:05.125Z"},
			{"id": "2", "since": "2026-11-30T15:04:05.123Z"}],
		  "next_cursor": null}`)
	c := checkJSON(t, "following, 2 a page, viewed by 2", f.get("/v1/users/1/following?limit=2&viewer=2"),
		`{"users": [
			{"id": "`+top+`", "since": "2026-11-30T15:04:05.128Z", "relation": "none"},
			{"id": "3", "since": "2026-11-30T15:04:05.125Z", "relation": "follower"}],
		  "next_cursor": "<cursor>"}`)
	checkJSON(t, "following, page 2, viewed by 2", f.get("/v1/users/1/following?limit=2&viewer=2&cursor="+url.QueryEscape(c)),
		`{"users": [{"id": "2", "since": "2026-11-30T15:04:05.123Z", "relation": "self"}], "next_cursor": null}`)
	checkJSON(t, "followers, viewed by 1", f.get("/v1/users/2/followers?viewer=1"),
		`{"users": [
			{"id": "4", "since": "2026-11-30T15:04:05.127Z", "relation": "none"},
			{"id": "3", "since": "2026-11-30T15:04:05.126Z", "relation": "following"},
			{"id": "1", "since": "2026-11-30T15:04:05.123Z", "relation": "self"}],
		  "next_cursor": null}`)
	checkJSON(t, "followers, viewed by 2", f.get("/v1/users/1/followers?viewer=2"),
		`{"users": [{"id": "2", "since": "2026-11-30T15:04:05.124Z", "relation": "self"}], "next_cursor": null}`)
	checkJSON(t, "followers of a user with none, viewed", f.get("/v1/users/5/followers?viewer=1"),
		`{"users": [], "next_cursor": null}`)
	checkJSON(t, "followers viewed by one who follows them both ways", f.get("/v1/users/3/followers?viewer=2"),
		`{"users": [
			{"id": "4", "since": "2026-11-30T15:04:05.127Z", "relation": "follower"},
			{"id": "1", "since": "2026-11-30T15:04:05.125Z", "relation": "mutual"}],
		  "next_cursor": null}`)

	const relations = `{"relations": [
		{"id": "2", "relation": "mutual", "following_since": "2026-11-30T15:04:05.123Z", "followed_by_since": "2026-11-30T15:04:05.124Z"},
		{"id": "3", "relation": "following", "following_since": "2026-11-30T15:04:05.125Z", "followed_by_since": null},
		{"id": "4", "relation": "none", "following_since": null, "followed_by_since": null},
		{"id": "1", "relation": "self", "following_since": null, "followed_by_since": null},
		{"id": "2", "relation": "mutual", "following_since": "2026-11-30T15:04:05.123Z", "followed_by_since": "2026-11-30T15:04:05.124Z"}]}`
	checkJSON(t, "relations", f.get("/v1/users/1/relations?ids=2,3,4,1,2"), relations)
	checkJSON(t, "relations by POST", f.do(request{method: http.MethodPost, target: "/v1/users/1/relations",
		body: []byte(`{"ids": ["2", "3", "4", "1", "2"]}`)}), relations)
	checkJSON(t, "relations of a follower", f.get("/v1/users/3/relations?ids=4"),
		`{"relations": [{"id": "4", "relation": "follower", "following_since": null, "followed_by_since": "2026-11-30T15:04:05.127Z"}]}`)
	checkJSON(t, "relations to none", f.get("/v1/users/1/relations"), `{"relations": []}`)
	checkJSON(t, "relations to none by POST", f.do(request{method: http.MethodPost, target: "/v1/users/1/relations",
		body: []byte(`{"ids": []}`)}), `{"relations": []}`)

	checkJSON(t, "mutuals", f.get("/v1/users/1/mutuals"),
		`{"count": 1, "users": [{"id": "2", "since": "2026-11-30T15:04:05.123Z"}], "next_cursor": null}`)
	checkJSON(t, "common following", f.get("/v1/users/3/common-following/4"),
		`{"count": 1, "users": [{"id": "2", "since": "2026-11-30T15:04:05.126Z"}], "next_cursor": null}`)
	c = checkJSON(t, "common followers, 1 a page", f.get("/v1/users/2/common-followers/3?limit=1"),
		`{"count": 2, "users": [{"id": "4", "since": "2026-11-30T15:04:05.127Z"}], "next_cursor": "<cursor>"}`)
	checkJSON(t, "common followers, page 2", f.get("/v1/users/2/common-followers/3?limit=1&cursor="+url.QueryEscape(c)),
		`{"count": 2, "users": [{"id": "1", "since": "2026-11-30T15:04:05.123Z"}], "next_cursor": null}`)
	checkJSON(t, "known followers", f.get("/v1/users/1/known-followers/2"),
		`{"count": 1, "users": [{"id": "3", "since": "2026-11-30T15:04:05.125Z"}], "next_cursor": null}`)
	checkJSON(t, "an empty set", f.get("/v1/users/5/mutuals"),
		`{"count": 0, "users": [], "next_cursor": null}`)

	checkJSON(t, "suggestions", f.get("/v1/users/4/suggestions"),
		`{"users": [{"id": "1", "score": 1, "via": ["2"]}]}`)
	checkJSON(t, "no suggestions", f.get("/v1/users/5/suggestions?limit=5"), `{"users": []}`)

	checkJSON(t, "unfollow", del("/v1/users/4/following/3"),
		`{"user": "4", "target": "3", "following": false, "removed": true}`)
	checkJSON(t, "unfollow again", del("/v1/users/4/following/3"),
		`{"user": "4", "target": "3", "following": false, "removed": false}`)
	checkJSON(t, "unfollow of an unknown user", del("/v1/users/88/following/99"),
		`{"user": "88", "target": "99", "following": false, "removed": false}`)

	checkJSON(t, "healthz", f.get("/healthz"), `{"status": "ok"}`)
	checkJSON(t, "readyz", f.get("/readyz"), `{"status": "ready"}`)

	a := f.get("/v1/users/0")
	want := `{"error": {"code": "invalid_id", "message": ` + jsonString(followgraph.ErrorMessage(mustFail(followgraph.ParseUserID("0")))) + `}}`
	a.status = http.StatusOK // compare the body only
	checkJSON(t, "an error", a, want)

	if l := f.log.String(); l != "" {
		t.Errorf("successful requests were logged:\n%s", l)
	}
}

func mustFail(_ followgraph.UserID, err error) error { return err }

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestServer_ShapesOfRelationships checks the exact JSON of the routes of
// blocks, mutes, settings and follow requests, and the flags they add to
// relations and to lists with a viewer, present only when true.
func TestServer_ShapesOfRelationships(t *testing.T) {
	f := newFixture(t, fixtureConfig{})
	put := func(target, body string) answer {
		r := request{method: http.MethodPut, target: target}
		if body != "" {
			r.body = []byte(body)
		}
		return f.do(r)
	}
	del := func(target string) answer { return f.do(request{method: http.MethodDelete, target: target}) }

	// 05.123: 1→2, 2→1, 4→2
	put("/v1/users/1/following/2", "")
	put("/v1/users/2/following/1", "")
	put("/v1/users/4/following/2", "")
	f.advance(1) // 05.124: 1 blocks 3
	checkJSON(t, "block", put("/v1/users/1/blocks/3", ""),
		`{"user": "1", "target": "3", "blocking": true, "created": true, "since": "2026-11-30T15:04:05.124Z"}`)
	f.advance(1)
	checkJSON(t, "block again", put("/v1/users/1/blocks/3", ""),
		`{"user": "1", "target": "3", "blocking": true, "created": false, "since": "2026-11-30T15:04:05.124Z"}`)
	checkJSON(t, "is blocking", f.get("/v1/users/1/blocks/3"),
		`{"user": "1", "target": "3", "blocking": true, "since": "2026-11-30T15:04:05.124Z"}`)
	checkJSON(t, "is not blocking", f.get("/v1/users/3/blocks/1"),
		`{"user": "3", "target": "1", "blocking": false, "since": null}`)
	checkJSON(t, "blocks", f.get("/v1/users/1/blocks"),
		`{"users": [{"id": "3", "since": "2026-11-30T15:04:05.124Z"}], "next_cursor": null}`)

	// 05.125: 1 mutes 4 until unmuted; 05.126: for a minute from then.
	checkJSON(t, "mute", put("/v1/users/1/mutes/4", ""),
		`{"user": "1", "target": "4", "muting": true, "created": true, "since": "2026-11-30T15:04:05.125Z", "expires_at": null}`)
	f.advance(1)
	checkJSON(t, "mute again, for a minute", put("/v1/users/1/mutes/4", `{"duration_seconds": 60}`),
		`{"user": "1", "target": "4", "muting": true, "created": false, "since": "2026-11-30T15:04:05.125Z", "expires_at": "2026-11-30T15:05:05.126Z"}`)
	checkJSON(t, "mute for 1.5 s", put("/v1/users/1/mutes/5", `{"duration_ms": 1500}`),
		`{"user": "1", "target": "5", "muting": true, "created": true, "since": "2026-11-30T15:04:05.126Z", "expires_at": "2026-11-30T15:04:06.626Z"}`)
	checkJSON(t, "mute with an empty body", put("/v1/users/1/mutes/6", `{}`),
		`{"user": "1", "target": "6", "muting": true, "created": true, "since": "2026-11-30T15:04:05.126Z", "expires_at": null}`)
	checkJSON(t, "is muting", f.get("/v1/users/1/mutes/4"),
		`{"user": "1", "target": "4", "muting": true, "since": "2026-11-30T15:04:05.125Z", "expires_at": "2026-11-30T15:05:05.126Z"}`)
	checkJSON(t, "is not muting", f.get("/v1/users/4/mutes/1"),
		`{"user": "4", "target": "1", "muting": false, "since": null, "expires_at": null}`)
	checkJSON(t, "mutes", f.get("/v1/users/1/mutes"),
		`{"users": [
			{"id": "6", "since": "2026-11-30T15:04:05.126Z"},
			{"id": "5", "since": "2026-11-30T15:04:05.126Z"},
			{"id": "4", "since": "2026-11-30T15:04:05.125Z"}],
		  "next_cursor": null}`)
	checkJSON(t, "unmute", del("/v1/users/1/mutes/6"), `{"user": "1", "target": "6", "muting": false, "removed": true}`)
	checkJSON(t, "unmute again", del("/v1/users/1/mutes/6"), `{"user": "1", "target": "6", "muting": false, "removed": false}`)

	// 5 goes private; 05.127: 6 asks to follow 5.
	checkJSON(t, "settings", f.get("/v1/users/5/settings"), `{"id": "5", "private": false}`)
	checkJSON(t, "set private", put("/v1/users/5/settings", `{"private": true}`), `{"id": "5", "private": true}`)
	checkJSON(t, "settings, private", f.get("/v1/users/5/settings"), `{"id": "5", "private": true}`)
	f.advance(1)
	checkJSON(t, "follow request", put("/v1/users/6/following/5", ""),
		`{"user": "6", "target": "5", "following": false, "requested": true, "created": true, "since": "2026-11-30T15:04:05.127Z"}`)
	f.advance(1)
	checkJSON(t, "follow request again", put("/v1/users/6/following/5", ""),
		`{"user": "6", "target": "5", "following": false, "requested": true, "created": false, "since": "2026-11-30T15:04:05.127Z"}`)
	checkJSON(t, "counts with a request", f.get("/v1/users/5"),
		`{"id": "5", "following_count": 0, "follower_count": 0, "follow_requests_count": 1}`)
	checkJSON(t, "counts of several with a request", f.get("/v1/users?ids=6,5"),
		`{"users": [
			{"id": "6", "following_count": 0, "follower_count": 0, "follow_requests_count": 0},
			{"id": "5", "following_count": 0, "follower_count": 0, "follow_requests_count": 1}]}`)
	checkJSON(t, "follow requests", f.get("/v1/users/5/follow-requests"),
		`{"users": [{"id": "6", "since": "2026-11-30T15:04:05.127Z"}], "next_cursor": null}`)
	checkJSON(t, "is requested", f.get("/v1/users/5/follow-requests/6"),
		`{"user": "5", "requester": "6", "requested": true, "since": "2026-11-30T15:04:05.127Z"}`)
	checkJSON(t, "is not requested", f.get("/v1/users/6/follow-requests/5"),
		`{"user": "6", "requester": "5", "requested": false, "since": null}`)

	checkJSON(t, "relations with flags", f.get("/v1/users/1/relations?ids=3,4,5,2"),
		`{"relations": [
			{"id": "3", "relation": "none", "following_since": null, "followed_by_since": null, "blocking": true},
			{"id": "4", "relation": "none", "following_since": null, "followed_by_since": null, "muting": true},
			{"id": "5", "relation": "none", "following_since": null, "followed_by_since": null, "muting": true},
			{"id": "2", "relation": "mutual", "following_since": "2026-11-30T15:04:05.123Z", "followed_by_since": "2026-11-30T15:04:05.123Z"}]}`)
	checkJSON(t, "relations of the blocked", f.do(request{method: http.MethodPost, target: "/v1/users/3/relations", body: []byte(`{"ids": ["1"]}`)}),
		`{"relations": [{"id": "1", "relation": "none", "following_since": null, "followed_by_since": null, "blocked_by": true}]}`)
	checkJSON(t, "relations of requests", f.get("/v1/users/5/relations?ids=6"),
		`{"relations": [{"id": "6", "relation": "none", "following_since": null, "followed_by_since": null, "requested_by": true}]}`)
	checkJSON(t, "relations of the requester", f.get("/v1/users/6/relations?ids=5"),
		`{"relations": [{"id": "5", "relation": "none", "following_since": null, "followed_by_since": null, "requested": true}]}`)
	checkJSON(t, "a list with a viewer and flags", f.get("/v1/users/2/followers?viewer=1"),
		`{"users": [
			{"id": "4", "since": "2026-11-30T15:04:05.123Z", "relation": "none", "muting": true},
			{"id": "1", "since": "2026-11-30T15:04:05.123Z", "relation": "self"}],
		  "next_cursor": null}`)

	// 05.129: 5 approves 6, then removes it.
	f.advance(1)
	checkJSON(t, "approve", put("/v1/users/5/followers/6", ""),
		`{"user": "5", "follower": "6", "following": true, "created": true, "since": "2026-11-30T15:04:05.129Z"}`)
	checkJSON(t, "approve again", put("/v1/users/5/followers/6", ""),
		`{"user": "5", "follower": "6", "following": true, "created": false, "since": "2026-11-30T15:04:05.129Z"}`)
	checkJSON(t, "counts after the approval", f.get("/v1/users/5"),
		`{"id": "5", "following_count": 0, "follower_count": 1, "follow_requests_count": 0}`)
	checkJSON(t, "remove a follower", del("/v1/users/5/followers/6"), `{"user": "5", "follower": "6", "removed": true}`)
	checkJSON(t, "remove a follower again", del("/v1/users/5/followers/6"), `{"user": "5", "follower": "6", "removed": false}`)
	put("/v1/users/7/following/5", "")
	checkJSON(t, "withdraw a request", del("/v1/users/7/following/5"),
		`{"user": "7", "target": "5", "following": false, "removed": true}`)
	checkJSON(t, "unblock", del("/v1/users/1/blocks/3"), `{"user": "1", "target": "3", "blocking": false, "removed": true}`)
	checkJSON(t, "unblock again", del("/v1/users/1/blocks/3"), `{"user": "1", "target": "3", "blocking": false, "removed": false}`)

	// 1.5 s after 05.126, the mute of 5 is gone from every read.
	f.advance(1500)
	checkJSON(t, "an expired mute", f.get("/v1/users/1/mutes/5"),
		`{"user": "1", "target": "5", "muting": false, "since": null, "expires_at": null}`)
	checkJSON(t, "mutes after an expiry", f.get("/v1/users/1/mutes"),
		`{"users": [{"id": "4", "since": "2026-11-30T15:04:05.125Z"}], "next_cursor": null}`)

	if l := f.log.String(); l != "" {
		t.Errorf("successful requests were logged:\n%s", l)
	}
}
