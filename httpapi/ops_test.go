package httpapi_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/httpapi"
)

func TestServer_Healthz(t *testing.T) {
	f := newFixture(t, fixtureConfig{opts: []httpapi.Option{
		httpapi.WithReadiness("redis", func(context.Context) error { return errors.New("down") }),
	}})
	// Health says the process serves, whatever its backends.
	checkJSON(t, "healthz", f.get("/healthz"), `{"status": "ok"}`)
}

func TestServer_Readyz(t *testing.T) {
	ok := func(context.Context) error { return nil }
	down := func(context.Context) error { return errors.New("dial tcp 10.0.0.7:4222: connection refused") }
	slow := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
	tests := []struct {
		name    string
		checks  map[string]func(context.Context) error
		order   []string
		status  int
		message string
	}{
		{"NoChecks", nil, nil, 200, ""},
		{"AllReady", map[string]func(context.Context) error{"nats": ok, "sqlite": ok}, []string{"nats", "sqlite"}, 200, ""},
		{"OneDown", map[string]func(context.Context) error{"nats": down, "sqlite": ok}, []string{"nats", "sqlite"}, 503, "not ready: nats"},
		{"TwoDown", map[string]func(context.Context) error{"redis": down, "nats": ok, "postgres": down}, []string{"redis", "nats", "postgres"}, 503, "not ready: redis, postgres"},
		{"Hangs", map[string]func(context.Context) error{"redis": slow, "nats": ok}, []string{"redis", "nats"}, 503, "not ready: redis"},
		{"Degraded", map[string]func(context.Context) error{"nats": ok, "store": down}, []string{"nats", "store"}, 200, ""},
		{"DownAndDegraded", map[string]func(context.Context) error{"nats": down, "store": down}, []string{"nats", "store"}, 503, "not ready: nats"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var opts []httpapi.Option
			for _, name := range tt.order {
				if name == "store" { // the one backend whose loss is ridden out
					opts = append(opts, httpapi.WithDegradable(name, tt.checks[name]))
				} else {
					opts = append(opts, httpapi.WithReadiness(name, tt.checks[name]))
				}
			}
			f := newFixture(t, fixtureConfig{opts: opts})
			start := time.Now()
			a := f.get("/readyz")
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("readyz took %v", d)
			}
			if tt.status == 200 {
				want := `{"status": "ready"}`
				if tt.checks["store"] != nil {
					want = `{"status": "ready", "degraded": ["store"]}`
				}
				checkJSON(t, "readyz", a, want)
				return
			}
			if a.status != tt.status || a.errorCode() != "unavailable" || a.errorMessage() != tt.message {
				t.Errorf("readyz: %d %s, want %d unavailable %q", a.status, a.body, tt.status, tt.message)
			}
			if strings.Contains(string(a.body), "10.0.0.7") {
				t.Errorf("readyz tells the cause: %s", a.body)
			}
			if !strings.Contains(f.log.String(), "connection refused") && tt.name != "Hangs" {
				t.Errorf("the cause is not logged:\n%s", f.log.String())
			}
		})
	}
}

// TestServer_ReadyzLogs: a backend that stops answering is logged once,
// at warning level, however often /readyz is polled, and once more when
// it answers again; while the gate holds the API back (the service is
// starting), a backend that does not answer yet is not logged at all.
func TestServer_ReadyzLogs(t *testing.T) {
	var starting, down atomic.Bool
	starting.Store(true)
	down.Store(true)
	f := newFixture(t, fixtureConfig{opts: []httpapi.Option{
		httpapi.WithGate(func() error {
			if starting.Load() {
				return &fg.Error{Code: fg.EUnavailable, Message: "the graph is still loading"}
			}
			return nil
		}),
		httpapi.WithReadiness("redis", func(context.Context) error {
			if down.Load() {
				return errors.New("rebuilding")
			}
			return nil
		}),
	}})
	poll := func(status int) {
		t.Helper()
		for range 3 {
			if a := f.get("/readyz"); a.status != status {
				t.Fatalf("/readyz: %d %s, want %d", a.status, a.body, status)
			}
		}
	}
	poll(503)
	if out := f.log.String(); strings.Contains(out, "level=WARN") {
		t.Errorf("a backend not answering yet while starting was logged as a warning:\n%s", out)
	}
	starting.Store(false)
	poll(503)
	if n := strings.Count(f.log.String(), "level=WARN"); n != 1 || !strings.Contains(f.log.String(), "rebuilding") {
		t.Errorf("a backend still down once started: %d warnings, want 1 with the cause:\n%s", n, f.log)
	}
	down.Store(false)
	poll(200)
	if n := strings.Count(f.log.String(), "backend answering again"); n != 1 {
		t.Errorf("a backend answering again: logged %d times, want 1:\n%s", n, f.log)
	}
}

