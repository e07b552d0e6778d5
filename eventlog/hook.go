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
	return l.hook("")
}

// RelayHook is Hook for the relay of an engine's outbox: its message id is
// the event id followed by "/relay", so that an event the write's own hook
// stored already is stored again, with a new sequence, rather than
// dropped as a duplicate. The relay settles a change in the engine (a
// Redis Cluster's second step) before it publishes it, and the new
// sequence is what tells that the settling is older than it (see
// redisgraph's checkpoints); the durable store applies the event a second
// time to no effect (versions). Relays repeating a batch still store it
// once.
func (l *Log) RelayHook() followgraph.Hook {
	return l.hook("/relay")
}

func (l *Log) hook(suffix string) followgraph.Hook {
	return func(ctx context.Context, e followgraph.Event) error {
		deadline, ok := ctx.Deadline()
		if !ok {
			deadline = time.Now().Add(hookTimeout)
		}
		ctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), deadline)
		defer cancel()
		return l.publish(ctx, e, e.ID()+suffix)
	}
}
