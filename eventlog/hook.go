package eventlog

import (
	"context"
	"time"

	"github.com/followgraph/followgraph"
)

// hookTimeout bounds how long Hook's publish waits for the log when the
// write's context has no deadline (a relay's publishes).
const hookTimeout = 10 * time.Second

// Hook returns the engines' hook that makes a change durable: the change
// is acknowledged only once its event is stored in the log. The wait does
// not end when the caller's context is canceled (a client that went
// away): an event already sent may still be stored, and the engine must
// not drop a change the log keeps. Only the log's own failure or the
// context's deadline (hookTimeout when it has none) ends it early; then
// the write fails and its outcome is unknown, as for any write that was
// not acknowledged (a repeat of it is idempotent).
func (l *Log) Hook() followgraph.Hook {
	return func(ctx context.Context, e followgraph.Event) error {
		deadline, ok := ctx.Deadline()
		if !ok {
			deadline = time.Now().Add(hookTimeout)
		}
		ctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), deadline)
		defer cancel()
		return l.Publish(ctx, e)
	}
}