// TestServer_ReadyzGateOpensDuringCheck: a check that began while the
// service was starting and failed because of it is not logged when the
// gate opens before the check returns: the failure describes the start,
// not a backend that stopped answering.
func TestServer_ReadyzGateOpensDuringCheck(t *testing.T) {
	var starting atomic.Bool
	starting.Store(true)
	f := newFixture(t, fixtureConfig{opts: []httpapi.Option{
		httpapi.WithGate(func() error {
			if starting.Load() {
				return &fg.Error{Code: fg.EUnavailable, Message: "the graph is still loading"}
			}
			return nil
		}),
		httpapi.WithReadiness("redis", func(context.Context) error {
			if starting.Swap(false) {
				return errors.New("loading the graph")
			}
			return nil
		}),
	}})
	f.get("/readyz")
	if a := f.get("/readyz"); a.status != 200 {
		t.Fatalf("/readyz once started: %d %s", a.status, a.body)
	}
	if out := f.log.String(); strings.Contains(out, "level=WARN") {
		t.Errorf("a check failing while the service started was logged as a warning:\n%s", out)
	}
}

func TestServer_Metrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	f := newFixture(t, fixtureConfig{maxFollowing: 1, opts: []httpapi.Option{httpapi.WithRegistry(reg)}})
	f.do(request{method: "PUT", target: "/v1/users/1/following/2"})                                // created
	f.do(request{method: "PUT", target: "/v1/users/1/following/2"})                                // unchanged
	f.do(request{method: "PUT", target: "/v1/users/1/following/3"})                                // following_limit
	f.do(request{method: "PUT", target: "/v1/users/1/following/1"})                                // self_follow
	f.do(request{method: "DELETE", target: "/v1/users/1/following/2"})                             // removed
	f.do(request{method: "DELETE", target: "/v1/users/0/following/2"})                             // invalid_id
	f.do(request{method: "PUT", target: "/v1/users/1/state", body: []byte(`{"state": "active"}`)}) // set
	f.do(request{method: "PUT", target: "/v1/users/1/state", body: []byte(`{"state": "gone"}`)})   // invalid_argument
	f.get("/v1/users/1/followers")
	f.get("/nowhere")

	text := f.metrics()
	for _, want := range []string{
		`followgraph_http_requests_total{code="200",route="PUT /v1/users/{user}/following/{target}"} 2`,
		`followgraph_http_requests_total{code="409",route="PUT /v1/users/{user}/following/{target}"} 1`,
		`followgraph_http_requests_total{code="200",route="GET /v1/users/{user}/followers"} 1`,
		`followgraph_http_requests_total{code="404",route="unmatched"} 1`,
		`followgraph_http_request_duration_seconds_bucket{code="200",route="DELETE /v1/users/{user}/following/{target}",le="+Inf"} 1`,
		`followgraph_http_request_duration_seconds_count{code="400",route="PUT /v1/users/{user}/following/{target}"} 1`,
		`followgraph_writes_total{op="follow",outcome="created"} 1`,
		`followgraph_writes_total{op="follow",outcome="unchanged"} 1`,
		`followgraph_writes_total{op="follow",outcome="following_limit"} 1`,
		`followgraph_writes_total{op="follow",outcome="self_follow"} 1`,
		`followgraph_writes_total{op="unfollow",outcome="removed"} 1`,
		`followgraph_writes_total{op="unfollow",outcome="invalid_id"} 1`,
		`followgraph_writes_total{op="state",outcome="set"} 1`,
		`followgraph_writes_total{op="state",outcome="invalid_argument"} 1`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics has no line %s", want)
		}
	}
	// The registry is the one given, and serves at /metrics as it is.
	if mfs, err := reg.Gather(); err != nil || len(mfs) != 5 {
		t.Errorf("the registry has %d metric families (%v), want the server's 5", len(mfs), err)
	}

	// Two servers can share a registry.
	g := newFixture(t, fixtureConfig{opts: []httpapi.Option{httpapi.WithRegistry(reg)}})
	g.get("/v1/users/1/followers")
	if mfs, err := reg.Gather(); err != nil || len(mfs) != 5 {
		t.Errorf("the shared registry has %d metric families (%v), want 5", len(mfs), err)
	}
}

// TestServer_DefaultMetrics checks that a server with no registry given
// serves its own, with the Go runtime's metrics.
func TestServer_DefaultMetrics(t *testing.T) {
	f := newFixture(t, fixtureConfig{})
	f.get("/healthz")
	text := f.metrics()
	for _, want := range []string{`followgraph_http_requests_total{code="200",route="GET /healthz"} 1`, "go_goroutines "} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics has no %s", want)
		}
	}
}

