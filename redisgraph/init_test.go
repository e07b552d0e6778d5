package redisgraph

import (
	"testing"

	fg "github.com/followgraph/followgraph"
)

// TestDataLoss: once an outbox stream is gone (as when Redis lost its
// data), the writes of its users are refused and change nothing, until
// InitOutbox (after a rebuild) creates it again; OutboxMissing tells.
func TestDataLoss(t *testing.T) {
	for _, m := range modes {
		t.Run(m.Name, func(t *testing.T) {
			g := newTestGraph(t, m.Client(t))
			ctx := t.Context()
			if missing, _, err := g.OutboxMissing(ctx); err != nil || missing != 0 {
				t.Fatalf("a new graph misses %d outbox streams (%v)", missing, err)
			}
			if _, err := g.Follow(ctx, 1, 2); err != nil {
				t.Fatal(err)
			}
			if err := g.c.Do(ctx, g.c.B().Del().Key(g.ks.Outbox(1)).Build()).Error(); err != nil {
				t.Fatal(err)
			}
			if missing, total, err := g.OutboxMissing(ctx); err != nil || missing != 1 {
				t.Fatalf("OutboxMissing = %d of %d (%v), want 1", missing, total, err)
			}
			if _, err := g.Unfollow(ctx, 1, 2); fg.ErrorCode(err) != fg.EUnavailable {
				t.Fatalf("unfollow with the outbox gone: %v, want %s", err, fg.EUnavailable)
			}
			if _, err := g.Follow(ctx, 1, 4); fg.ErrorCode(err) != fg.EUnavailable {
				t.Fatalf("follow with the outbox gone: %v, want %s", err, fg.EUnavailable)
			}
			// A change that looks like nothing to do is refused too: on a
			// Redis that lost the graph, the edge may exist.
			if _, err := g.Unfollow(ctx, 1, 6); fg.ErrorCode(err) != fg.EUnavailable {
				t.Fatalf("unfollow of an unknown edge with the outbox gone: %v, want %s", err, fg.EUnavailable)
			}
			if e, err := g.IsFollowing(ctx, 1, 2); err != nil || !e.Following {
				t.Fatalf("the refused unfollow changed the edge: %+v, %v", e, err)
			}
			if n, err := g.InitOutbox(ctx); err != nil || n != 1 {
				t.Fatalf("InitOutbox created %d streams (%v), want 1", n, err)
			}
			if _, err := g.Unfollow(ctx, 1, 2); err != nil {
				t.Fatal(err)
			}
			if n, err := g.InitOutbox(ctx); err != nil || n != 0 {
				t.Fatalf("InitOutbox over existing streams created %d (%v)", n, err)
			}
			entries, err := g.outbox.Read(ctx, g.ks.Outbox(1), "", 10)
			if err != nil || len(entries) != 1 || entries[0].Event.Op != fg.OpUnfollow {
				t.Fatalf("outbox after re-creation: %v, %v; want the unfollow alone", entries, err)
			}
		})
	}
}
