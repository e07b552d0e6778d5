package client_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/client"
	"github.com/followgraph/followgraph/httpapi"
	"github.com/followgraph/followgraph/memgraph"
)

// t0 is the time of every follow made in a fixture: its graph's clock
// stands still there.
var t0 = time.Date(2026, time.November, 30, 15, 4, 5, 123e6, time.UTC)

// fixture is a real server, httpapi over a memgraph, served by httptest.
type fixture struct {
	tb  testing.TB
	g   *memgraph.Graph
	srv *httptest.Server
}

func newFixture(tb testing.TB, opts ...httpapi.Option) *fixture {
	tb.Helper()
	g := memgraph.New(memgraph.WithClock(func() time.Time { return t0 }))
	opts = append([]httpapi.Option{httpapi.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))}, opts...)
	srv := httptest.NewServer(httpapi.NewServer(g, opts...))
	tb.Cleanup(srv.Close)
	return &fixture{tb: tb, g: g, srv: srv}
}

// follow makes user follow target in the engine, not over HTTP.
func (f *fixture) follow(user, target followgraph.UserID) {
	f.tb.Helper()
	if _, err := f.g.Follow(context.Background(), user, target); err != nil {
		f.tb.Fatalf("Follow(%d, %d): %v", user, target, err)
	}
}

// methodRecorder is a RoundTripper that records the method of each request.
type methodRecorder struct {
	mu      sync.Mutex
	methods []string
	next    http.RoundTripper
}

func (m *methodRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	m.mu.Lock()
	m.methods = append(m.methods, req.Method+" "+req.URL.Path)
	m.mu.Unlock()
	return m.next.RoundTrip(req)
}

// client returns a Client of the fixture's server, and a record of its
// requests.
func (f *fixture) client() (*client.Client, *methodRecorder) {
	rec := &methodRecorder{next: f.srv.Client().Transport}
	return client.New(f.srv.URL+"/", client.WithHTTPClient(&http.Client{Transport: rec})), rec
}

func TestClient_Relations(t *testing.T) {
	f := newFixture(t)
	f.follow(1, 2)
	c, rec := f.client()
	for _, tt := range []struct {
		n      int
		method string
	}{
		{0, "GET"},
		{1, "GET"},
		{1000, "GET"},
		{1001, "POST"},
		{followgraph.MaxRelationIDs, "POST"},
	} {
		ids := make([]followgraph.UserID, tt.n)
		for i := range ids {
			ids[i] = followgraph.UserID(i + 2)
		}
		rec.methods = nil
		rels, err := c.Relations(t.Context(), 1, ids)
		if err != nil || len(rels) != tt.n {
			t.Errorf("Relations of %d ids: %d relations, %v", tt.n, len(rels), err)
			continue
		}
		if want := tt.method + " /v1/users/1/relations"; len(rec.methods) != 1 || rec.methods[0] != want {
			t.Errorf("Relations of %d ids sent %v, want %s", tt.n, rec.methods, want)
		}
		if tt.n > 0 && (rels[0].ID != 2 || rels[0].Relation != followgraph.RelationFollowing || !rels[0].FollowingSince.Equal(t0)) {
			t.Errorf("Relations of %d ids: the first is %+v", tt.n, rels[0])
		}
	}
}

func TestClient_Counts(t *testing.T) {
	f := newFixture(t)
	f.follow(1, 2)
	c, rec := f.client()
	for _, tt := range []struct {
		ids  []followgraph.UserID
		sent string
		want []followgraph.Counts
	}{
		{nil, "GET /v1/users", []followgraph.Counts{}},
		{[]followgraph.UserID{2}, "GET /v1/users/2", []followgraph.Counts{{ID: 2, FollowerCount: 1}}},
		{[]followgraph.UserID{1, 2}, "GET /v1/users", []followgraph.Counts{{ID: 1, FollowingCount: 1}, {ID: 2, FollowerCount: 1}}},
	} {
		rec.methods = nil
		got, err := c.Counts(t.Context(), tt.ids)
		if err != nil || len(got) != len(tt.want) || (len(got) > 0 && got[len(got)-1] != tt.want[len(got)-1]) {
			t.Errorf("Counts(%v) = %v, %v; want %v", tt.ids, got, err, tt.want)
		}
		if len(rec.methods) != 1 || rec.methods[0] != tt.sent {
			t.Errorf("Counts(%v) sent %v, want %s", tt.ids, rec.methods, tt.sent)
		}
	}
}

