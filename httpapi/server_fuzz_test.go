package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/memgraph"
)

// fuzzMethods are the methods FuzzServer sends, chosen by a fuzzed byte.
var fuzzMethods = []string{
	http.MethodGet, http.MethodPut, http.MethodDelete, http.MethodPost,
	http.MethodPatch, http.MethodHead, http.MethodOptions,
}

// fuzzRoutes are the routes of API.md, as path segments ("*" for an id)
// and the methods each takes. HEAD goes wherever GET does, as net/http
// answers it.
var fuzzRoutes = []struct {
	segments []string
	methods  []string
}{
	{[]string{"v1", "users", "*", "following", "*"}, []string{"GET", "HEAD", "PUT", "DELETE"}},
	{[]string{"v1", "users", "*"}, []string{"GET", "HEAD"}},
	{[]string{"v1", "users"}, []string{"GET", "HEAD"}},
	{[]string{"v1", "users", "*", "following"}, []string{"GET", "HEAD"}},
	{[]string{"v1", "users", "*", "followers"}, []string{"GET", "HEAD"}},
	{[]string{"v1", "users", "*", "relations"}, []string{"GET", "HEAD", "POST"}},
	{[]string{"v1", "users", "*", "mutuals"}, []string{"GET", "HEAD"}},
	{[]string{"v1", "users", "*", "common-following", "*"}, []string{"GET", "HEAD"}},
	{[]string{"v1", "users", "*", "common-followers", "*"}, []string{"GET", "HEAD"}},
	{[]string{"v1", "users", "*", "known-followers", "*"}, []string{"GET", "HEAD"}},
	{[]string{"v1", "users", "*", "suggestions"}, []string{"GET", "HEAD"}},
	{[]string{"v1", "users", "*", "blocks", "*"}, []string{"GET", "HEAD", "PUT", "DELETE"}},
	{[]string{"v1", "users", "*", "blocks"}, []string{"GET", "HEAD"}},
	{[]string{"v1", "users", "*", "mutes", "*"}, []string{"GET", "HEAD", "PUT", "DELETE"}},
	{[]string{"v1", "users", "*", "mutes"}, []string{"GET", "HEAD"}},
	{[]string{"v1", "users", "*", "settings"}, []string{"GET", "HEAD", "PUT"}},
	{[]string{"v1", "users", "*", "state"}, []string{"GET", "HEAD", "PUT"}},
	{[]string{"v1", "users", "*", "follow-requests"}, []string{"GET", "HEAD"}},
	{[]string{"v1", "users", "*", "follow-requests", "*"}, []string{"GET", "HEAD"}},
	{[]string{"v1", "users", "*", "followers", "*"}, []string{"PUT", "DELETE"}},
	{[]string{"healthz"}, []string{"GET", "HEAD"}},
	{[]string{"readyz"}, []string{"GET", "HEAD"}},
	{[]string{"metrics"}, []string{"GET", "HEAD"}},
}

// fuzzRouteOf returns the methods of the route that the escaped path p names,
// and whether it names one, independently of the server's mux. A path
// names a route only in canonical form: no empty, "." or ".." segment,
// no trailing slash. Segments are compared unescaped, as http.ServeMux
// does, so that /v1/%75sers/1 is /v1/users/1.
func fuzzRouteOf(p string) (methods []string, ok bool) {
	if !strings.HasPrefix(p, "/") {
		return nil, false
	}
	raw := strings.Split(p[1:], "/")
	segs := make([]string, len(raw))
	for i, s := range raw {
		if s == "" || s == "." || s == ".." {
			return nil, false
		}
		u, err := url.PathUnescape(s)
		if err != nil {
			return nil, false
		}
		segs[i] = u
	}
	for _, r := range fuzzRoutes {
		if len(r.segments) != len(segs) {
			continue
		}
		match := true
		for i, s := range r.segments {
			if s != "*" && s != segs[i] {
				match = false
				break
			}
		}
		if match {
			return r.methods, true
		}
	}
	return nil, false
}

// fuzzAPIStatus is API.md's table of error codes and their statuses.
var fuzzAPIStatus = map[string]int{
	"invalid_id":         400,
	"invalid_argument":   400,
	"invalid_cursor":     400,
	"self_follow":        400,
	"not_found":          404,
	"method_not_allowed": 405,
	"blocked":            403,
	"user_inactive":      403,
	"no_request":         404,
	"following_limit":    409,
	"target_inactive":    409,
	"too_large":          413,
	"rate_limited":       429,
	"unavailable":        503,
	"internal":           500,
}

// fuzzUsers are the users of FuzzServer's graph; 6 has no edges.
var fuzzUsers = []followgraph.UserID{1, 2, 3, 4, 5, 6}

