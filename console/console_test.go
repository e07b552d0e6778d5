package console_test

import (
	"encoding/json"
	"io"
	"io/fs"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/console"
	"github.com/followgraph/followgraph/httpapi"
	"github.com/followgraph/followgraph/memgraph"
)

// serve answers one request of method to path from h.
func serve(tb testing.TB, h http.Handler, method, path string) *http.Response {
	tb.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(method, path, nil))
	return w.Result()
}

func body(tb testing.TB, resp *http.Response) string {
	tb.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

// api is the real HTTP API on an empty memgraph.
func api() http.Handler { return httpapi.NewServer(memgraph.New()) }

func TestMount(t *testing.T) {
	h := console.Mount(api())
	t.Run("Files", func(t *testing.T) {
		for _, tc := range []struct{ path, contentType, holds string }{
			{"/console/", "text/html", `<script src="console.js"`},
			{"/console/console.js", "text/javascript", "parseMetrics"},
			{"/console/console.css", "text/css", "polyline"},
		} {
			resp := serve(t, h, http.MethodGet, tc.path)
			b := body(t, resp)
			if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), tc.contentType) || !strings.Contains(b, tc.holds) {
				t.Errorf("GET %s: %d %q, want 200 %s holding %q", tc.path, resp.StatusCode, resp.Header.Get("Content-Type"), tc.contentType, tc.holds)
			}
			if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") {
				t.Errorf("GET %s: Content-Security-Policy %q, want the page's own files only, never framed", tc.path, csp)
			}
		}
	})
	t.Run("Redirect", func(t *testing.T) {
		resp := serve(t, h, http.MethodGet, "/console")
		if resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != "/console/" {
			t.Fatalf("GET /console: %d to %q, want 301 to /console/", resp.StatusCode, resp.Header.Get("Location"))
		}
	})
	t.Run("NoSuchFile", func(t *testing.T) {
		for _, p := range []string{"/console/nothing.js", "/console/../console.go"} {
			if resp := serve(t, h, http.MethodGet, p); resp.StatusCode != http.StatusNotFound {
				t.Errorf("GET %s: %d, want 404", p, resp.StatusCode)
			}
		}
	})
	t.Run("OthersPassThrough", func(t *testing.T) {
		// The API answers everything else as it would alone, its JSON 404 included.
		for _, tc := range []struct {
			path   string
			status int
		}{{"/v1/users/1", http.StatusOK}, {"/consoles", http.StatusNotFound}, {"/metrics", http.StatusOK}} {
			resp := serve(t, h, http.MethodGet, tc.path)
			if resp.StatusCode != tc.status || (strings.HasPrefix(tc.path, "/v1/") || tc.status == http.StatusNotFound) && resp.Header.Get("Content-Type") != "application/json" {
				t.Errorf("GET %s: %d %q, want the API's %d", tc.path, resp.StatusCode, resp.Header.Get("Content-Type"), tc.status)
			}
		}
	})
}

func TestOnOperatorPort(t *testing.T) {
	g := memgraph.New()
	server := httpapi.NewServer(g, httpapi.WithOperatorPort())
	h := console.OnOperatorPort(server.OperatorHandler(), server)
	t.Run("Reads", func(t *testing.T) {
		for _, p := range []string{"/v1/users/1", "/v1/users/1/followers?limit=5", "/metrics", "/readyz", "/console/"} {
			if resp := serve(t, h, http.MethodGet, p); resp.StatusCode != http.StatusOK {
				t.Errorf("GET %s: %d, want 200", p, resp.StatusCode)
			}
		}
		if resp := serve(t, h, http.MethodHead, "/v1/users/1"); resp.StatusCode != http.StatusOK {
			t.Errorf("HEAD /v1/users/1: %d, want 200", resp.StatusCode)
		}
	})
	t.Run("NoWrites", func(t *testing.T) {
		for _, m := range []string{http.MethodPut, http.MethodDelete, http.MethodPost} {
			resp := serve(t, h, m, "/v1/users/1/following/2")
			b := body(t, resp)
			if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" || !strings.Contains(b, `"code":"method_not_allowed"`) {
				t.Errorf("%s on the operator port: %d Allow %q %s, want 405 method_not_allowed", m, resp.StatusCode, resp.Header.Get("Allow"), b)
			}
		}
		if c, err := g.Counts(t.Context(), []followgraph.UserID{1}); err != nil || c[0].FollowingCount != 0 {
			t.Fatalf("a refused write changed the graph: %+v, %v", c, err)
		}
	})
	t.Run("OthersAsBefore", func(t *testing.T) {
		if resp := serve(t, h, http.MethodGet, "/debug/pprof/"); resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET /debug/pprof/: %d, want the operator handler's 404", resp.StatusCode)
		}
	})
}

