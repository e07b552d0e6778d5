package main

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/internal/testenv"
)

// A message in the event log that is not an event (another program
// publishing on the stream's subjects) is skipped by the persister, never
// applied, and counted in /metrics, so that an operator sees it; the
// events around it are persisted.
func TestServe_UndecodableCounted(t *testing.T) {
	natsURL := testenv.Server(t, testenv.NATS, testenv.NATSHint)
	stream := fmt.Sprintf("FGTEST_%X", rand.Uint64())
	t.Cleanup(func() { deleteStream(natsURL, stream) })
	data := t.TempDir()
	s := start(t, data, "--nats", natsURL, "--nats-stream", stream)
	if got := metric(t, s, "followgraph_eventlog_undecodable_total"); got != 0 {
		t.Fatalf("followgraph_eventlog_undecodable_total = %v at start, want 0", got)
	}

	ctx := t.Context()
	if _, err := s.client.Follow(ctx, 1, 2); err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(natsURL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := nc.JetStream()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(natsSubject(stream)+".x", []byte("not an event")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.client.Follow(ctx, 3, 4); err != nil {
		t.Fatal(err)
	}

	deadline := time.Now().Add(30 * time.Second)
	for metric(t, s, "followgraph_eventlog_undecodable_total") != 1 ||
		metric(t, s, "followgraph_persister_pending_events") != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("after 30 s: undecodable %v, pending %v, want 1 and 0\n%s",
				metric(t, s, "followgraph_eventlog_undecodable_total"),
				metric(t, s, "followgraph_persister_pending_events"), s.logs)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(s.logs.String(), "not an event; skipped") {
		t.Errorf("the skipped message was not logged:\n%s", s.logs)
	}
	s.stop(t)
	got := storeState(t, "", data)
	for _, e := range [][2]fg.UserID{{1, 2}, {3, 4}} {
		if a, ok := got[e]; !ok || !a.following {
			t.Errorf("edge %v is not in the store: %v", e, got)
		}
	}
	if len(got) != 2 {
		t.Errorf("the store holds %d edges, want 2: %v", len(got), got)
	}
}

// metric returns the value of the unlabeled metric name in s's /metrics.
func metric(tb testing.TB, s *server, name string) float64 {
	tb.Helper()
	resp, err := http.Get(s.url + "/metrics")
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				tb.Fatalf("/metrics: %s %q: %v", name, v, err)
			}
			return f
		}
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	tb.Fatalf("/metrics has no %s", name)
	return 0
}
