package eventlog

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// replayBatch is how many messages Replay asks for at a time.
const replayBatch = 1024

// Replay calls fn with every event in the stream, in order, up to the
// last sequence stored when Replay started, and returns nil. Under
// workqueue retention the stream holds exactly the events the persister
// has not acknowledged, so replaying it whole over the durable store
// brings an engine up to date. With a persister running meanwhile, read
// the log before the store (recovery.Load): an event it moves from the log
// to the store between the two reads is then in the store's read.
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
	for next <= last {
		raw, err := l.directGet(ctx, next)
		if err != nil {
			return unavailable("replay", err)
		}
		if len(raw) == 0 {
			return nil
		}
		for _, r := range raw {
			if r.seq > last {
				return nil
			}
			next = r.seq + 1
			e, err := decode(l.cfg.Subject, r.subject, r.data)
			if err != nil {
				l.skipUndecodable(r.seq, r.subject, r.data, err)
				continue
			}
			if err := fn(Message{Seq: r.seq, Event: e}); err != nil {
				return fmt.Errorf("eventlog: replay: at seq %d: %w", r.seq, err)
			}
		}
	}
	return nil
}

type rawMsg struct {
	seq     uint64
	subject string
	data    []byte
}

// directGet reads up to replayBatch messages from sequence from on, with
// one batched direct get (ADR-31, stream AllowDirect). It reads without a
// consumer, which a workqueue stream would refuse beside the persister's.
// Servers before 2.11 answer one message per request: Replay still works,
// at one round trip per event.
func (l *Log) directGet(ctx context.Context, from uint64) ([]rawMsg, error) {
	req, err := json.Marshal(struct {
		Seq     uint64 `json:"seq"`
		NextFor string `json:"next_by_subj"`
		Batch   int    `json:"batch"`
	}{from, l.subject, replayBatch})
	if err != nil {
		return nil, err
	}
	inbox := l.nc.NewInbox()
	sub, err := l.nc.SubscribeSync(inbox)
	if err != nil {
		return nil, err
	}
	defer sub.Unsubscribe()
	if err := l.nc.PublishRequest("$JS.API.DIRECT.GET."+l.cfg.Stream, inbox, req); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var out []rawMsg
	for {
		m, err := sub.NextMsgWithContext(ctx)
		if err != nil {
			return nil, fmt.Errorf("direct get from seq %d: %w", from, err)
		}
		if status := m.Header.Get("Status"); status != "" {
			switch status {
			case "204", "404": // end of batch; nothing at or after from
				return out, nil
			case "503":
				return nil, nats.ErrNoResponders
			}
			return nil, fmt.Errorf("direct get from seq %d: status %s %s", from, status, m.Header.Get("Description"))
		}
		seq, err := strconv.ParseUint(m.Header.Get(jetstream.SequenceHeader), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("direct get from seq %d: bad sequence header %q", from, m.Header.Get(jetstream.SequenceHeader))
		}
		out = append(out, rawMsg{seq: seq, subject: m.Header.Get(jetstream.SubjectHeader), data: m.Data})
		if m.Header.Get("Nats-Num-Pending") == "" {
			// A server before 2.11 ignores batch and answers with one
			// message and no end-of-batch marker.
			return out, nil
		}
	}
}
