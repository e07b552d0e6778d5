package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	fg "github.com/followgraph/followgraph"
)

// TestRedis_LostGraph: Redis restarted empty under a serving node. Reads
// never answer a guess (an empty list, a zero count) with 200: they
// answer 503 until the graph is back, which the node sees and rebuilds
// by itself from the store and the log, saying so at WARN; then every
// read is right again.
func TestRedis_LostGraph(t *testing.T) {
	r := startRedis(t)
	s := start(t, t.TempDir(), "--redis", r.url(), "--redis-prefix", "fgtest-lost")
	ctx := context.Background()
	const n = 300
	for i := range n {
		if _, err := s.client.Follow(ctx, 1, fg.UserID(2+i)); err != nil {
			t.Fatal(err)
		}
	}
	r.kill()
	r.start()
	guesses, refusals := 0, 0
	var firstGuess string
	deadline := time.Now().Add(20 * time.Second)
	for right := 0; right < 20; {
		if time.Now().After(deadline) {
			t.Fatalf("reads not right again 20 s after Redis came back empty (%d 503s, %d guesses):\n%s", refusals, guesses, s.logs)
		}
		cs, errCounts := s.client.Counts(ctx, []fg.UserID{1})
		p, errList := s.client.Following(ctx, 1, fg.PageRequest{Limit: 10})
		e, errEdge := s.client.IsFollowing(ctx, 1, 2)
		switch err := errors.Join(errCounts, errList, errEdge); {
		case err != nil:
			var fe *fg.Error
			if !errors.As(err, &fe) || fe.Code != fg.EUnavailable {
				t.Fatalf("a read after the loss: %v, want unavailable", err)
			}
			refusals++
			right = 0
		case cs[0].FollowingCount != n || len(p.Entries) != 10 || !e.Following:
			guesses++
			if firstGuess == "" {
				firstGuess = toJSON([]any{cs, len(p.Entries), e})
			}
		default:
			right++
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("after Redis came back empty: %d reads answered 503, then right", refusals)
	if guesses > 0 {
		t.Errorf("%d reads answered 200 with a guess after Redis lost the graph, such as %s", guesses, firstGuess)
	}
	if !strings.Contains(s.logs.String(), "Redis holds the graph") {
		t.Errorf("the node did not rebuild the graph by itself:\n%s", s.logs)
	}
	// A loss of what the store holds is a warning, unlike a first start
	// (TestServe_FreshStartQuiet).
	warned := false
	for _, line := range complaints(t, s.logs.String()) {
		warned = warned || strings.Contains(line, "rebuilding the graph")
	}
	if !warned {
		t.Errorf("the rebuild after the loss was not logged at WARN:\n%s", s.logs)
	}
	if _, err := s.client.Follow(ctx, 1, 5000); err != nil {
		t.Errorf("a write after the rebuild: %v", err)
	}
}
