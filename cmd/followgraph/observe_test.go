package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	fg "github.com/followgraph/followgraph"
)

// scrape returns s's /metrics text.
func scrape(tb testing.TB, s *server) string {
	tb.Helper()
	resp, err := http.Get(s.url + "/metrics")
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

// readyz returns s's /readyz status and body.
func readyz(tb testing.TB, s *server) (int, map[string]any) {
	tb.Helper()
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Get(s.url + "/readyz")
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		tb.Fatalf("/readyz: %v", err)
	}
	return resp.StatusCode, body
}

// TestServe_StoreDownIsDegraded: with the durable store down, writes go
// on (the log keeps them), so /readyz stays 200 and names the store as
// degraded instead of taking the node out of a load balancer; the store's
// up gauge reads 0 meanwhile, and 1 again once it is back.
func TestServe_StoreDownIsDegraded(t *testing.T) {
	pg := startPostgres(t)
	db := newDatabase(t, pg.admin)
	s := start(t, t.TempDir(), "--db", db)
	pg.stop()
	ctx := context.Background()
	for i := range 20 {
		if _, err := s.client.Follow(ctx, 1, fg.UserID(2+i)); err != nil {
			t.Fatalf("a write with the store down: %v", err)
		}
	}
	status, body := readyz(t, s)
	if status != http.StatusOK || !strings.Contains(toJSON(body), `"degraded":["store"]`) {
		t.Errorf("/readyz with the store down: %d %v, want 200 naming the store as degraded", status, body)
	}
	if m := scrape(t, s); !strings.Contains(m, `followgraph_backend_up{backend="store",degradable="true"} 0`) {
		t.Errorf("no followgraph_backend_up 0 for the store while it is down:\n%s", grep(m, "backend_up"))
	}
	pg.start()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(scrape(t, s), `followgraph_backend_up{backend="store",degradable="true"} 1`) {
		if time.Now().After(deadline) {
			t.Fatalf("the store's up gauge is not 1 20 s after it came back:\n%s", grep(scrape(t, s), "backend_up"))
		}
		time.Sleep(200 * time.Millisecond)
	}
	if status, body := readyz(t, s); status != http.StatusOK || body["degraded"] != nil {
		t.Errorf("/readyz with the store back: %d %v", status, body)
	}
}

// TestServe_LogDownGauges: with the event log unreachable, the backlog
// gauges are not exported (their value is unknown: a 0 would say "all
// stored"), the log's up gauge reads 0, and the build is described by
// followgraph_build_info.
func TestServe_LogDownGauges(t *testing.T) {
	n := startNATS(t)
	s := start(t, t.TempDir(), "--nats", n.url, "--nats-stream", "FGTEST_GAUGES")
	m := scrape(t, s)
	if !regexp.MustCompile(`(?m)^followgraph_build_info\{.*version="[^"]+".*\} 1$`).MatchString(m) {
		t.Errorf("no followgraph_build_info with a version:\n%s", grep(m, "build_info"))
	}
	if !strings.Contains(m, "\nfollowgraph_persister_pending_events ") {
		t.Fatalf("no followgraph_persister_pending_events while the log is up:\n%s", grep(m, "pending"))
	}
	n.stop()
	time.Sleep(500 * time.Millisecond)
	m = scrape(t, s)
	if strings.Contains(m, "\nfollowgraph_persister_pending_events ") {
		t.Errorf("followgraph_persister_pending_events is exported while the log is unreachable: %s", grep(m, "persister_pending"))
	}
	if !strings.Contains(m, `followgraph_backend_up{backend="eventlog",degradable="false"} 0`) {
		t.Errorf("no followgraph_backend_up 0 for the log while it is down:\n%s", grep(m, "backend_up"))
	}
	n.start()
}

// TestServe_ShutdownTimeout: a clean stop with a backlog the persister
// cannot drain in time stops after --shutdown-timeout, saying while it
// waits how much is left, and leaves the rest in the log.
func TestServe_ShutdownTimeout(t *testing.T) {
	s := startEnv(t, t.TempDir(), []string{"FOLLOWGRAPH_SHUTDOWN_TIMEOUT=3s"}, "--persist-rate", "20", "--persist-batch", "10")
	ctx := context.Background()
	for i := range 400 {
		if _, err := s.client.Follow(ctx, fg.UserID(1+i%20), fg.UserID(100+i)); err != nil {
			t.Fatal(err)
		}
	}
	begin := time.Now()
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(20 * time.Second):
		t.Fatalf("no exit 20 s after SIGTERM:\n%s", s.logs)
	}
	took := time.Since(begin)
	logs := s.logs.String()
	t.Logf("stopped in %v", took.Round(time.Millisecond))
	if took < 2*time.Second || took > 6*time.Second {
		t.Errorf("stopped %v after SIGTERM with a backlog, want about the 3 s shutdown timeout", took.Round(time.Millisecond))
	}
	if n := strings.Count(logs, `"msg":"draining the log into the store"`); n < 2 {
		t.Errorf("%d progress lines while draining, want one a second:\n%s", n, logs)
	}
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// grep returns the lines of text that contain s.
func grep(text, s string) string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, s) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}
