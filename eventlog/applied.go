package eventlog

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The applied window. The stream is a work queue: an event leaves it once
// the durable store holds it. A hot copy that may come back behind what
// was acknowledged without losing everything (a Redis replica promoted
// after its master died, a Redis restarted from an append-only file that
// lacks its last second) needs the events of the last moments whatever
// the store has applied, to replay them. So when Config.KeepApplied is
// set, the persister copies each batch it applied into a second stream,
// <Stream>_APPLIED (KeepApplied, before it acknowledges the batch), which
// keeps the batches of the last AppliedWindow. Since reads an event range
// from both streams.
//
// One message is one batch: header Fg-First and Fg-Last name the
// sequences of its first and last events in the stream, and the body has
// one line per event, "<sequence> <the event's JSON, as in the stream>".

// AppliedWindow is how long the applied window keeps a batch.
const AppliedWindow = 5 * time.Minute

// Headers of an applied batch.
const (
	hdrFirst = "Fg-First"
	hdrLast  = "Fg-Last"
)

// appliedName returns the name of the applied window's stream.
func (l *Log) appliedName() string { return l.name() + "_APPLIED" }

// appliedSubject returns its subject, outside the stream's "<Subject>.>".
func (l *Log) appliedSubject() string { return l.cfg.Subject + "_applied" }

// ensureApplied creates the applied window's stream if it is missing.
func (l *Log) ensureApplied(ctx context.Context) error {
	cfg := jetstream.StreamConfig{
		Name:        l.appliedName(),
		Description: "followgraph: the batches the persister applied, for a hot copy that came back behind (package eventlog)",
		Subjects:    []string{l.appliedSubject()},
		Retention:   jetstream.LimitsPolicy,
		Storage:     jetstream.FileStorage,
		Replicas:    l.cfg.Replicas,
		MaxAge:      AppliedWindow,
		Discard:     jetstream.DiscardOld,
		AllowDirect: true,
	}
	// Tried again while the log is unavailable, as the stream is (retry).
	return l.retry(ctx, "stream "+cfg.Name, func(ctx context.Context) error {
		s, err := l.js.Stream(ctx, cfg.Name)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			s, err = l.js.CreateStream(ctx, cfg)
			if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) { // created meanwhile by another node
				s, err = l.js.Stream(ctx, cfg.Name)
			}
		}
		if err != nil {
			return err
		}
		l.applied = s
		return nil
	})
}

// KeepApplied copies batch, which the durable store has applied, into
// the applied window; the persister calls it before it acknowledges the
// batch. It does nothing when Config.KeepApplied is not set or batch is
// empty, and returns EUnavailable when the log does not store the copy.
func (l *Log) KeepApplied(ctx context.Context, batch []Message) error {
	if l.applied == nil || len(batch) == 0 {
		return nil
	}
	var body bytes.Buffer
	for _, m := range batch {
		body.WriteString(strconv.FormatUint(m.Seq, 10))
		body.WriteByte(' ')
		body.Write(encode(m.Event))
		body.WriteByte('\n')
	}
	first, last := batch[0].Seq, batch[len(batch)-1].Seq
	msg := &nats.Msg{Subject: l.appliedSubject(), Data: body.Bytes(), Header: nats.Header{}}
	msg.Header.Set(hdrFirst, strconv.FormatUint(first, 10))
	msg.Header.Set(hdrLast, strconv.FormatUint(last, 10))
	// A batch delivered again and applied again is kept once.
	msg.Header.Set(nats.MsgIdHdr, "applied-"+strconv.FormatUint(first, 10)+"-"+strconv.FormatUint(last, 10))
	if _, err := l.js.PublishMsg(ctx, msg); err != nil {
		return unavailable("keeping an applied batch", err)
	}
	return nil
}

// LastSeq returns the stream's last sequence: every event stored so far
// has a sequence up to it.
func (l *Log) LastSeq(ctx context.Context) (uint64, error) {
	if l.closed.Load() {
		return 0, unavailable("last sequence", errClosed)
	}
	info, err := l.stream.Info(ctx)
	if err != nil {
		return 0, unavailable("last sequence", err)
	}
	return info.State.LastSeq, nil
}

// Settled returns a sequence of the log up to which every event is in
// the engine, as a Redis checkpoint claims (recovery's KeepCheckpoints).
// In one region that is LastSeq: a change is made in the engine before its
// event is published. With regions, another region's event reaches the
// engine only when the persister applies it, after it is in the log: so
// the sequence before the first event the log still holds, which the
// persister has not acknowledged, or LastSeq when it holds none.
func (l *Log) Settled(ctx context.Context) (uint64, error) {
	if l.cfg.Regions == nil {
		return l.LastSeq(ctx)
	}
	if l.closed.Load() {
		return 0, unavailable("settled", errClosed)
	}
	info, err := l.stream.Info(ctx)
	if err != nil {
		return 0, unavailable("settled", err)
	}
	if st := info.State; st.Msgs > 0 && st.FirstSeq > 0 {
		return min(st.LastSeq, st.FirstSeq-1), nil
	}
	return info.State.LastSeq, nil
}