// metrics returns the text of /metrics, checked against api/openapi.yaml.
func (f *fixture) metrics() string {
	f.tb.Helper()
	req, err := http.NewRequest(http.MethodGet, f.srv.URL+"/metrics", nil)
	if err != nil {
		f.tb.Fatal(err)
	}
	resp, err := f.srv.Client().Do(req)
	if err != nil {
		f.tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		f.tb.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || !strings.HasPrefix(ct, "text/plain") {
		f.tb.Fatalf("/metrics: %d, Content-Type %q", resp.StatusCode, ct)
	}
	// The document says text/plain; the answer has parameters too.
	h := resp.Header.Clone()
	h.Set("Content-Type", "text/plain")
	if _, err := specOf(f.tb).check(context.Background(), req, nil, resp.StatusCode, h, b); err != nil {
		f.tb.Error(err)
	}
	return string(b)
}

// TestServer_Gate: while the gate says no, every API route answers its
// error (a 503 with Retry-After for an unavailable one) and changes
// nothing, while health, readiness and metrics are served; then the API
// opens.
func TestServer_Gate(t *testing.T) {
	var open atomic.Bool
	f := newFixture(t, fixtureConfig{opts: []httpapi.Option{
		httpapi.WithGate(func() error {
			if !open.Load() {
				return &fg.Error{Code: fg.EUnavailable, Message: "the graph is still loading"}
			}
			return nil
		}),
	}})
	for _, r := range []request{
		{method: http.MethodGet, target: "/v1/users/1"},
		{method: http.MethodPut, target: "/v1/users/1/following/2"},
		{method: http.MethodGet, target: "/v1/users/1/following"},
	} {
		a := f.do(r)
		if a.status != http.StatusServiceUnavailable || a.errorCode() != fg.EUnavailable || a.header.Get("Retry-After") != "1" ||
			!strings.Contains(string(a.body), "still loading") {
			t.Errorf("%s %s while gated: %d %s (Retry-After %q), want 503 unavailable saying why", r.method, r.target, a.status, a.body, a.header.Get("Retry-After"))
		}
	}
	for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
		res, err := http.Get(f.srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Errorf("%s while gated: %d, want 200", path, res.StatusCode)
		}
	}
	if n := f.g.Stats().Edges; n != 0 {
		t.Fatalf("a gated follow made %d edges", n)
	}
	open.Store(true)
	if a := f.do(request{method: http.MethodPut, target: "/v1/users/1/following/2"}); a.status != http.StatusOK {
		t.Fatalf("follow once open: %d %s", a.status, a.body)
	}
}

// deadlines is a graph that records the deadline each call's context
// has, from the call's start.
type deadlines struct {
	fg.Graph
	mu  sync.Mutex
	got map[string]time.Duration
}

func (d *deadlines) note(call string, ctx context.Context) {
	dl, _ := ctx.Deadline()
	d.mu.Lock()
	defer d.mu.Unlock()
	d.got[call] = time.Until(dl).Round(time.Second)
}

func (d *deadlines) Follow(ctx context.Context, user, target fg.UserID) (fg.FollowResult, error) {
	d.note("Follow", ctx)
	return d.Graph.Follow(ctx, user, target)
}

func (d *deadlines) IsFollowing(ctx context.Context, user, target fg.UserID) (fg.Edge, error) {
	d.note("IsFollowing", ctx)
	return d.Graph.IsFollowing(ctx, user, target)
}

func (d *deadlines) Relations(ctx context.Context, user fg.UserID, ids []fg.UserID) ([]fg.RelationInfo, error) {
	d.note("Relations", ctx)
	return d.Graph.Relations(ctx, user, ids)
}

// TestServer_WriteDeadline: a write has the deadline of a write, long
// enough to wait out an election of the event log's leader, and a read,
// a POST of ids included, the deadline of a read.
func TestServer_WriteDeadline(t *testing.T) {
	d := &deadlines{got: map[string]time.Duration{}}
	f := newFixture(t, fixtureConfig{
		wrap: func(g fg.Graph) fg.Graph { d.Graph = g; return d },
		opts: []httpapi.Option{httpapi.WithLimits(httpapi.Limits{RequestTimeout: 3 * time.Second, WriteRequestTimeout: 12 * time.Second})},
	})
	f.do(request{method: http.MethodPut, target: "/v1/users/1/following/2"})
	f.get("/v1/users/1/following/2")
	f.do(request{method: http.MethodPost, target: "/v1/users/1/relations", body: []byte(`{"ids":["2"]}`)})
	want := map[string]time.Duration{"Follow": 12 * time.Second, "IsFollowing": 3 * time.Second, "Relations": 3 * time.Second}
	for call, dl := range want {
		if got := d.got[call]; got != dl {
			t.Errorf("%s: the request's deadline is %s away, want %s", call, got, dl)
		}
	}
	if got := httpapi.DefaultLimits.WriteRequestTimeout; got < 10*time.Second {
		t.Errorf("a write's default deadline is %s: shorter than a leader election of the log (up to 9 s, and a resend)", got)
	}
}