// TestClient_ServerErrors checks that the server's errors come back as
// *followgraph.Error with the server's code and message.
func TestClient_ServerErrors(t *testing.T) {
	f := newFixture(t, httpapi.WithWriteRate(0.001, 1))
	c, _ := f.client()
	ctx := t.Context()

	_, err := c.Follow(ctx, 1, 1)
	var e *followgraph.Error
	if !errors.As(err, &e) || e.Code != followgraph.ESelfFollow || e.Message != followgraph.ErrSelfFollow.Message {
		t.Errorf("Follow(1, 1): %v, want %v", err, followgraph.ErrSelfFollow)
	}
	if _, err := c.Follow(ctx, 1, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Unfollow(ctx, 1, 2); followgraph.ErrorCode(err) != followgraph.ERateLimited {
		t.Errorf("a write over the rate: %v, want code %s", err, followgraph.ERateLimited)
	}
	if _, err := c.Followers(ctx, 1, followgraph.PageRequest{Cursor: "nope"}); followgraph.ErrorCode(err) != followgraph.EInvalidCursor {
		t.Errorf("Followers with a bad cursor: %v, want code %s", err, followgraph.EInvalidCursor)
	}
}

func TestClient_Unreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	c := client.New("http://" + addr)
	_, err = c.Follow(t.Context(), 1, 2)
	var op *net.OpError
	if followgraph.ErrorCode(err) != followgraph.EUnavailable || !errors.As(err, &op) {
		t.Errorf("Follow with no server: %v, want code unavailable wrapping a *net.OpError", err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	f := newFixture(t)
	c, _ = f.client()
	_, err = c.Followers(ctx, 1, followgraph.PageRequest{})
	if followgraph.ErrorCode(err) != followgraph.EUnavailable || !errors.Is(err, context.Canceled) {
		t.Errorf("Followers with a canceled context: %v, want code unavailable wrapping context.Canceled", err)
	}
}

// TestClient_NotOurServer checks the answers of something that is not a
// followgraph server, such as a proxy in between.
func TestClient_NotOurServer(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   string
		code   string
	}{
		{"BadGateway", 502, "<html>bad gateway</html>", followgraph.EUnavailable},
		{"ServiceUnavailable", 503, "", followgraph.EUnavailable},
		{"GatewayTimeout", 504, "timeout", followgraph.EUnavailable},
		{"TooManyRequests", 429, "slow down", followgraph.ERateLimited},
		{"InternalServerError", 500, "oops", followgraph.EInternal},
		{"NotFound", 404, "404 page not found", followgraph.EInternal},
		{"OtherErrorShape", 400, `{"error": "bad"}`, followgraph.EInternal},
		{"GarbageOK", 200, "not json", followgraph.EInternal},
		{"WrongOK", 200, `{"users": [{"id": 7, "since": "yesterday"}], "next_cursor": null}`, followgraph.EInternal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tt.status)
				w.Write([]byte(tt.body))
			}))
			defer srv.Close()
			c := client.New(srv.URL, client.WithHTTPClient(srv.Client()))
			_, err := c.Followers(t.Context(), 1, followgraph.PageRequest{})
			if followgraph.ErrorCode(err) != tt.code {
				t.Errorf("%d %q: %v (code %q), want code %q", tt.status, tt.body, err, followgraph.ErrorCode(err), tt.code)
			}
		})
	}
}

