package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/httpapi"
	"github.com/followgraph/followgraph/memgraph"
)

// benchServer serves a graph of users 1..60 in which each follows the 30
// after it (wrapping), so every list has a second page.
func benchServer(tb testing.TB) string {
	tb.Helper()
	g := memgraph.New()
	ctx := context.Background()
	for u := range 60 {
		for d := 1; d <= 30; d++ {
			if _, err := g.Follow(ctx, fg.UserID(1+u), fg.UserID(1+(u+d)%60)); err != nil {
				tb.Fatal(err)
			}
		}
	}
	srv := httptest.NewServer(httpapi.NewServer(g))
	tb.Cleanup(srv.Close)
	return srv.URL
}

func TestRun(t *testing.T) {
	url := benchServer(t)
	cfg := Config{URL: url, Duration: 400 * time.Millisecond, Concurrency: 4, Mix: "reads", Users: 60, Skew: 1.1, Seed: 1}
	byKind := func(res *Result) map[string]KindResult {
		m := map[string]KindResult{}
		for _, k := range res.Kinds {
			m[k.Kind] = k
		}
		return m
	}
	clean := func(t *testing.T, res *Result) {
		t.Helper()
		if res.Total.Errors != 0 || res.Total.Non2xx != 0 {
			t.Fatalf("%d errors (first: %q), %d non-2xx %v", res.Total.Errors, res.FirstError, res.Total.Non2xx, res.Statuses)
		}
		if res.Total.P50 <= 0 || res.Total.P50 > res.Total.P99 || res.Total.P99 > res.Total.Max {
			t.Fatalf("percentiles out of order: %+v", res.Total)
		}
	}

	t.Run("Reads", func(t *testing.T) {
		res, err := Run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		clean(t, res)
		kinds := byKind(res)
		for _, name := range kindNames[:kindFollow] {
			if kinds[name].OK == 0 {
				t.Errorf("no %s answered in %d requests", name, res.Total.Requests)
			}
		}
		// Half the list requests are second pages, once a first page gave a cursor.
		first, second := kinds["following"].OK+kinds["followers"].OK, kinds["following+cursor"].OK+kinds["followers+cursor"].OK
		if second < first/2 {
			t.Errorf("%d second pages for %d first pages", second, first)
		}
	})
	t.Run("Writes", func(t *testing.T) {
		cfg := cfg
		cfg.Mix = "writes"
		res, err := Run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		clean(t, res)
		kinds := byKind(res)
		if len(kinds) != 4 {
			t.Fatalf("want follows, unfollows, blocks and requests, got %+v", res.Kinds)
		}
		for _, k := range []string{"follow", "unfollow", "block", "request"} {
			if kinds[k].Changed == 0 {
				t.Errorf("no %s changed anything: %+v", k, kinds[k])
			}
		}
		// 2% blocks, 5% requests, within what 400 ms of random draws give.
		if b, r, n := kinds["block"].OK, kinds["request"].OK, res.Total.OK; b < n/100 || b > n/25 || r < n/40 || r > n/10 {
			t.Errorf("%d blocks and %d requests in %d writes, want about 2%% and 5%%", b, r, n)
		}
		// The requests' targets were made private at the start.
		for u := cfg.Users; u > cfg.Users-PrivateTargets; u-- {
			resp, err := http.Get(url + "/v1/users/" + strconv.Itoa(u) + "/settings")
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if !bytes.Contains(b, []byte(`"private":true`)) {
				t.Errorf("settings of %d after the run: %s", u, b)
			}
		}
	})
	t.Run("OpenLoop", func(t *testing.T) {
		cfg := cfg
		cfg.Rate = 500
		res, err := Run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		clean(t, res)
		// 500/s for 400 ms schedules 200 requests, and no more are sent;
		// how many of them start in time depends on the machine's load.
		if n := res.Total.Requests; n == 0 || n > 200 || res.Scheduled != 200 {
			t.Fatalf("sent %d of %d scheduled, want at most the 200 scheduled", n, res.Scheduled)
		}
	})
	t.Run("Report", func(t *testing.T) {
		cfg := cfg
		cfg.Duration = 200 * time.Millisecond
		run, err := Run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		asJSON, err := json.Marshal(run)
		if err != nil {
			t.Fatal(err)
		}
		var res Result
		if err := json.Unmarshal(asJSON, &res); err != nil {
			t.Fatalf("%v in %s", err, asJSON)
		}
		clean(t, &res)
		if res.Config.Mix != "reads" || res.Total.OK == 0 || res.Total.OK != run.Total.OK {
			t.Fatalf("got %s", asJSON)
		}
		var out bytes.Buffer
		res.Print(&out)
		if !bytes.Contains(out.Bytes(), []byte("total")) {
			t.Fatalf("text report without a total:\n%s", out.Bytes())
		}
	})
	t.Run("NotReady", func(t *testing.T) {
		cfg := cfg
		cfg.URL = "http://127.0.0.1:1"
		if _, err := Run(context.Background(), cfg); err == nil {
			t.Fatal("no error from a server that is not there")
		}
	})
}

