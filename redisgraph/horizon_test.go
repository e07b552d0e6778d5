package redisgraph

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/redisgraph/internal/wire"
)

// TestPurgeRacingApply: old follows replayed by Apply while a purge
// removes their edges' tombstones never bring an edge back. Each Apply
// reads the deployment's horizon before its scripts run, so one that read
// it before the pass raised it finds only the user's own horizon (hz),
// raised in the script of the removal, between it and the edge: the test
// ends with such an Apply of every old follow.
func TestPurgeRacingApply(t *testing.T) {
	const n = 200 // edges 1→2 … 1→n+1, each followed then unfollowed
	for _, m := range modes {
		t.Run(m.Name, func(t *testing.T) {
			g := newTestGraph(t, m.Client(t))
			ctx := t.Context()
			g.touch(1)
			var old []fg.Event // the follows, as a late replay would bring them
			for i := range n {
				target := fg.UserID(2 + i)
				g.touch(target)
				res, err := g.Follow(ctx, 1, target)
				if err != nil {
					t.Fatal(err)
				}
				old = append(old, fg.NewEvent(1, target, fg.OpFollow, fg.VersionAt(res.Since.UnixMilli())))
				if _, err := g.Unfollow(ctx, 1, target); err != nil {
					t.Fatal(err)
				}
			}
			bound := fg.VersionAt(time.Now().Add(time.Second).UnixMilli())
			var wg sync.WaitGroup
			var done atomic.Bool
			wg.Go(func() {
				for !done.Load() {
					for i := range old {
						if err := g.Apply(ctx, old[i:i+1]); err != nil {
							t.Error(err)
							return
						}
					}
				}
			})
			removed := 0
			for more := true; more; {
				k, m, err := g.PurgeTombstones(ctx, bound, 7)
				if err != nil {
					t.Fatal(err)
				}
				removed, more = removed+k, m
			}
			done.Store(true)
			wg.Wait()
			if removed == 0 {
				t.Fatal("the purge removed nothing")
			}
			// An Apply that read the deployment's horizon before the pass
			// raised it, its scripts run after the removals.
			if err := g.fx.Apply(ctx, old, wire.VersionHex(0)); err != nil {
				t.Fatal(err)
			}
			page, err := g.Following(ctx, 1, fg.PageRequest{Limit: n})
			if err != nil {
				t.Fatal(err)
			}
			if len(page.Entries) != 0 {
				t.Errorf("after old follows raced the purge of their tombstones, user 1 follows %d users, want none (%d tombstones removed)", len(page.Entries), removed)
			}
		})
	}
}