// fuzzEdges are the follows of FuzzServer's graph, all made at t0.
var fuzzEdges = [][2]followgraph.UserID{{1, 2}, {2, 1}, {1, 3}, {3, 2}, {4, 1}, {2, 5}, {4, 2}, {5, 1}}

// fuzzPrint is a cheap fingerprint of a memgraph: its size, the counts
// of fuzzUsers, and their relations to each other and settings.
type fuzzPrint struct {
	stats  memgraph.Stats
	counts [6]followgraph.Counts
	links  string
}

func fuzzPrintOf(t testing.TB, g *memgraph.Graph) fuzzPrint {
	t.Helper()
	p := fuzzPrint{stats: g.Stats()}
	cs, err := g.Counts(context.Background(), fuzzUsers)
	if err != nil {
		t.Fatalf("Counts: %v", err)
	}
	copy(p.counts[:], cs)
	var b strings.Builder
	for _, u := range fuzzUsers {
		rels, err1 := g.Relations(context.Background(), u, fuzzUsers)
		st, err2 := g.Settings(context.Background(), u)
		if err := errors.Join(err1, err2); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%v %v\n", rels, st)
	}
	p.links = b.String()
	return p
}

// FuzzServer sends the Server, in front of a memgraph with a few users and
// edges and a clock that stands still, requests made of a fuzzed method,
// path, query string and body, straight to its handler. On every input:
//
//   - no panic, and no 5xx;
//   - Content-Type application/json and a body that is JSON, except the
//     200 of GET /metrics, which is Prometheus text;
//   - a status other than 200 is an error {"error": {"code": C,
//     "message": M}} with C one of API.md's codes, M not empty, and the
//     status the one API.md gives for C;
//   - a path that names no route (by fuzzRouteOf, which reads API.md on its
//     own) is 404 not_found; a route with a method it does not take is
//     405 method_not_allowed; a route with a method it takes is neither;
//     so a 200 is only for a method that the route takes;
//   - a request answered with an error leaves the graph as it was;
//   - after a 200 write is undone as its answer says (see fuzzUndoWrite),
//     the edges, counts, relations and settings are back to the start, so
//     that the answers of writes tell the truth, and every input starts
//     from the same graph.
func FuzzServer(f *testing.F) {
	fx := newFixture(f, fixtureConfig{})
	for _, e := range fuzzEdges {
		fx.follow(e[0], e[1])
	}
	h := fx.srv.Config.Handler
	g := fx.g
	start := fuzzPrintOf(f, g)

	// A cursor the server issued: the second page of 1's followers.
	var page struct {
		NextCursor *string `json:"next_cursor"`
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/v1/users/1/followers?limit=1", nil))
	if err := json.Unmarshal(w.Body.Bytes(), &page); err != nil || page.NextCursor == nil {
		f.Fatalf("GET /v1/users/1/followers?limit=1: %d %s: want a next_cursor", w.Code, w.Body.Bytes())
	}
	issued := url.QueryEscape(*page.NextCursor)
	forged := url.QueryEscape(followgraph.EncodeCursor("followers/2", followgraph.Key{Millis: t0.UnixMilli(), ID: 2}))

	const (
		get, put, del, post, patch, head, options = 0, 1, 2, 3, 4, 5, 6
	)
	for _, s := range []struct {
		method      byte
		path, query string
		body        string
	}{
		// Writes.
		{put, "/v1/users/1/following/4", "", ""},
		{put, "/v1/users/1/following/2", "", ""},
		{put, "/v1/users/3/following/3", "", ""},
		{put, "/v1/users/9223372036854775807/following/1", "", ""},
		{put, "/v1/users/9223372036854775808/following/1", "", ""},
		{del, "/v1/users/1/following/2", "", ""},
		{del, "/v1/users/6/following/1", "", ""},
		{del, "/v1/users/1/following/0", "", ""},
		{put, "/v1/users/1/following/../following/4", "", ""},
		{put, "/v1/users/1/following/4", "", `{"ids": ["2"]}`},
		// Reads.
		{get, "/v1/users/1/following/2", "", ""},
		{head, "/v1/users/2/following/6", "", ""},
		{get, "/v1/users/1", "", ""},
		{get, "/v1/users/007", "", ""},
		{get, "/v1/users", "ids=1,2,3,6", ""},
		{get, "/v1/users", "ids=1,,2", ""},
		{get, "/v1/users/1/following", "limit=1&viewer=2", ""},
		{get, "/v1/users/1/followers", "limit=1&cursor=" + issued, ""},
		{get, "/v1/users/1/followers", "cursor=" + forged, ""},
		{get, "/v1/users/1/followers", "limit=0", ""},
		{get, "/v1/users/1/following", "limit=1001&limit=2", ""},
		{get, "/v1/users/2/relations", "ids=1,2,3,4,2", ""},
		{get, "/v1/users/2/relations", "ids=%zz", ""},
		{post, "/v1/users/2/relations", "", `{"ids": ["1", "5", "6"]}`},
		{post, "/v1/users/2/relations", "", `{"ids": [1]}`},
		{post, "/v1/users/2/relations", "", `{"ids": ["1"]} x`},
		{get, "/v1/users/1/mutuals", "limit=1", ""},
		{get, "/v1/users/1/common-following/4", "", ""},
		{get, "/v1/users/1/common-followers/3", "cursor=garbage", ""},
		{get, "/v1/users/4/known-followers/2", "limit=5", ""},
		{get, "/v1/users/4/suggestions", "limit=20", ""},
		{get, "/v1/users/4/suggestions", "limit=-1", ""},
		// Blocks, mutes, settings and follow requests.
		{put, "/v1/users/1/blocks/2", "", ""},
		{del, "/v1/users/1/blocks/2", "", ""},
		{get, "/v1/users/1/blocks", "limit=1", ""},
		{put, "/v1/users/1/mutes/3", "", `{"duration_seconds": 60}`},
		{put, "/v1/users/1/mutes/3", "", `{"duration_ms": -1}`},
		{get, "/v1/users/1/mutes/3", "", ""},
		{put, "/v1/users/2/settings", "", `{"private": true}`},
		{get, "/v1/users/2/settings", "", ""},
		{get, "/v1/users/2/follow-requests", "cursor=" + issued, ""},
		{get, "/v1/users/2/follow-requests/1", "", ""},
		{put, "/v1/users/2/followers/6", "", ""},
		{del, "/v1/users/2/followers/1", "", ""},
		// Operations.
		{get, "/healthz", "", ""},
		{get, "/readyz", "", ""},
		{get, "/metrics", "", ""},
		{post, "/metrics", "", ""},
		// Routes that are not, and methods routes do not take.
		{patch, "/v1/users/1/following/2", "", ""},
		{options, "/v1/users/1/mutuals", "", ""},
		{post, "/v1/users/1", "", `{}`},
		{get, "/v1//users/1", "", ""},
		{get, "/v1/users/1/", "", ""},
		{get, "/v1/%75sers/1", "", ""},
		{get, "/v1/users/1%2F2", "", ""},
		{get, "/v1/users/%2e%2e/1", "", ""},
		{del, "/nothing", "", ""},
		{get, "/", "", ""},
	} {
		f.Add(s.method, s.path, s.query, []byte(s.body))
	}

	f.Fuzz(func(t *testing.T, m byte, path, rawQuery string, body []byte) {
		method := fuzzMethods[int(m)%len(fuzzMethods)]
		target := path
		if !strings.HasPrefix(target, "/") {
			target = "/" + target
		}
		if rawQuery != "" {
			target += "?" + rawQuery
		}
		req, err := http.NewRequest(method, "http://followgraph.test"+target, bytes.NewReader(body))
		if err != nil {
			t.Skip("not a request:", err)
		}
		what := method + " " + target
		if method == http.MethodPut && fuzzIsState(req.URL.EscapedPath()) {
			// A state cannot be undone as the other writes are (deleted
			// is final), and its job runs in the background: see
			// TestServer_States and TestConformance_States.
			t.Skip("PUT .../state is not fuzzed here")
		}

		before := fuzzPrintOf(t, g)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req) // a panic fails the test
		status, got := w.Code, w.Body.Bytes()
		if status >= 500 {
			t.Fatalf("%.300s: %d %.300s", what, status, got)
		}

		escaped := req.URL.EscapedPath()
		methods, isRoute := fuzzRouteOf(escaped)
		if isMetrics := status == http.StatusOK && fuzzIsMetrics(escaped); !isMetrics {
			if ct := w.Header().Get("Content-Type"); ct != "application/json" {
				t.Fatalf("%.300s: %d with Content-Type %q: %.300s", what, status, ct, got)
			}
			if !json.Valid(got) {
				t.Fatalf("%.300s: %d with a body that is not JSON: %q", what, status, got)
			}
		}

		var code string
		if status != http.StatusOK {
			code = fuzzErrorBody(t, what, status, got)
			if want, ok := fuzzAPIStatus[code]; !ok || want != status {
				t.Fatalf("%.300s: %d %s: API.md gives %s status %d", what, status, got, code, want)
			}
		}
		switch {
		case !isRoute:
			if code != "not_found" {
				t.Fatalf("%.300s: %d %.300s: the path names no route, want 404 not_found", what, status, got)
			}
		case !slices.Contains(methods, method):
			if code != "method_not_allowed" {
				t.Fatalf("%.300s: %d %.300s: the route takes %v, want 405 method_not_allowed", what, status, got, methods)
			}
		case code == "not_found" || code == "method_not_allowed":
			t.Fatalf("%.300s: %d %.300s: the route takes %s", what, status, got, method)
		}

		if status != http.StatusOK {
			if after := fuzzPrintOf(t, g); after != before {
				t.Fatalf("%.300s: %d %.300s changed the graph:\nbefore %+v\nafter  %+v", what, status, got, before, after)
			}
			return
		}
		fuzzUndoWrite(t, what, g, method, escaped, got)
		if after := fuzzPrintOf(t, g); after.stats.Edges != start.stats.Edges || after.counts != start.counts || after.links != start.links {
			t.Fatalf("%.300s: %d %.300s: after undoing what the answer says was done, the graph is not back to the start:\nstart %+v\nnow   %+v", what, status, got, start, after)
		}
	})
}