// TestConn checks the generator's HTTP/1.1 client on what a Go server
// may answer: bodies of a given length or chunked, errors, and connections
// the server closes.
func TestConn(t *testing.T) {
	big := strings.Repeat("x", 100_000)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/small":
			io.WriteString(w, "small "+r.Method)
		case "/chunked":
			for i := 0; i < len(big); i += 30_000 {
				io.WriteString(w, big[i:min(i+30_000, len(big))])
				w.(http.Flusher).Flush()
			}
		case "/close":
			w.Header().Set("Connection", "close")
			io.WriteString(w, "bye")
		default:
			http.Error(w, "nope", http.StatusNotFound)
		}
	}))
	defer srv.Close()
	c := conn{addr: strings.TrimPrefix(srv.URL, "http://")}
	defer c.close()
	var body bytes.Buffer
	for _, tc := range []struct {
		method, path string
		status       int
		body         string
	}{
		{"GET", "/small", 200, "small GET"},
		{"PUT", "/small", 200, "small PUT"},
		{"GET", "/chunked", 200, big},
		{"GET", "/missing", 404, "nope\n"},
		{"GET", "/close", 200, "bye"},
		{"DELETE", "/small", 200, "small DELETE"},
	} {
		status, err := c.do(tc.method, []byte(tc.path), nil, time.Now().Add(5*time.Second), &body)
		if err != nil || status != tc.status || body.String() != tc.body {
			t.Errorf("%s %s: status %d, err %v, body of %d bytes %.20q; want %d, %.20q (%d bytes)",
				tc.method, tc.path, status, err, body.Len(), body.String(), tc.status, tc.body, len(tc.body))
		}
	}
}

// TestRun_TLSAndToken: over HTTPS, with the bearer token on every request.
func TestRun_TLSAndToken(t *testing.T) {
	g := memgraph.New()
	for u := range fg.UserID(20) {
		if _, err := g.Follow(context.Background(), 1+u, 1+(u+1)%20); err != nil {
			t.Fatal(err)
		}
	}
	api := httpapi.NewServer(g)
	var without atomic.Int64
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer t0ken" {
			without.Add(1)
		}
		api.ServeHTTP(w, r)
	}))
	defer srv.Close()
	cfg := Config{URL: srv.URL, Duration: 200 * time.Millisecond, Concurrency: 2, Mix: "reads", Users: 20, Seed: 1,
		TLS: srv.Client().Transport.(*http.Transport).TLSClientConfig, Token: "t0ken"}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Total.OK == 0 || res.Total.Errors != 0 || without.Load() != 0 {
		t.Fatalf("%d answered, %d errors (%s), %d requests without the token", res.Total.OK, res.Total.Errors, res.FirstError, without.Load())
	}
}