// TestFiles_SelfContained: the console loads nothing from elsewhere (no
// CDN, no font service): every URL in its files is one of its own.
func TestFiles_SelfContained(t *testing.T) {
	err := filepath.WalkDir("static", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		// The SVG namespace is a name, not a request.
		s := strings.ReplaceAll(string(b), `"http://www.w3.org/2000/svg"`, "")
		if i := strings.Index(s, "//"); i >= 0 && strings.Contains(s[max(0, i-6):i], ":") {
			t.Errorf("%s names an outside URL near %q", path, s[max(0, i-20):min(len(s), i+30)])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// historyOf returns the JSON h answers.
func historyOf(t *testing.T, h http.Handler) (answer struct {
	IntervalSeconds float64 `json:"interval_seconds"`
	Now             int64
	Times           []int64
	Series          []struct {
		Name   string
		Labels map[string]string
		Values []*float64
	}
}) {
	t.Helper()
	resp := serve(t, h, http.MethodGet, console.HistoryPath)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET %s: %d %q, want 200 JSON", console.HistoryPath, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil {
		t.Fatal(err)
	}
	return answer
}

// TestHistory: the History keeps the last window of samples of the
// metrics the console charts, and of no other, a counter at 0 before it
// was exported; the server serves it at HistoryPath, also through Mount
// and on the operator port.
func TestHistory(t *testing.T) {
	reg := prometheus.NewRegistry()
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "followgraph_http_requests_total"}, []string{"route", "code"})
	backlog := prometheus.NewGauge(prometheus.GaugeOpts{Name: "followgraph_persister_pending_events"})
	other := prometheus.NewGauge(prometheus.GaugeOpts{Name: "followgraph_not_charted"})
	reg.MustRegister(requests, backlog, other)
	h := console.NewHistory(reg)
	start := time.Unix(1_800_000_000, 0)
	window := int(console.HistoryWindow / console.HistoryInterval)
	for i := range window + 5 {
		requests.WithLabelValues("GET /v1/users/{user}", "200").Add(1)
		if i == window+2 {
			requests.WithLabelValues("GET /v1/users/{user}", "503").Add(1)
		}
		backlog.Set(float64(i))
		h.Sample(start.Add(time.Duration(i) * console.HistoryInterval))
	}
	server := httpapi.NewServer(memgraph.New(), httpapi.WithMetricsHistory(console.HistoryPath, h))
	a := historyOf(t, console.Mount(server))
	if len(a.Times) != window || a.Times[0] != start.Add(5*console.HistoryInterval).UnixMilli() || a.IntervalSeconds != console.HistoryInterval.Seconds() {
		t.Fatalf("%d times from %d every %v s, want the last %d, from the 6th sample's", len(a.Times), a.Times[0], a.IntervalSeconds, window)
	}
	got := map[string][]*float64{}
	for _, s := range a.Series {
		if len(s.Values) != len(a.Times) {
			t.Errorf("%s %v: %d values for %d times", s.Name, s.Labels, len(s.Values), len(a.Times))
		}
		got[s.Name+" "+s.Labels["code"]] = s.Values
	}
	if len(got) != 3 {
		t.Fatalf("series %v, want the requests by code and the backlog, nothing else", slices.Collect(maps.Keys(got)))
	}
	if v := got["followgraph_persister_pending_events "]; *v[0] != 5 || *v[window-1] != float64(window+4) {
		t.Errorf("the backlog's first and last kept values: %v, %v; want 5 and %d", *v[0], *v[window-1], window+4)
	}
	if v := got["followgraph_http_requests_total 503"]; v[window-4] == nil || *v[window-4] != 0 || *v[window-3] != 1 || *v[window-1] != 1 {
		t.Errorf("the 503s, a counter that began at the third sample from the end: %v, want 0 before (a counter starts at 0)", v[window-4:])
	}
	op := httpapi.NewServer(memgraph.New(), httpapi.WithOperatorPort(), httpapi.WithMetricsHistory(console.HistoryPath, h))
	if b := historyOf(t, console.OnOperatorPort(op.OperatorHandler(), op)); len(b.Times) != window {
		t.Errorf("on the operator port: %d times, want %d", len(b.Times), window)
	}
}
