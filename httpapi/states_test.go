package httpapi_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/graphtest"
)

// TestServer_States checks the exact JSON of GET and PUT
// /v1/users/{user}/state, and what a state that is not active does to the
// answers of the other routes: "state" in the counts, and the statuses of
// writes by and of such a user.
func TestServer_States(t *testing.T) {
	put := func(f *fixture, user, body string) answer {
		return f.do(request{method: http.MethodPut, target: "/v1/users/" + user + "/state", body: []byte(body)})
	}

	t.Run("Active", func(t *testing.T) {
		f := newFixture(t, fixtureConfig{})
		f.follow(1, 2)
		checkJSON(t, "a user never set", f.get("/v1/users/1/state"),
			`{"id": "1", "state": "active", "since": null, "pending": 0}`)
		checkJSON(t, "set active, as it is", put(f, "1", `{"state": "active"}`),
			`{"id": "1", "state": "active", "since": null, "pending": 0}`)
		checkJSON(t, "the largest id", f.get("/v1/users/9223372036854775807/state"),
			`{"id": "9223372036854775807", "state": "active", "since": null, "pending": 0}`)
		checkJSON(t, "counts of an active user have no state", f.get("/v1/users/1"),
			`{"id": "1", "following_count": 1, "follower_count": 0, "follow_requests_count": 0}`)
		if l := f.log.String(); l != "" {
			t.Errorf("successful requests were logged:\n%s", l)
		}
	})

	t.Run("Hidden", func(t *testing.T) {
		f := newFixture(t, fixtureConfig{})
		graphtest.RunJobs(t, f.g, 0)
		f.follow(1, 2)
		f.follow(2, 1)
		f.advance(1) // 05.124

		checkState(t, "deactivate", put(f, "1", `{"state": "deactivated"}`),
			`{"id": "1", "state": "deactivated", "since": "2026-11-30T15:04:05.124Z"}`)
		checkState(t, "deactivated", f.get("/v1/users/1/state"),
			`{"id": "1", "state": "deactivated", "since": "2026-11-30T15:04:05.124Z"}`)
		f.advance(1) // 05.125
		checkState(t, "deactivate again: nothing changes", put(f, "1", `{"state": "deactivated"}`),
			`{"id": "1", "state": "deactivated", "since": "2026-11-30T15:04:05.124Z"}`)
		checkJSON(t, "counts of a hidden user", f.get("/v1/users/1"),
			`{"id": "1", "following_count": 0, "follower_count": 0, "follow_requests_count": 0, "state": "deactivated"}`)
		checkState(t, "suspend", put(f, "1", `{"state": "suspended"}`),
			`{"id": "1", "state": "suspended", "since": "2026-11-30T15:04:05.125Z"}`)
		checkJSON(t, "counts of several, one suspended", f.get("/v1/users?ids=3,1"),
			`{"users": [
				{"id": "3", "following_count": 0, "follower_count": 0, "follow_requests_count": 0},
				{"id": "1", "following_count": 0, "follower_count": 0, "follow_requests_count": 0, "state": "suspended"}]}`)

		for _, r := range []struct {
			req    request
			status int
			code   string
		}{
			{request{method: "PUT", target: "/v1/users/1/following/3"}, 403, followgraph.EUserInactive},
			{request{method: "DELETE", target: "/v1/users/1/following/2"}, 403, followgraph.EUserInactive},
			{request{method: "PUT", target: "/v1/users/1/settings", body: []byte(`{"private": true}`)}, 403, followgraph.EUserInactive},
			{request{method: "PUT", target: "/v1/users/3/following/1"}, 409, followgraph.ETargetInactive},
		} {
			if a := f.do(r.req); a.status != r.status || a.errorCode() != r.code {
				t.Errorf("%s %s of a suspended user: %d %s, want %d %s", r.req.method, r.req.target, a.status, a.body, r.status, r.code)
			}
		}

		f.advance(1) // 05.126
		checkState(t, "delete", put(f, "1", `{"state": "deleted"}`),
			`{"id": "1", "state": "deleted", "since": "2026-11-30T15:04:05.126Z"}`)
		checkState(t, "delete again: 200, nothing changes", put(f, "1", `{"state": "deleted"}`),
			`{"id": "1", "state": "deleted", "since": "2026-11-30T15:04:05.126Z"}`)
		if a := put(f, "1", `{"state": "active"}`); a.status != 409 || a.errorCode() != followgraph.ETargetInactive {
			t.Errorf("reactivating a deleted user: %d %s, want 409 target_inactive", a.status, a.body)
		}
		if a := f.do(request{method: "PUT", target: "/v1/users/3/blocks/1"}); a.status != 409 || a.errorCode() != followgraph.ETargetInactive {
			t.Errorf("blocking a deleted user: %d %s, want 409 target_inactive", a.status, a.body)
		}
	})
}

// checkState compares an answer of the state routes with want, which has
// no "pending": the job runs meanwhile, so pending is only checked to be
// a count.
func checkState(tb testing.TB, what string, a answer, want string) {
	tb.Helper()
	var got map[string]any
	if a.status != http.StatusOK || json.Unmarshal(a.body, &got) != nil {
		tb.Errorf("%s: %d %s, want 200", what, a.status, a.body)
		return
	}
	if n, ok := got["pending"].(float64); !ok || n < 0 || n != float64(int64(n)) {
		tb.Errorf("%s: pending is %v, want a count", what, got["pending"])
	}
	delete(got, "pending")
	b, _ := json.Marshal(got)
	checkJSON(tb, what, answer{status: http.StatusOK, body: b}, want)
}

// TestServer_InactiveErrors checks the statuses of the two errors of
// account states, from an engine that returns them: 403 user_inactive and
// 409 target_inactive, on every route that can answer them, each an
// answer api/openapi.yaml lists (f.do checks it).
func TestServer_InactiveErrors(t *testing.T) {
	for _, tt := range []struct {
		err    error
		status int
		reqs   []request
	}{
		{followgraph.ErrUserInactive, http.StatusForbidden, []request{
			{method: "PUT", target: "/v1/users/1/following/2"},
			{method: "DELETE", target: "/v1/users/1/following/2"},
		}},
		{followgraph.ErrTargetInactive, http.StatusConflict, []request{
			{method: "PUT", target: "/v1/users/1/following/2"},
			{method: "DELETE", target: "/v1/users/1/following/2"},
			{method: "PUT", target: "/v1/users/1/state", body: []byte(`{"state": "active"}`)},
		}},
	} {
		code := followgraph.ErrorCode(tt.err)
		t.Run(code, func(t *testing.T) {
			f := newFixture(t, fixtureConfig{wrap: func(g followgraph.Graph) followgraph.Graph {
				return failing{Graph: g, err: tt.err}
			}})
			for _, r := range tt.reqs {
				a := f.do(r)
				if a.status != tt.status || a.errorCode() != code || a.errorMessage() != followgraph.ErrorMessage(tt.err) {
					t.Errorf("%s %s: %d %s, want %d %s", r.method, r.target, a.status, a.body, tt.status, code)
				}
			}
			if l := f.log.String(); l != "" {
				t.Errorf("a refused write was logged: %s", l)
			}
		})
	}
}