// fuzzIsState reports whether the escaped path p names the route of an
// account state, /v1/users/{user}/state.
func fuzzIsState(p string) bool {
	if _, ok := fuzzRouteOf(p); !ok {
		return false
	}
	last, err := url.PathUnescape(p[strings.LastIndex(p, "/")+1:])
	return err == nil && last == "state" && strings.Count(p, "/") == 4
}

// fuzzIsMetrics reports whether the escaped path p is /metrics, maybe
// spelled with escapes.
func fuzzIsMetrics(p string) bool {
	u, err := url.PathUnescape(p)
	return err == nil && u == "/metrics"
}

// fuzzErrorBody checks that body is exactly {"error": {"code": C, "message":
// M}} with strings C and M, M not empty, and returns C.
func fuzzErrorBody(t *testing.T, what string, status int, body []byte) string {
	t.Helper()
	var top map[string]json.RawMessage
	var e map[string]any
	if json.Unmarshal(body, &top) != nil || len(top) != 1 || top["error"] == nil ||
		json.Unmarshal(top["error"], &e) != nil || len(e) != 2 {
		t.Fatalf("%.300s: %d with a body that is not an error: %.300s", what, status, body)
	}
	code, ok1 := e["code"].(string)
	msg, ok2 := e["message"].(string)
	if !ok1 || !ok2 || msg == "" {
		t.Fatalf("%.300s: %d with a body that is not an error: %.300s", what, status, body)
	}
	return code
}

