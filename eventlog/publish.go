package eventlog

import (
	"cmp"
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
// While no acknowledgement comes (a stream leader that died with the
// message, a connection dropped and made again to another server of a
// cluster) or the answer is a transient failure, Publish sends the event
// again with the same message id, so that the stream stores it once: for
// as long as ctx allows, and never later than the stream's duplicate
// window after the first send, less a margin.
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
	if r := l.cfg.Regions; r != nil && e.Version.Region() != l.regionIDs[r.Name] {
		return fmt.Errorf("eventlog: publish %s: its version is not region %s's (number %d): the engine must be given the region's number", id, r.Name, l.regionIDs[r.Name])
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
	giveUp := time.Now().Add(l.dupWindow - dupMargin)
	var opts []jetstream.PublishOpt
	if dl, ok := ctx.Deadline(); ok {
		wait := time.Until(dl)
		if wait <= 0 {
			return unavailable(op, context.DeadlineExceeded)
		}
		opts = append(opts, jetstream.WithStallWait(wait)) // when maxPubPending are in flight
		if dl.Before(giveUp) {
			giveUp = dl
		}
	}
	subject, data := subjectOf(l.pubPrefix(), e.Op), encode(e)
	send := func() (jetstream.PubAckFuture, error) {
		// A message of its own each time: the library may still be
		// sending the last one again (no responders).
		m := &nats.Msg{Subject: subject, Data: data, Header: nats.Header{}}
		return l.js.PublishMsgAsync(m, append(opts, jetstream.WithMsgID(id))...)
	}
	f, err := send()
	if err != nil {
		return unavailable(op, err)
	}
	var (
		ok    = f.Ok()
		fail  = f.Err()
		older = make(chan *jetstream.PubAck, 1) // the first ack of an earlier send
		sends = 1
		last  error // why the last send failed
	)
	timer := time.NewTimer(resendDelay(sends))
	defer timer.Stop()
	for {
		var ack *jetstream.PubAck
		select {
		case ack = <-ok:
		case ack = <-older:
		case err := <-fail:
			if !transient(err) {
				return unavailable(op, err)
			}
			last, ok, fail = err, nil, nil
			timer.Reset(min(time.Until(giveUp), retryBase)) // send again soon
			continue
		case <-timer.C:
			if time.Now().After(giveUp) {
				return unavailable(op, cmp.Or(last, error(jetstream.ErrAsyncPublishTimeout)))
			}
			if fail != nil { // the last send is unanswered: its ack still counts
				go forwardAck(f, older, l.ncClosed)
			}
			if f, err = send(); err != nil {
				if !transient(err) {
					return unavailable(op, err)
				}
				last, ok, fail = err, nil, nil
			} else {
				ok, fail = f.Ok(), f.Err()
			}
			sends++
			timer.Reset(min(time.Until(giveUp), resendDelay(sends)))
			continue
		case <-l.ncClosed: // pending acks are failed on a reconnect, not on close
			return unavailable(op, nats.ErrConnectionClosed)
		case <-ctx.Done():
			return unavailable(op, ctx.Err())
		}
		if l.cfg.Regions == nil { // with regions, the sequence is the export stream's, not the log's
			l.noteStored(ack.Sequence)
		}
		return nil
	}
}

// noteStored raises the highest sequence a Publish was acknowledged with
// to seq.
func (l *Log) noteStored(seq uint64) {
	for {
		if seen := l.stored.Load(); seq <= seen || l.stored.CompareAndSwap(seen, seq) {
			return
		}
	}
}

// Publish sends an event again after resendDelay without an answer, and
// stops dupMargin short of the duplicate window.
const dupMargin = 10 * time.Second

// resendDelay is how long Publish waits for the answer to its nth send
// before sending again: a second, then two.
func resendDelay(sends int) time.Duration {
	return min(time.Duration(sends)*time.Second, 2*time.Second)
}

// forwardAck hands f's acknowledgement, if one comes, to acks, and
// returns when f is answered or the connection closed.
func forwardAck(f jetstream.PubAckFuture, acks chan<- *jetstream.PubAck, closed <-chan struct{}) {
	select {
	case ack := <-f.Ok():
		select {
		case acks <- ack:
		default: // another earlier send was acknowledged
		}
	case <-f.Err():
	case <-closed:
	}
}

// LastStored returns the highest sequence any Publish of this Log was
// acknowledged with: the log is known to have stored everything up to it.
// 0 before the first.
func (l *Log) LastStored() uint64 { return l.stored.Load() }
