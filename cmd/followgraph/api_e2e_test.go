package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	fg "github.com/followgraph/followgraph"
)

// TestServe_API drives every endpoint of docs/API.md and every error code the
// binary can produce against the real process on a random port with a temp
// data folder: the statuses, the JSON error bodies, paging, viewer
// relations, set queries. (httpapi's tests check every exchange of the
// conformance suite against api/openapi.yaml; this checks that the binary
// wires the same server.)
func TestServe_API(t *testing.T) {
	s := start(t, t.TempDir(), "--max-following", "50", "--write-rate", "1000", "--write-burst", "1000")
	ctx := context.Background()
	c := s.client
	// 1..30 follow 100; 100 follows 1..10; 1 follows 2..5.
	for u := fg.UserID(1); u <= 30; u++ {
		if _, err := c.Follow(ctx, u, 100); err != nil {
			t.Fatal(err)
		}
	}
	for u := fg.UserID(1); u <= 10; u++ {
		if _, err := c.Follow(ctx, 100, u); err != nil {
			t.Fatal(err)
		}
	}
	for u := fg.UserID(2); u <= 5; u++ {
		if _, err := c.Follow(ctx, 1, u); err != nil {
			t.Fatal(err)
		}
	}
	// Paging through all 30 followers of 100, 7 at a time, with a viewer.
	seen := map[string]bool{}
	cursor := ""
	for pages := 0; ; pages++ {
		var p struct {
			Users []struct {
				ID       string `json:"id"`
				Since    string `json:"since"`
				Relation string `json:"relation"`
			} `json:"users"`
			Next *string `json:"next_cursor"`
		}
		s.getJSON(t, "/v1/users/100/followers?limit=7&viewer=100&cursor="+cursor, http.StatusOK, &p)
		for _, u := range p.Users {
			if seen[u.ID] {
				t.Fatalf("follower %s on two pages", u.ID)
			}
			seen[u.ID] = true
			if u.Relation == "" || u.Since == "" {
				t.Fatalf("follower %+v without relation or since", u)
			}
		}
		if p.Next == nil {
			break
		}
		cursor = *p.Next
	}
	if len(seen) != 30 {
		t.Fatalf("paged %d followers of 30", len(seen))
	}
	var mutuals struct {
		Count int64 `json:"count"`
	}
	s.getJSON(t, "/v1/users/100/mutuals", http.StatusOK, &mutuals)
	if mutuals.Count != 10 {
		t.Fatalf("100 has %d mutuals, want 10", mutuals.Count)
	}
	for _, path := range []string{
		"/v1/users/1/following/2", "/v1/users/1", "/v1/users?ids=1,2,100", "/v1/users/1/following",
		"/v1/users/1/relations?ids=2,100,1,7", "/v1/users/2/common-following/3", "/v1/users/2/common-followers/3",
		"/v1/users/1/known-followers/100", "/v1/users/7/suggestions?limit=5", "/healthz", "/readyz",
	} {
		s.getJSON(t, path, http.StatusOK, nil)
	}
	s.do(t, http.MethodPost, "/v1/users/1/relations", `{"ids":["2","3"]}`, http.StatusOK, "")
	s.do(t, http.MethodDelete, "/v1/users/1/following/2", "", http.StatusOK, "")

	for u := fg.UserID(200); u < 246; u++ { // 1 now follows 100, 3, 4, 5; 46 more make 50, the limit
		if _, err := c.Follow(ctx, 1, u); err != nil {
			t.Fatal(err)
		}
	}
	errs := []struct {
		method, path, body string
		status             int
		code               string
	}{
		{"GET", "/v1/users/abc", "", 400, fg.EInvalidID},
		{"GET", "/v1/users/0", "", 400, fg.EInvalidID},
		{"GET", "/v1/users/9223372036854775808", "", 400, fg.EInvalidID},
		{"GET", "/v1/users?ids=1,x", "", 400, fg.EInvalidID},
		{"GET", "/v1/users/1/followers?limit=0", "", 400, fg.EInvalidArgument},
		{"GET", "/v1/users/1/followers?limit=1001", "", 400, fg.EInvalidArgument},
		{"GET", "/v1/users/1/followers?cursor=bogus", "", 400, fg.EInvalidCursor},
		{"POST", "/v1/users/1/relations", `{"ids":[2]}`, 400, fg.EInvalidID},
		{"POST", "/v1/users/1/relations", `{"ids":`, 400, fg.EInvalidArgument},
		{"POST", "/v1/users/1/relations", `{"ids":["` + strings.Repeat("1", 2<<20) + `"]}`, 413, fg.ETooLarge},
		{"PUT", "/v1/users/5/following/5", "", 400, fg.ESelfFollow},
		{"PUT", "/v1/users/1/following/999", "", 409, fg.EFollowingLimit},
		{"GET", "/v1/nothing", "", 404, fg.ENotFound},
		{"PATCH", "/v1/users/1", "", 405, fg.EMethodNotAllowed},
	}
	for _, e := range errs {
		s.do(t, e.method, e.path, e.body, e.status, e.code)
	}
	// None of the refused writes changed anything (5 follows only 100).
	counts, err := c.Counts(ctx, []fg.UserID{1, 5, 999})
	if err != nil {
		t.Fatal(err)
	}
	if counts[0].FollowingCount != 50 || counts[1].FollowingCount != 1 || counts[2].FollowerCount != 0 {
		t.Fatalf("refused writes changed counts: %+v", counts)
	}
	s.stop(t)
}

func (s *server) getJSON(tb testing.TB, path string, status int, out any) {
	tb.Helper()
	body := s.do(tb, http.MethodGet, path, "", status, "")
	if out != nil {
		if err := json.Unmarshal(body, out); err != nil {
			tb.Fatalf("GET %s: %v in %s", path, err, body)
		}
	}
}

// do sends a request and checks the status, that the answer is JSON, and
// for errors the code.
func (s *server) do(tb testing.TB, method, path, body string, status int, code string) []byte {
	tb.Helper()
	req, err := http.NewRequest(method, s.url+path, bytes.NewReader([]byte(body)))
	if err != nil {
		tb.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != status || resp.Header.Get("Content-Type") != "application/json" {
		tb.Fatalf("%s %s: %d %q %s, want %d JSON", method, path, resp.StatusCode, resp.Header.Get("Content-Type"), b, status)
	}
	if code != "" {
		var e struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		if err := json.Unmarshal(b, &e); err != nil || e.Error.Code != code || e.Error.Message == "" {
			tb.Fatalf("%s %s: body %s, want error code %s", method, path, b, code)
		}
	}
	return b
}
