package memgraph

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	fg "github.com/followgraph/followgraph"
)

// TestPurgeTombstones_Frees: once every tombstone is gone, no stripe keeps
// a map of them or the rels of users who had only edges off, and a stripe
// that lost half its tombstones holds them in a map of their size.
func TestPurgeTombstones_Frees(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	g := New(WithClock(func() time.Time { return now }))
	for u := fg.UserID(1); u <= 3000; u++ {
		for _, x := range []fg.UserID{u + 1, u + 2} {
			mustDo(t, second(g.Follow(ctx, u, x)))
			mustDo(t, second(g.Unfollow(ctx, u, x)))
		}
		mustDo(t, second(g.Block(ctx, u, u+3)))
		mustDo(t, second(g.Unblock(ctx, u, u+3)))
	}
	mustDo(t, second(g.Follow(ctx, 1, 3000))) // a live edge, kept
	h := fg.VersionAt(now.UnixMilli() + 1)
	total := 0
	for {
		n, more, err := g.PurgeTombstones(ctx, h, 1000)
		if err != nil || n > 1000 {
			t.Fatalf("PurgeTombstones = %d, %v", n, err)
		}
		total += n
		if !more {
			break
		}
	}
	// Per user: two follow tombstones, the block's, the block's two follow
	// tombstones and two request tombstones.
	if total != 3000*7 {
		t.Errorf("removed %d tombstones, want %d", total, 3000*7)
	}
	for i := range g.stripes {
		s := &g.stripes[i]
		if s.tombs != nil || s.tombPeak != 0 || s.rels != nil {
			t.Fatalf("stripe %d keeps %d tombstones (peak %d) and %d rels after the purge", i, len(s.tombs), s.tombPeak, len(s.rels))
		}
	}
	if e, _ := g.IsFollowing(ctx, 1, 3000); !e.Following {
		t.Error("the purge removed a live edge")
	}

	// Half of one stripe's tombstones: its map is made anew, at its size.
	s := &g.stripes[0]
	for i := range uint32(100) {
		s.setTomb(edge{i * stripeCount, 1}, h+fg.Version(i%2))
	}
	if _, _, err := g.PurgeTombstones(ctx, h+1, 1000); err != nil {
		t.Fatal(err)
	}
	if len(s.tombs) != 50 || s.tombPeak != 50 {
		t.Errorf("after half went: %d tombstones, peak %d; want 50, 50", len(s.tombs), s.tombPeak)
	}
}

// TestPurgeTombstones_Concurrent purges in small steps, as serve does,
// while writers change their own edges: every write is kept (the race
// detector watches the locking).
func TestPurgeTombstones_Concurrent(t *testing.T) {
	ctx := context.Background()
	g := New()
	const writers, pairs = 4, 200
	stop := make(chan struct{})
	var purged sync.WaitGroup
	purged.Add(1)
	go func() {
		defer purged.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, _, err := g.PurgeTombstones(ctx, fg.VersionAt(time.Now().UnixMilli()), 10); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	var wg sync.WaitGroup
	want := make([]map[fg.UserID]bool, writers)
	for w := range writers {
		want[w] = make(map[fg.UserID]bool)
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			u := fg.UserID(1000 * (w + 1))
			for range 20_000 {
				x := u + 1 + fg.UserID(rng.IntN(pairs))
				var err error
				switch rng.IntN(4) {
				case 0, 1:
					_, err = g.Follow(ctx, u, x)
					want[w][x] = true
				case 2:
					_, err = g.Unfollow(ctx, u, x)
					want[w][x] = false
				case 3:
					if _, err = g.Block(ctx, x, u+1+fg.UserID(rng.IntN(pairs))); err == nil {
						_, err = g.Unblock(ctx, x, u+1+fg.UserID(rng.IntN(pairs)))
					}
				}
				if err != nil && fg.ErrorCode(err) != fg.ESelfFollow && fg.ErrorCode(err) != fg.EBlocked {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	purged.Wait()
	edges := 0
	for w, m := range want {
		u := fg.UserID(1000 * (w + 1))
		for x, on := range m {
			if e, err := g.IsFollowing(ctx, u, x); err != nil || e.Following != on {
				t.Errorf("IsFollowing(%d, %d) = %v, %v; want %v", u, x, e.Following, err, on)
			}
			if on {
				edges++
			}
		}
	}
	if got := g.Stats().Edges; got != edges {
		t.Errorf("Stats().Edges = %d, want %d", got, edges)
	}
}