// TestClient_Viewer checks that a list asked for with a viewer comes back
// with the viewer's relation to each user, from a real server: users 1 to
// 6 follow 9 and are followed by 8, and the viewer 1 stands to each in
// another relation.
func TestClient_Viewer(t *testing.T) {
	f := newFixture(t)
	for _, u := range []followgraph.UserID{1, 2, 3, 4, 6} {
		f.follow(u, 9)
		f.follow(8, u)
	}
	f.follow(1, 2) // following
	f.follow(3, 1) // follower
	f.follow(1, 4) // mutual
	f.follow(4, 1)
	c, _ := f.client()
	ctx := t.Context()

	// Every follow is at t0, so the lists are ordered by id, larger first.
	want := []client.ListEntry{
		{ID: 6, Since: t0, Relation: followgraph.RelationNone},
		{ID: 4, Since: t0, Relation: followgraph.RelationMutual},
		{ID: 3, Since: t0, Relation: followgraph.RelationFollower},
		{ID: 2, Since: t0, Relation: followgraph.RelationFollowing},
		{ID: 1, Since: t0, Relation: followgraph.RelationSelf},
	}
	for _, tt := range []struct {
		name string
		list func(context.Context, followgraph.UserID, client.ListRequest) (client.ListPage, error)
		user followgraph.UserID
	}{
		{"Followers", c.ListFollowers, 9},
		{"Following", c.ListFollowing, 8},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := tt.list(ctx, tt.user, client.ListRequest{Viewer: 1})
			if err != nil || !slices.EqualFunc(p.Entries, want, sameEntry) || p.Next != "" {
				t.Errorf("the list of %d viewed by 1 = %+v, %v; want %+v", tt.user, p, err, want)
			}

			// Paging keeps the viewer: the second page has the relations too.
			var got []client.ListEntry
			req := client.ListRequest{Limit: 2, Viewer: 1}
			for {
				p, err := tt.list(ctx, tt.user, req)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, p.Entries...)
				if req.Cursor = p.Next; req.Cursor == "" {
					break
				}
			}
			if !slices.EqualFunc(got, want, sameEntry) {
				t.Errorf("the list of %d viewed by 1, 2 a page = %+v; want %+v", tt.user, got, want)
			}

			p, err = tt.list(ctx, tt.user, client.ListRequest{})
			if err != nil || len(p.Entries) != len(want) {
				t.Fatalf("the list of %d with no viewer = %+v, %v", tt.user, p, err)
			}
			for _, e := range p.Entries {
				if e.Relation != "" {
					t.Errorf("the list of %d with no viewer has relation %q for %d, want none", tt.user, e.Relation, e.ID)
				}
			}

			_, err = tt.list(ctx, tt.user, client.ListRequest{Viewer: -1})
			if followgraph.ErrorCode(err) != followgraph.EInvalidID {
				t.Errorf("the list of %d viewed by -1: %v, want code %s", tt.user, err, followgraph.EInvalidID)
			}
		})
	}

	t.Run("NoRelationInAnswer", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte(`{"users": [{"id": "2", "since": "2026-11-30T15:04:05.123Z"}], "next_cursor": null}`))
		}))
		defer srv.Close()
		c := client.New(srv.URL, client.WithHTTPClient(srv.Client()))
		if _, err := c.ListFollowers(ctx, 1, client.ListRequest{}); err != nil {
			t.Errorf("an entry without relation, asked for with no viewer: %v", err)
		}
		if _, err := c.ListFollowers(ctx, 1, client.ListRequest{Viewer: 3}); followgraph.ErrorCode(err) != followgraph.EInternal {
			t.Errorf("an entry without relation, asked for with a viewer: %v, want code %s", err, followgraph.EInternal)
		}
	})
}

func sameEntry(a, b client.ListEntry) bool {
	if !a.Since.Equal(b.Since) {
		return false
	}
	a.Since = b.Since
	return a == b
}

