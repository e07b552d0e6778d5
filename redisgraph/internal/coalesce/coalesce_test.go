package coalesce

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestShared: many waiters that arrive while a call is in flight share
// the next one, each gets the answer of a call sent after it began to
// wait, and the calls are at least Gap apart.
func TestShared(t *testing.T) {
	c := &Calls[int64]{Gap: 5 * time.Millisecond}
	var n atomic.Int64
	var last atomic.Int64
	send := func() int64 {
		now := time.Now().UnixNano()
		if prev := last.Swap(now); prev != 0 && time.Duration(now-prev) < c.Gap {
			t.Errorf("two calls %v apart, want at least %v", time.Duration(now-prev), c.Gap)
		}
		time.Sleep(time.Millisecond)
		return n.Add(1)
	}
	var wg sync.WaitGroup
	for range 200 {
		wg.Go(func() {
			before := n.Load()
			got, err := c.Wait(context.Background(), send)
			if err != nil {
				t.Error(err)
			}
			if got <= before {
				t.Errorf("the answer of call %d, sent before the wait began (%d calls then)", got, before)
			}
		})
	}
	wg.Wait()
	if s := c.Sent(); s >= 200 || s == 0 {
		t.Errorf("200 waiters made %d calls, want fewer and some", s)
	}
}

// TestCancel: a waiter whose context ends stops waiting with its cause.
func TestCancel(t *testing.T) {
	c := &Calls[int]{}
	block := make(chan struct{})
	ctx, cancel := context.WithCancelCause(context.Background())
	cause := context.DeadlineExceeded
	cancel(cause)
	if _, err := c.Wait(ctx, func() int { <-block; return 1 }); err != cause {
		t.Errorf("Wait after cancel = %v, want %v", err, cause)
	}
	close(block)
}
