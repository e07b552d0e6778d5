package httpapi

import (
	"context"
	"errors"
	"testing"
	"time"
)

func withDeadline(parent context.Context, d time.Duration) *deadlineCtx {
	return &deadlineCtx{Context: parent, deadline: time.Now().Add(d)}
}

func TestDeadlineCtx(t *testing.T) {
	t.Run("NoWaiter", func(t *testing.T) {
		c := withDeadline(context.Background(), 20*time.Millisecond)
		if dl, ok := c.Deadline(); !ok || time.Until(dl) > 20*time.Millisecond {
			t.Fatalf("Deadline = %v, %v", dl, ok)
		}
		if c.Err() != nil {
			t.Fatalf("Err before the deadline: %v", c.Err())
		}
		time.Sleep(30 * time.Millisecond)
		if !errors.Is(c.Err(), context.DeadlineExceeded) {
			t.Fatalf("Err after the deadline: %v", c.Err())
		}
		if c.timed.Load() != nil {
			t.Fatal("a timer was made though nothing waited")
		}
		c.cancel()
		if !errors.Is(c.Err(), context.Canceled) {
			t.Fatalf("Err after cancel: %v", c.Err())
		}
		select {
		case <-c.Done():
		default:
			t.Fatal("Done after cancel is not closed")
		}
	})
	t.Run("Waiter", func(t *testing.T) {
		c := withDeadline(context.Background(), 20*time.Millisecond)
		defer c.cancel()
		child, stop := context.WithTimeout(c, time.Hour) // the deadline is the parent's
		defer stop()
		select {
		case <-child.Done():
		case <-time.After(2 * time.Second):
			t.Fatal("the child did not end at the parent's deadline")
		}
		if !errors.Is(child.Err(), context.DeadlineExceeded) || !errors.Is(c.Err(), context.DeadlineExceeded) {
			t.Fatalf("errors: child %v, parent %v", child.Err(), c.Err())
		}
	})
	t.Run("ParentCanceled", func(t *testing.T) {
		parent, cancel := context.WithCancel(context.WithValue(context.Background(), connKey{}, 7))
		c := withDeadline(parent, time.Hour)
		defer c.cancel()
		if c.Value(connKey{}) != 7 {
			t.Fatal("values of the parent are not seen")
		}
		done := c.Done()
		cancel()
		select {
		case <-done:
		case <-time.After(2 * time.Second):
			t.Fatal("Done did not close with the parent")
		}
		if !errors.Is(c.Err(), context.Canceled) {
			t.Fatalf("Err = %v", c.Err())
		}
	})
}

// BenchmarkDeadline: a request's deadline context as the server makes it
// (no timer unless something waits), against context.WithTimeout.
func BenchmarkDeadline(b *testing.B) {
	parent, cancel := context.WithCancel(context.Background()) // as net/http's per-connection context
	defer cancel()
	b.Run("Lazy", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c := withDeadline(parent, 5*time.Second)
			_ = c.Err()
			c.cancel()
		}
	})
	b.Run("WithTimeout", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c, stop := context.WithTimeout(parent, 5*time.Second)
			_ = c.Err()
			stop()
		}
	})
}