// TestClient_ViewerFlags checks that the flags of blocks, mutes and
// requests come back in list entries and relations: 1 to 6 follow 9,
// then 1 mutes 2, 3 asks to follow 1, 1 asks to follow 4, 5 blocks 1 and 1
// blocks 6, which leaves the follows of 9 as they are.
func TestClient_ViewerFlags(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	for u := followgraph.UserID(1); u <= 6; u++ {
		f.follow(u, 9)
	}
	c, _ := f.client()
	for _, step := range []func() error{
		func() error { _, err := c.Mute(ctx, 1, 2, 0); return err },
		func() error { _, err := c.SetPrivate(ctx, 1, true); return err },
		func() error { _, err := c.SetPrivate(ctx, 4, true); return err },
		func() error { _, err := c.Follow(ctx, 3, 1); return err },
		func() error { _, err := c.Follow(ctx, 1, 4); return err },
		func() error { _, err := c.Block(ctx, 5, 1); return err },
		func() error { _, err := c.Block(ctx, 1, 6); return err },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	want := []client.ListEntry{
		{ID: 6, Since: t0, Relation: followgraph.RelationNone, Blocking: true},
		{ID: 5, Since: t0, Relation: followgraph.RelationNone, BlockedBy: true},
		{ID: 4, Since: t0, Relation: followgraph.RelationNone, Requested: true},
		{ID: 3, Since: t0, Relation: followgraph.RelationNone, RequestedBy: true},
		{ID: 2, Since: t0, Relation: followgraph.RelationNone, Muting: true},
		{ID: 1, Since: t0, Relation: followgraph.RelationSelf},
	}
	p, err := c.ListFollowers(ctx, 9, client.ListRequest{Viewer: 1})
	if err != nil || !slices.EqualFunc(p.Entries, want, sameEntry) {
		t.Errorf("the followers of 9 viewed by 1 = %+v, %v; want %+v", p.Entries, err, want)
	}
	ids := make([]followgraph.UserID, len(want))
	for i, e := range want {
		ids[i] = e.ID
	}
	rels, err := c.Relations(ctx, 1, ids)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rels {
		w := want[i]
		if r.ID != w.ID || r.Relation != w.Relation || r.Blocking != w.Blocking || r.BlockedBy != w.BlockedBy ||
			r.Muting != w.Muting || r.Requested != w.Requested || r.RequestedBy != w.RequestedBy {
			t.Errorf("relation %d = %+v, want the flags of %+v", i, r, w)
		}
	}
}

// TestClient_Mute checks the body each duration is sent with: whole
// seconds as duration_seconds, milliseconds as duration_ms, none for 0;
// a duration finer than a millisecond is refused before any request.
func TestClient_Mute(t *testing.T) {
	f := newFixture(t)
	c, rec := f.client()
	ctx := t.Context()
	for _, tt := range []struct {
		d       time.Duration
		expires time.Time // zero: none
		code    string
	}{
		{0, time.Time{}, ""},
		{time.Hour, t0.Add(time.Hour), ""},
		{1500 * time.Millisecond, t0.Add(1500 * time.Millisecond), ""},
		{-time.Second, time.Time{}, followgraph.EInvalidArgument},
		{followgraph.MaxMute + time.Millisecond, time.Time{}, followgraph.EInvalidArgument},
		{time.Microsecond, time.Time{}, followgraph.EInvalidArgument},
	} {
		rec.methods = nil
		res, err := c.Mute(ctx, 1, 2, tt.d)
		if followgraph.ErrorCode(err) != tt.code || err == nil && !res.Expires.Equal(tt.expires) {
			t.Errorf("Mute(1, 2, %s) = %+v, %v; want expiry %s, code %q", tt.d, res, err, tt.expires, tt.code)
		}
		if sent := len(rec.methods) == 1; sent != (tt.d%time.Millisecond == 0) {
			t.Errorf("Mute(1, 2, %s) sent %v", tt.d, rec.methods)
		}
	}
}

// TestClient_Refused checks the calls the client refuses itself, with
// code invalid_argument and no request: a Link of a kind the API has no
// route for, and a list it does not have.
func TestClient_Refused(t *testing.T) {
	f := newFixture(t)
	c, rec := f.client()
	ctx := t.Context()
	for _, tt := range []struct {
		what string
		err  error
	}{
		{"Link(follow)", second(c.Link(ctx, followgraph.KindFollow, 1, 2))},
		{"Link(private)", second(c.Link(ctx, followgraph.KindPrivate, 1, 2))},
		{"Links(following)", second(c.Links(ctx, followgraph.ListFollowing, 1, followgraph.PageRequest{}))},
		{"Links(nope)", second(c.Links(ctx, "nope", 1, followgraph.PageRequest{}))},
	} {
		if followgraph.ErrorCode(tt.err) != followgraph.EInvalidArgument {
			t.Errorf("%s: %v, want code %s", tt.what, tt.err, followgraph.EInvalidArgument)
		}
	}
	if len(rec.methods) != 0 {
		t.Errorf("refused calls sent %v", rec.methods)
	}
}

func second[T any](_ T, err error) error { return err }
