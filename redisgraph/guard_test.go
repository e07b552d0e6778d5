package redisgraph

import (
	"sync/atomic"
	"testing"

	fg "github.com/followgraph/followgraph"
)

// TestGuard: when Redis loses the graph (every key gone, as when it
// restarts empty), no read answers from what is left: each returns
// EUnavailable and tells WithOnLoss, cached counts included; once the
// graph is rebuilt and marked whole again (InitOutbox, a new epoch), the
// reads answer from it.
func TestGuard(t *testing.T) {
	for _, m := range modes {
		t.Run(m.Name, func(t *testing.T) {
			var losses atomic.Int64
			g := newTestGraph(t, m.Client(t), WithCacheThreshold(1), WithOnLoss(func() { losses.Add(1) }))
			ctx := t.Context()
			for _, f := range []fg.UserID{2, 3, 4} {
				if _, err := g.Follow(ctx, 1, f); err != nil {
					t.Fatal(err)
				}
				if _, err := g.Follow(ctx, f, 1); err != nil {
					t.Fatal(err)
				}
			}
			reads := map[string]func() error{
				"Counts":      func() error { _, err := g.Counts(ctx, []fg.UserID{1, 2}); return err },
				"Following":   func() error { _, err := g.Following(ctx, 1, fg.PageRequest{}); return err },
				"Followers":   func() error { _, err := g.Followers(ctx, 1, fg.PageRequest{}); return err },
				"IsFollowing": func() error { _, err := g.IsFollowing(ctx, 1, 2); return err },
				"Relations":   func() error { _, err := g.Relations(ctx, 1, []fg.UserID{2, 3}); return err },
				"Mutuals":     func() error { _, err := g.Mutuals(ctx, 1, fg.PageRequest{}); return err },
				"CommonFollowing": func() error {
					_, err := g.CommonFollowing(ctx, 1, 2, fg.PageRequest{})
					return err
				},
				"Suggestions": func() error { _, err := g.Suggestions(ctx, 2, 5); return err },
			}
			for name, read := range reads { // and fill the cache
				if err := read(); err != nil {
					t.Fatalf("%s before the loss: %v", name, err)
				}
			}
			g.deleteKeys(t)
			g.awaitInvalidations(t)
			for name, read := range reads {
				if err := read(); fg.ErrorCode(err) != fg.EUnavailable {
					t.Errorf("%s with the graph lost: %v, want %s", name, err, fg.EUnavailable)
				}
			}
			if losses.Load() == 0 {
				t.Error("WithOnLoss was not told")
			}
			// The rebuild writes the graph back, then marks it whole.
			events := []fg.Event{}
			for _, f := range []fg.UserID{2, 3, 4} {
				events = append(events, fg.NewEvent(1, f, fg.OpFollow, fg.VersionAt(1700000000000)), fg.NewEvent(f, 1, fg.OpFollow, fg.VersionAt(1700000000000)))
			}
			if err := g.Apply(ctx, events); err != nil {
				t.Fatal(err)
			}
			if _, err := g.InitOutbox(ctx); err != nil {
				t.Fatal(err)
			}
			for name, read := range reads {
				if err := read(); err != nil {
					t.Errorf("%s after the rebuild: %v", name, err)
				}
			}
			if cs, err := g.Counts(ctx, []fg.UserID{1}); err != nil || cs[0].FollowingCount != 3 || cs[0].FollowerCount != 3 {
				t.Errorf("counts after the rebuild: %+v %v", cs, err)
			}
		})
	}
}