// Since calls fn with every event whose sequence is above after that the
// stream and the applied window hold (the stream's first, then the
// window's, each in order; an event may come twice), and returns the
// highest sequence it read up to, and whether every event after after is
// among those: false when neither the stream nor the window (which keeps
// AppliedWindow; none without Config.KeepApplied) reaches back to after.
// Stop at fn's first error and return it.
//
// The stream is read before the window: the persister copies a batch into
// the window before it removes it from the stream, so an event it moves
// between the two reads is in the second.
func (l *Log) Since(ctx context.Context, after uint64, fn func(Message) error) (upTo uint64, complete bool, err error) {
	if l.closed.Load() {
		return 0, false, unavailable("since", errClosed)
	}
	info, err := l.stream.Info(ctx)
	if err != nil {
		return 0, false, unavailable("since", err)
	}
	st := info.State
	upTo = max(after, st.LastSeq)
	first := st.FirstSeq
	if st.Msgs == 0 {
		first = st.LastSeq + 1
	}
	// What the stream holds reaches back to after, or the window must.
	complete = first <= after+1
	if err := l.Replay(ctx, func(m Message) error {
		if m.Seq <= after {
			return nil
		}
		upTo = max(upTo, m.Seq)
		return fn(m)
	}); err != nil {
		return 0, false, err
	}
	if l.applied != nil {
		reached, err := l.windowSince(ctx, after, fn)
		if err != nil {
			return 0, false, err
		}
		complete = complete || reached
	}
	return upTo, complete, nil
}

// windowSince calls fn with the events of the applied window above after,
// and reports whether the window reaches back to after: its oldest batch
// begins at or before after+1.
func (l *Log) windowSince(ctx context.Context, after uint64, fn func(Message) error) (reached bool, err error) {
	cons, err := l.applied.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	if err != nil {
		return false, unavailable("reading the applied window", err)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return false, unavailable("reading the applied window", err)
	}
	left := info.NumPending
	oldest := true
	for left > 0 {
		batch, err := cons.Fetch(int(min(left, 64)), jetstream.FetchMaxWait(readTimeout))
		if err != nil {
			return false, unavailable("reading the applied window", err)
		}
		got := 0
		for m := range batch.Messages() {
			got++
			left--
			h := m.Headers()
			firstSeq, err1 := strconv.ParseUint(h.Get(hdrFirst), 10, 64)
			lastSeq, err2 := strconv.ParseUint(h.Get(hdrLast), 10, 64)
			if err := errors.Join(err1, err2); err != nil {
				return false, fmt.Errorf("eventlog: applied window: a batch without its sequences: %w", err)
			}
			if oldest {
				reached, oldest = firstSeq <= after+1, false
			}
			if lastSeq <= after {
				continue
			}
			if err := eachApplied(m.Data(), after, fn); err != nil {
				return false, err
			}
		}
		if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) {
			return false, unavailable("reading the applied window", err)
		}
		if got == 0 {
			break // expired under us: what was read is what there is
		}
	}
	return reached || oldest && l.windowEmptyReaches(ctx, after), nil
}

// windowEmptyReaches reports, for an empty window, whether nothing after
// after was ever applied: the stream's persister would have kept it.
func (l *Log) windowEmptyReaches(ctx context.Context, after uint64) bool {
	info, err := l.stream.Info(ctx)
	if err != nil {
		return false
	}
	first := info.State.FirstSeq
	if info.State.Msgs == 0 {
		first = info.State.LastSeq + 1
	}
	return first <= after+1
}

// eachApplied calls fn with the events of an applied batch's body whose
// sequences are above after.
func eachApplied(body []byte, after uint64, fn func(Message) error) error {
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		i := bytes.IndexByte(line, ' ')
		if i < 0 {
			return fmt.Errorf("eventlog: applied window: line %q", line)
		}
		seq, err := strconv.ParseUint(string(line[:i]), 10, 64)
		if err != nil {
			return fmt.Errorf("eventlog: applied window: line %q: %w", line, err)
		}
		if seq <= after {
			continue
		}
		e, err := decodeBody(line[i+1:])
		if err != nil {
			return fmt.Errorf("eventlog: applied window: at seq %d: %w", seq, err)
		}
		if err := fn(Message{Seq: seq, Event: e}); err != nil {
			return err
		}
	}
	return sc.Err()
}
