package httpapi

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// deadlineCtx is a request's context with its deadline, whose timer is
// made only when something waits on it. context.WithTimeout starts a
// timer and registers a child with the connection's context for every
// request, which a read answered from memory (memgraph) never waits on;
// that was ~4% of a read's CPU. Deadline reports the deadline at once, so
// whatever bounds its own waits by it needs nothing more; Done (which
// context.WithDeadline and the like call on their parent) makes the real
// context, which answers from then on.
type deadlineCtx struct {
	context.Context // the request's own
	deadline        time.Time

	once  sync.Once
	timed atomic.Pointer[timedCtx] // made by Done
}

type timedCtx struct {
	context.Context
	stop context.CancelFunc
}

// closedCtx is what Done answers after the request's end.
var closedCtx = func() *timedCtx {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return &timedCtx{Context: ctx, stop: func() {}}
}()

func (c *deadlineCtx) Deadline() (time.Time, bool) {
	if dl, ok := c.Context.Deadline(); ok && dl.Before(c.deadline) {
		return dl, true
	}
	return c.deadline, true
}

func (c *deadlineCtx) Done() <-chan struct{} {
	c.once.Do(func() {
		ctx, stop := context.WithDeadline(c.Context, c.deadline)
		c.timed.Store(&timedCtx{Context: ctx, stop: stop})
	})
	return c.timed.Load().Done()
}

func (c *deadlineCtx) Err() error {
	if t := c.timed.Load(); t != nil {
		return t.Err()
	}
	if err := c.Context.Err(); err != nil {
		return err
	}
	if !time.Now().Before(c.deadline) {
		return context.DeadlineExceeded
	}
	return nil
}

// cancel ends the context at the request's end, releasing the timer if
// one was made.
func (c *deadlineCtx) cancel() {
	c.once.Do(func() { c.timed.Store(closedCtx) })
	c.timed.Load().stop()
}