// fuzzUndoWrite undoes, in g, the write to the escaped path p that a 200
// answer body reports: a follow (or a follow request) that was created,
// with an unfollow; an unfollow or a removed follower that removed one,
// with a follow; a block that was created, with an unblock and the follows
// of fuzzEdges it ended; a mute that was created, with an unmute; an
// approval that created a follow, with its removal; a setting, with the
// account public again, as every account of the start is. Every edge of
// the fixture was made at t0, and the clock stands at t0.
func fuzzUndoWrite(t *testing.T, what string, g *memgraph.Graph, method, p string, body []byte) {
	t.Helper()
	if method != http.MethodPut && method != http.MethodDelete {
		return
	}
	var a struct {
		ID, User, Target, Follower string
		Created, Removed           bool
	}
	if err := json.Unmarshal(body, &a); err != nil {
		t.Fatalf("%.300s: 200 %.300s: %v", what, body, err)
	}
	unescaped, _ := url.PathUnescape(p) // a 200 is for a path fuzzRouteOf unescaped
	route := strings.Split(unescaped, "/")[4]
	if route == "settings" {
		a.User, a.Target = a.ID, a.ID
	}
	if route == "followers" {
		a.Target = a.Follower
	}
	user, err1 := followgraph.ParseUserID(a.User)
	target, err2 := followgraph.ParseUserID(a.Target)
	if err1 != nil || err2 != nil {
		t.Fatalf("%.300s: 200 %.300s: the answer does not name the user and the target", what, body)
	}
	ctx := context.Background()
	var err error
	switch {
	case route == "settings":
		_, err = g.SetPrivate(ctx, user, false)
	case route == "following" && method == http.MethodPut && a.Created:
		_, err = g.Unfollow(ctx, user, target)
	case route == "following" && method == http.MethodDelete && a.Removed:
		_, err = g.Follow(ctx, user, target)
	case route == "followers" && method == http.MethodPut && a.Created:
		_, err = g.RemoveFollower(ctx, user, target)
	case route == "followers" && method == http.MethodDelete && a.Removed:
		_, err = g.Follow(ctx, target, user)
	case route == "blocks" && method == http.MethodPut && a.Created:
		if _, err = g.Unblock(ctx, user, target); err != nil {
			break
		}
		for _, e := range fuzzEdges {
			if e == [2]followgraph.UserID{user, target} || e == [2]followgraph.UserID{target, user} {
				if _, err = g.Follow(ctx, e[0], e[1]); err != nil {
					break
				}
			}
		}
	case route == "mutes" && method == http.MethodPut && a.Created:
		_, err = g.Unmute(ctx, user, target)
	}
	if err != nil {
		t.Fatal(err)
	}
}
