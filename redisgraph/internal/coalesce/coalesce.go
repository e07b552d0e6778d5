// Package coalesce shares one call among the goroutines that wait for
// its answer: the checks that acknowledge writes (one check of a slot's
// marker answers every write that waits for it) and the read index of
// replica reads (one offset call to a master answers every read that
// waits for it).
package coalesce

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Calls makes calls of one kind, one at a time, for whoever waits: a
// waiter gets the answer of a call sent after it began to wait, and one
// goroutine sends the calls one after another, each once every waiter
// that takes its answer arrived, at most one every Gap. Under load one
// call answers many waiters; a waiter alone waits for one call, or for
// the end of the one in flight and then its own. The zero Calls is ready
// to use.
type Calls[T any] struct {
	Gap time.Duration // the least time between two calls

	mu        sync.Mutex
	scheduled bool     // a goroutine sends the calls
	next      *call[T] // the call the waiters arriving now take
	lastSent  time.Time
	sent      atomic.Uint64
}

type call[T any] struct {
	done   chan struct{}
	answer T
}

// Wait returns the answer of a call of send sent after Wait was called,
// or ctx's error if ctx ends first: Join(send).Wait(ctx).
func (c *Calls[T]) Wait(ctx context.Context, send func() T) (T, error) {
	return c.Join(send).Wait(ctx)
}

// Join joins the next call, which is sent after Join returns, and
// returns its answer to come. send is called from another goroutine; of
// the sends of the waiters that share a call, one is called.
func (c *Calls[T]) Join(send func() T) *Answer[T] {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.next == nil {
		c.next = &call[T]{done: make(chan struct{})}
	}
	x := c.next
	if !c.scheduled {
		c.scheduled = true
		go c.fire(send)
	}
	return (*Answer[T])(x)
}

// Answer is the answer of a call joined.
type Answer[T any] call[T]

// Wait returns the answer, or ctx's error if ctx ends first.
func (a *Answer[T]) Wait(ctx context.Context) (T, error) {
	select {
	case <-a.done:
		return a.answer, nil
	case <-ctx.Done():
		var zero T
		return zero, context.Cause(ctx)
	}
}

// fire sends the calls while waiters wait for one.
func (c *Calls[T]) fire(send func() T) {
	for {
		c.mu.Lock()
		wait := time.Until(c.lastSent.Add(c.Gap))
		c.mu.Unlock()
		if wait > 0 {
			time.Sleep(wait)
		}
		c.mu.Lock()
		x := c.next
		c.next, c.lastSent = nil, time.Now()
		c.mu.Unlock()
		c.sent.Add(1)
		x.answer = send()
		close(x.done)
		c.mu.Lock()
		if c.next == nil {
			c.scheduled = false
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
	}
}

// Sent returns how many calls were sent.
func (c *Calls[T]) Sent() uint64 { return c.sent.Load() }
