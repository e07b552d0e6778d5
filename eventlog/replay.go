package eventlog

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/synadia-io/orbit.go/jetstreamext"
)

// replayBatch is how many messages Replay asks for at a time, and
// readTimeout how long it waits for one read's answer.
const (
	replayBatch = 1024
	readTimeout = 30 * time.Second
)

// Replay calls fn with every event in the stream, in order, up to the
// last sequence stored when Replay started, and returns nil. Under
// workqueue retention the stream holds exactly the events the persister
// has not acknowledged, so replaying it whole over the durable store
// brings an engine up to date. With a persister running meanwhile, read
// the log before the store (recovery.Load): an event it moves from the log
// to the store between the two reads is then in the store's read.
//
// Replay reads without a consumer, which a workqueue stream would refuse
// beside the persister's, with direct gets (stream AllowDirect): batched
// on servers 2.11 and later, one round trip per event before (docs/design/eventlog.md, "Replay's direct gets").
//
// A message that is not a valid event is logged, counted and skipped.
// Replay stops at the first error of fn and returns it wrapped; a log that
// cannot be read returns EUnavailable.
func (l *Log) Replay(ctx context.Context, fn func(Message) error) error {
	if l.closed.Load() {
		return unavailable("replay", errClosed)
	}
	info, err := l.stream.Info(ctx)
	if err != nil {
		return unavailable("replay", err)
	}
	last := info.State.LastSeq
	next := max(1, info.State.FirstSeq)
	batched := true
	for next <= last {
		var msgs []*jetstream.RawStreamMsg
		if batched {
			msgs, err = l.getBatch(ctx, next)
			if errors.Is(err, jetstreamext.ErrBatchUnsupported) {
				batched = false // and once more, alone
			}
		}
		if !batched {
			msgs, err = l.getNext(ctx, next)
		}
		if err != nil {
			return unavailable("replay", err)
		}
		if len(msgs) == 0 {
			return nil
		}
		for _, m := range msgs {
			if m.Sequence > last {
				return nil
			}
			next = m.Sequence + 1
			e, foreign, err := l.decode(m.Subject, m.Data)
			if err != nil {
				l.skipUndecodable(m.Sequence, m.Subject, m.Data, err)
				continue
			}
			if err := fn(Message{Seq: m.Sequence, Event: e, Foreign: foreign}); err != nil {
				return fmt.Errorf("eventlog: replay: at seq %d: %w", m.Sequence, err)
			}
		}
	}
	return nil
}

// getBatch returns up to replayBatch messages from sequence from on, read
// with one batched direct get (ADR-31); none when the stream holds nothing
// at or after from. A server before 2.11 returns ErrBatchUnsupported.
func (l *Log) getBatch(ctx context.Context, from uint64) ([]*jetstream.RawStreamMsg, error) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	batch, err := jetstreamext.GetBatch(ctx, l.js, l.name(), replayBatch,
		jetstreamext.GetBatchSeq(from), jetstreamext.GetBatchSubject(l.subject))
	if err != nil {
		return nil, fmt.Errorf("direct get from seq %d: %w", from, err)
	}
	var out []*jetstream.RawStreamMsg
	for m, err := range batch {
		if errors.Is(err, jetstreamext.ErrNoMessages) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("direct get from seq %d: %w", from, err)
		}
		out = append(out, m)
	}
	// The batch ends silently when ctx expires: only a batch read to its
	// end-of-batch message is whole.
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("direct get from seq %d: %w", from, err)
	}
	return out, nil
}

// getNext returns the first message at or after sequence from, read with
// one direct get; none when the stream holds nothing there.
func (l *Log) getNext(ctx context.Context, from uint64) ([]*jetstream.RawStreamMsg, error) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	m, err := l.stream.GetMsg(ctx, from, jetstream.WithGetMsgSubject(l.subject))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("direct get from seq %d: %w", from, err)
	}
	return []*jetstream.RawStreamMsg{m}, nil
}
