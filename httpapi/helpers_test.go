package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/httpapi"
	"github.com/followgraph/followgraph/memgraph"
)

// t0 is where the clock of a fixture starts: on a millisecond, so that the
// times in answers can be written out.
var t0 = time.Date(2026, time.November, 30, 15, 4, 5, 123e6, time.UTC)

// fixture is a Server in front of a memgraph, served by httptest, with a
// clock that stands still until moved and a log that the test can read.
type fixture struct {
	tb    testing.TB
	g     *memgraph.Graph
	srv   *httptest.Server
	log   *syncBuffer
	mu    sync.Mutex
	now   time.Time
	graph followgraph.Graph // what the server serves: g, or a wrapper of it
}

type fixtureConfig struct {
	maxFollowing int
	wrap         func(followgraph.Graph) followgraph.Graph
	opts         []httpapi.Option
}

func newFixture(tb testing.TB, cfg fixtureConfig) *fixture {
	tb.Helper()
	f := &fixture{tb: tb, log: &syncBuffer{}, now: t0}
	f.g = memgraph.New(memgraph.WithClock(f.clock), memgraph.WithMaxFollowing(cfg.maxFollowing))
	f.graph = f.g
	if cfg.wrap != nil {
		f.graph = cfg.wrap(f.g)
	}
	logger := slog.New(slog.NewTextHandler(f.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	opts := append([]httpapi.Option{httpapi.WithLogger(logger)}, cfg.opts...)
	f.srv = httptest.NewServer(httpapi.NewServer(f.graph, opts...))
	tb.Cleanup(f.srv.Close)
	return f
}

func (f *fixture) clock() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// advance moves the clock forward by ms milliseconds.
func (f *fixture) advance(ms int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(time.Duration(ms) * time.Millisecond)
}

// follow makes user follow target in the engine, not over HTTP.
func (f *fixture) follow(user, target followgraph.UserID) {
	f.tb.Helper()
	if _, err := f.g.Follow(context.Background(), user, target); err != nil {
		f.tb.Fatalf("Follow(%d, %d): %v", user, target, err)
	}
}

// setPrivate makes user's account private in the engine, not over HTTP.
func (f *fixture) setPrivate(user followgraph.UserID) {
	f.tb.Helper()
	if _, err := f.g.SetPrivate(context.Background(), user, true); err != nil {
		f.tb.Fatalf("SetPrivate(%d, true): %v", user, err)
	}
}

// state describes the counts, the lists and the settings of ids in the
// engine, to compare before and after something that must change nothing.
func (f *fixture) state(ids ...followgraph.UserID) string {
	f.tb.Helper()
	ctx := context.Background()
	var b strings.Builder
	cs, err := f.g.Counts(ctx, ids)
	if err != nil {
		f.tb.Fatal(err)
	}
	fmt.Fprintf(&b, "%v\n", cs)
	for _, id := range ids {
		for _, read := range []func(context.Context, followgraph.UserID, followgraph.PageRequest) (followgraph.Page, error){f.g.Following, f.g.Followers} {
			p, err := read(ctx, id, followgraph.PageRequest{Limit: followgraph.MaxLimit})
			if err != nil {
				f.tb.Fatal(err)
			}
			fmt.Fprintf(&b, "%d: %v\n", id, p.Entries)
		}
		for _, list := range []string{followgraph.ListBlocks, followgraph.ListMutes, followgraph.ListFollowRequests} {
			p, err := f.g.Links(ctx, list, id, followgraph.PageRequest{Limit: followgraph.MaxLimit})
			if err != nil {
				f.tb.Fatal(err)
			}
			fmt.Fprintf(&b, "%d %s: %v\n", id, list, p.Entries)
		}
		st, err := f.g.Settings(ctx, id)
		if err != nil {
			f.tb.Fatal(err)
		}
		fmt.Fprintf(&b, "%+v\n", st)
	}
	return b.String()
}

// answer is a server's answer to one request.
type answer struct {
	status int
	header http.Header
	body   []byte
	verdict
}

// errorCode returns the code of an error body, "" for any other.
func (a answer) errorCode() string {
	var e struct {
		Error struct{ Code, Message string }
	}
	json.Unmarshal(a.body, &e)
	return e.Error.Code
}

func (a answer) errorMessage() string {
	var e struct {
		Error struct{ Code, Message string }
	}
	json.Unmarshal(a.body, &e)
	return e.Error.Message
}

// request is a raw request to a fixture.
type request struct {
	method, target string
	body           []byte
	chunked        bool // send the body without a Content-Length
}

// do sends r to the fixture's server, checks the exchange against
// api/openapi.yaml, and returns the answer. Every answer must have
// Content-Type application/json.
func (f *fixture) do(r request) answer {
	f.tb.Helper()
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
		if r.chunked {
			body = io.MultiReader(body) // hides the length
		}
	}
	req, err := http.NewRequest(r.method, f.srv.URL+r.target, body)
	if err != nil {
		f.tb.Fatal(err)
	}
	if r.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := f.srv.Client().Do(req)
	if err != nil {
		f.tb.Fatalf("%s %s: %v", r.method, r.target, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		f.tb.Fatalf("%s %s: reading the answer: %v", r.method, r.target, err)
	}
	a := answer{status: resp.StatusCode, header: resp.Header, body: data}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		f.tb.Errorf("%s %s: Content-Type %q, want application/json", r.method, r.target, ct)
	}
	a.verdict, err = specOf(f.tb).check(context.Background(), req, r.body, resp.StatusCode, resp.Header, data)
	if err != nil {
		f.tb.Error(err)
	}
	return a
}

func (f *fixture) get(target string) answer {
	f.tb.Helper()
	return f.do(request{method: http.MethodGet, target: target})
}

// checkJSON compares a 200 answer with the JSON want, as values: field
// names, strings against numbers, null against absent. A next_cursor that
// is a string is compared as "<cursor>", and returned.
func checkJSON(tb testing.TB, what string, a answer, want string) (cursor string) {
	tb.Helper()
	if a.status != http.StatusOK {
		tb.Errorf("%s: %d %s, want 200", what, a.status, a.body)
		return ""
	}
	got, err := decodeJSON(a.body)
	if err != nil {
		tb.Errorf("%s: %v", what, err)
		return ""
	}
	if m, ok := got.(map[string]any); ok {
		if c, ok := m["next_cursor"].(string); ok {
			cursor = c
			m["next_cursor"] = "<cursor>"
		}
	}
	w, err := decodeJSON([]byte(want))
	if err != nil {
		tb.Fatalf("%s: the wanted JSON: %v", what, err)
	}
	if !reflect.DeepEqual(got, w) {
		tb.Errorf("%s:\n got %s\nwant %s", what, a.body, want)
	}
	return cursor
}

func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%q is not JSON: %w", b, err)
	}
	return v, nil
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// testLogger returns a logger that writes to tb's log.
func testLogger(tb testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(tbWriter{tb}, nil))
}

type tbWriter struct{ tb testing.TB }

func (w tbWriter) Write(p []byte) (int, error) {
	w.tb.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
