package redisgraph

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	fg "github.com/followgraph/followgraph"
)

// fakeClock is a clock the test moves.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// TestWriteRate: one user's writes through two Graphs on the same Redis
// (two serve nodes) share one bucket: 10 a second with bursts of 5, every
// write charged, those that change nothing too; over the rate a write
// changes nothing and says when to retry; a node whose clock is behind
// mints no tokens.
func TestWriteRate(t *testing.T) {
	for _, m := range modes {
		t.Run(m.Name, func(t *testing.T) {
			c := m.Client(t)
			clock := &fakeClock{now: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)}
			behind := &fakeClock{now: clock.now.Add(-time.Second)}
			prefix := randomPrefix()
			a := newTestGraphPrefix(t, c, prefix, WithClock(clock.Now), WithWriteRate(10, 5))
			b := newTestGraphPrefix(t, c, prefix, WithClock(clock.Now), WithWriteRate(10, 5))
			late := newTestGraphPrefix(t, c, prefix, WithClock(behind.Now), WithWriteRate(10, 5))
			ctx := context.Background()
			limited := func(err error) time.Duration {
				t.Helper()
				var fe *fg.Error
				if !errors.As(err, &fe) || fe.Code != fg.ERateLimited || fe.RetryAfter <= 0 {
					t.Fatalf("a write over the rate: %v, want rate_limited with a time to retry", err)
				}
				return fe.RetryAfter
			}
			for i := range fg.UserID(4) {
				g := a
				if i%2 == 1 {
					g = b
				}
				if _, err := g.Follow(ctx, 1, 2+i); err != nil {
					t.Fatalf("write %d of the burst: %v", i+1, err)
				}
			}
			if _, err := b.Follow(ctx, 1, 2); err != nil { // changes nothing, charged
				t.Fatalf("the fifth write of the burst: %v", err)
			}
			_, err := a.Follow(ctx, 1, 100)
			if wait := limited(err); wait != 100*time.Millisecond {
				t.Errorf("retry after %v, want 100ms (one token at 10/s)", wait)
			}
			if _, err := b.Unfollow(ctx, 1, 2); err == nil {
				t.Fatal("an unfollow over the rate was made")
			}
			if e, err := a.IsFollowing(ctx, 1, 100); err != nil || e.Following {
				t.Fatalf("1→100 after a refused follow: %+v, %v", e, err)
			}
			if e, err := a.IsFollowing(ctx, 1, 2); err != nil || !e.Following {
				t.Fatalf("1→2 after a refused unfollow: %+v, %v", e, err)
			}
			limited(func() error { _, err := late.Follow(ctx, 1, 101); return err }())
			clock.add(250 * time.Millisecond) // 2.5 tokens
			for _, g := range []*testGraph{b, a} {
				if _, err := g.Follow(ctx, 1, 102); err != nil {
					t.Fatalf("a write once tokens are back: %v", err)
				}
			}
			_, err = b.Follow(ctx, 1, 103)
			if wait := limited(err); wait != 50*time.Millisecond {
				t.Errorf("retry after %v with half a token, want 50ms", wait)
			}
			if _, err := a.Follow(ctx, 7, 8); err != nil {
				t.Fatalf("another user's write: %v", err)
			}
		})
	}
}
