package eventlog

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/followgraph/followgraph"
)

// Publish stores e in the stream and returns when the server has
// acknowledged it (as stored, or as a duplicate of an event stored within
// DuplicateWindow), so it can serve as the engine's followgraph.Hook.
//
// Publishes are asynchronous underneath: concurrent callers share the
// connection and have many events in flight at once, each waiting only
// for its own acknowledgement.
//
// An event that fails Event.Validate returns that error and is not sent.
// Every other failure — not connected, closed, no acknowledgement before
// ctx ends, the server refusing the message — returns an EUnavailable
// error. Such an outcome is ambiguous when the message had left: the
// event may still be stored (see the package documentation).
func (l *Log) Publish(ctx context.Context, e followgraph.Event) error {
	return l.publish(ctx, e, e.ID())
}

// publish is Publish with the message id given.
func (l *Log) publish(ctx context.Context, e followgraph.Event, id string) error {
	if err := e.Validate(); err != nil {
		return fmt.Errorf("eventlog: publish: %w", err)
	}
	op := "publish " + id
	l.publishing.Add(1)
	defer l.publishing.Add(-1)
	if l.closed.Load() {
		return unavailable(op, errClosed)
	}
	if err := ctx.Err(); err != nil {
		return unavailable(op, err)
	}
	if err := l.Writable(ctx); err != nil {
		return fmt.Errorf("eventlog: %s: %w", op, err)
	}
	opts := []jetstream.PublishOpt{jetstream.WithMsgID(id)}
	if dl, ok := ctx.Deadline(); ok {
		wait := time.Until(dl)
		if wait <= 0 {
			return unavailable(op, context.DeadlineExceeded)
		}
		opts = append(opts, jetstream.WithStallWait(wait)) // when maxPubPending are in flight
	}
	m := &nats.Msg{Subject: subjectOf(l.cfg.Subject, e.Op), Data: encode(e), Header: nats.Header{}}
	f, err := l.js.PublishMsgAsync(m, opts...)
	if err != nil {
		return unavailable(op, err)
	}
	select {
	case ack := <-f.Ok():
		for {
			if seen := l.stored.Load(); ack.Sequence <= seen || l.stored.CompareAndSwap(seen, ack.Sequence) {
				return nil
			}
		}
	case err := <-f.Err():
		return unavailable(op, err)
	case <-l.ncClosed: // pending acks are failed on a reconnect, not on close
		return unavailable(op, nats.ErrConnectionClosed)
	case <-ctx.Done():
		return unavailable(op, ctx.Err())
	}
}

// LastStored returns the highest sequence any Publish of this Log was
// acknowledged with: the log is known to have stored everything up to it.
// 0 before the first.
func (l *Log) LastStored() uint64 { return l.stored.Load() }
