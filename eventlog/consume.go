package eventlog

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/internal/pause"
)

// Message is an event with its stream sequence. Sequences grow in the
// order the log stored the events.
type Message struct {
	Seq   uint64
	Event followgraph.Event
	// Foreign is true for an event of another region (Config.Regions),
	// which the engine here has not applied.
	Foreign bool
}

// Back-off of Consume after a failed batch: the batch is redelivered after
// retryBase, doubling with each consecutive failure up to retryMax. The
// cap bounds how long the persister stays idle after the store is back
// (docs/RELIABILITY.md); a retry every 5 s costs a down store nothing.
const (
	retryBase = 250 * time.Millisecond
	retryMax  = 5 * time.Second
)

// ackTimeout bounds the wait for the confirmation of a batch's acks.
const ackTimeout = 10 * time.Second

// defaultAckWait is the ack wait of the consumers Consume creates: a batch
// whose consumer vanished (a crashed process) is redelivered after it; a
// slow handle reports progress every third of it.
const defaultAckWait = 5 * time.Second

func retryDelay(failures int) time.Duration {
	d := retryBase
	for i := 1; i < failures && d < retryMax; i++ {
		d *= 2
	}
	return min(d, retryMax)
}

// Consume runs the durable pull consumer named durable until ctx ends,
// then returns nil. It delivers the stream's events to handle in batches
// of up to max messages, or of whatever arrived within wait, with last,
// the highest stream sequence the batch covers. Batches follow stream
// order, and each is sorted by sequence, except that a redelivered event
// comes after events delivered before its redelivery.
//
// When handle returns nil the whole batch is acknowledged (even if ctx
// ended meanwhile), and the stream (workqueue retention) removes those
// events; Consume waits up to 10s for the server to confirm the
// acknowledgements before going on. When handle returns an error nothing
// of the batch is acknowledged: the server redelivers it after a back-off
// of 250ms, doubling with each consecutive failure up to 5s, and
// delivers nothing newer meanwhile (one batch is in flight at a time). A
// batch that is never answered (the process died) is redelivered once the
// consumer's ack wait, 5s, has passed since its delivery or since the last
// progress report: while handle runs, Consume tells the server every third
// of the ack wait that the batch is in progress, so a slow handle is not
// redelivered meanwhile.
// Delivery is at least once: handle must be idempotent (the persister's
// versioned upserts are).
//
// The stream admits one consumer: a second durable name is refused.
// Several processes may run Consume with the same durable name; they take
// turns with the batches. A message that is not a valid event is logged,
// counted (see Undecodable) and never handed to handle, but it is part of
// its batch: covered by last, acknowledged with the batch and redelivered
// with it (so handle may get no event, only last). The persister records
// last with the batch, so that every sequence the stream no longer holds
// is one the record covers (the start-up check relies on it).
//
// The log being unavailable for a while (NATS restarting, a stream or
// consumer leader being elected in a cluster) stops nothing: creating
// the consumer, pulling and acknowledging are tried again until they
// work, with one line logged when such an outage begins and one when it
// ends. Consume returns an error when its arguments are invalid, when
// the consumer is refused for another reason (the stream has another
// consumer), or when the log is closed.
func (l *Log) Consume(ctx context.Context, durable string, max int, wait time.Duration, handle func(ctx context.Context, batch []Message, last uint64) error) error {
	switch {
	case !validName(durable):
		return fmt.Errorf("eventlog: consume: invalid durable name %q", durable)
	case max < 1:
		return fmt.Errorf("eventlog: consume: max %d must be at least 1", max)
	case wait <= 0:
		return fmt.Errorf("eventlog: consume: wait %s must be positive", wait)
	}
	op := "consume " + durable
	if l.closed.Load() {
		return unavailable(op, errClosed)
	}
	down := &outage{log: l.log.With("consumer", durable), what: "reading the event log"}
	cons, err := l.consumer(ctx, durable, max, down)
	if err != nil || cons == nil {
		return err
	}
	failures := 0
	// How many to ask for (see fetch): at first, the backlog the consumer
	// has; then what the last batch's last message says waits behind it.
	want := max
	if info, err := cons.Info(ctx); err == nil {
		want = int(min(uint64(max), info.NumPending))
		want = cmp.Or(want, 1)
		l.dropAcked(ctx)
	}
	for {
		raw, err := l.fetch(ctx, cons, want, wait)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			if l.closed.Load() || l.nc.IsClosed() {
				return unavailable(op, err)
			}
			failures++
			down.failed(err)
			if errors.Is(err, jetstream.ErrConsumerNotFound) || errors.Is(err, jetstream.ErrConsumerDeleted) {
				if cons, err = l.consumer(ctx, durable, max, down); err != nil || cons == nil {
					return err
				}
			}
			_ = pause.For(ctx, retryDelay(failures))
			continue
		}
		down.ok()
		if len(raw) == 0 {
			continue
		}
		if l.handleBatch(ctx, durable, raw, handle, failures+1, down) {
			failures = 0
			want = waiting(raw[len(raw)-1], max)
		} else {
			failures++
			want = max
		}
	}
}

// consumer creates (or finds) the durable consumer of Consume, trying
// again while the log is unavailable, until ctx ends (then it returns
// nil, nil).
func (l *Log) consumer(ctx context.Context, durable string, max int, down *outage) (jetstream.Consumer, error) {
	op := "consume " + durable
	for failures := 1; ; failures++ {
		cons, err := l.stream.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
			Durable:       durable,
			Description:   "followgraph persister",
			DeliverPolicy: jetstream.DeliverAllPolicy,
			AckPolicy:     jetstream.AckExplicitPolicy,
			AckWait:       l.ackWait,
			MaxDeliver:    -1,
			// One batch in flight: a failing batch is retried before anything
			// newer is delivered, instead of the log draining around it.
			MaxAckPending: max,
		})
		switch {
		case ctx.Err() != nil:
			return nil, nil
		case err == nil:
			return cons, nil
		case errors.Is(err, jetstream.ErrConsumerNameAlreadyInUse) || isWQNotUnique(err):
			return nil, fmt.Errorf("eventlog: %s: the stream already has another consumer, and a workqueue stream has exactly one persister: %w", op, err)
		case !transient(err) || l.closed.Load() || l.nc.IsClosed():
			return nil, unavailable(op, err)
		}
		down.failed(fmt.Errorf("creating the consumer: %w", err))
		_ = pause.For(ctx, retryDelay(failures))
	}
}

// outage logs a run of failures of one kind as one warning when it
// begins and one line when it ends, however long it lasts (the tries in
// between are logged at debug level).
type outage struct {
	log   *slog.Logger
	what  string
	since time.Time
	count int
}

func (o *outage) failed(err error) {
	o.count++
	if o.count > 1 {
		o.log.Debug(o.what+" failed again", "failures", o.count, "err", err)
		return
	}
	o.since = time.Now()
	o.log.Warn(o.what+" failed; trying again until it works (one line until then)", "err", err)
}

func (o *outage) ok() {
	if o.count == 0 {
		return
	}
	o.log.Info(o.what+" works again", "failures", o.count, "after", time.Since(o.since).Round(time.Millisecond).String())
	o.count = 0
}

// dropAcked removes from the stream the messages up to the consumer's
// ack floor that it still holds. Every one of them was
// acknowledged, so persisted, and a work queue should have dropped it;
// one the server failed to drop (its disk was full, a file of it was
// repaired) would stay for good, never delivered again, and the backlog
// would never reach 0.
func (l *Log) dropAcked(ctx context.Context) {
	var floor uint64
	found := false
	for c := range l.stream.ListConsumers(ctx).Info() {
		if !found || c.AckFloor.Stream < floor {
			floor, found = c.AckFloor.Stream, true
		}
	}
	if !found {
		return
	}
	info, err := l.stream.Info(ctx)
	if err != nil || info.State.Msgs == 0 || info.State.FirstSeq > floor {
		return
	}
	n := info.State.Msgs
	if err := l.stream.Purge(ctx, jetstream.WithPurgeSequence(floor+1)); err != nil {
		l.log.Warn("removing messages already acknowledged failed", "through_seq", floor, "err", err)
		return
	}
	if after, err := l.stream.Info(ctx); err == nil {
		n -= after.State.Msgs
	}
	l.log.Warn("removed messages already acknowledged (so already persisted) that the stream still held", "through_seq", floor, "messages", n)
}

// waiting returns how many messages to ask for after m, the last of a
// batch handled: as many as the server said were waiting behind it when
// it delivered m (its metadata's pending count), 1 to max.
func waiting(m jetstream.Msg, max int) int {
	md, err := m.Metadata()
	if err != nil || md.NumPending == 0 {
		return 1
	}
	return int(min(uint64(max), md.NumPending))
}

// isWQNotUnique reports the server's refusal of a second consumer on a
// workqueue stream (errors 10099 and 10100, which nats.go does not name).
func isWQNotUnique(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && (apiErr.ErrorCode == 10099 || apiErr.ErrorCode == 10100)
}

// fetch returns up to n messages that arrive within wait. Consume asks
// for as many as were waiting after its last batch (the last message's
// metadata says how many), or for one when none were, so that the pull
// ends as soon as they are delivered: a pull for more messages than are
// there ends only when the server expires it, and it does so coarsely,
// which would add most of wait to an event's time from write to store
// (docs/BENCHMARKS.md has the figures). After a failed batch Consume asks for a full one and waits: the failed
// batch must come back before anything newer.
//
// The server ends a pull after wait and the client reads until that end,
// so that no message is delivered to a pull the client has given up on (it
// would stay unacknowledged until the ack wait and, with one batch in
// flight, hold up the consumer as long). When ctx ends first, what arrived
// and what still arrives is handed back to the server at once.
func (l *Log) fetch(ctx context.Context, cons jetstream.Consumer, n int, wait time.Duration) ([]jetstream.Msg, error) {
	b, err := cons.Fetch(n, jetstream.FetchMaxWait(wait))
	if err != nil {
		return nil, err
	}
	return collect(ctx, b)
}

// collect reads the messages of one pull to its end.
func collect(ctx context.Context, b jetstream.MessageBatch) ([]jetstream.Msg, error) {
	var raw []jetstream.Msg
	msgs := b.Messages()
	for {
		select {
		case m, ok := <-msgs:
			if !ok {
				return raw, b.Error()
			}
			raw = append(raw, m)
		case <-ctx.Done():
			for _, m := range raw {
				_ = m.Nak()
			}
			go func() {
				for m := range msgs {
					_ = m.Nak()
				}
			}()
			return nil, ctx.Err()
		}
	}
}

// handleBatch decodes raw, hands the events to handle, and acknowledges
// or naks them all. It reports whether handle succeeded.
func (l *Log) handleBatch(ctx context.Context, durable string, raw []jetstream.Msg, handle func(context.Context, []Message, uint64) error, attempt int, down *outage) bool {
	batch := make([]Message, 0, len(raw))
	var last uint64
	for _, m := range raw {
		md, err := m.Metadata()
		if err != nil { // not from a consumer: cannot happen with Fetch
			l.log.Error("message without metadata", "subject", m.Subject(), "err", err)
			continue
		}
		seq := md.Sequence.Stream
		last = max(last, seq)
		e, foreign, err := l.decode(m.Subject(), m.Data())
		if err != nil {
			l.skipUndecodable(seq, m.Subject(), m.Data(), err)
			continue
		}
		batch = append(batch, Message{Seq: seq, Event: e, Foreign: foreign})
	}
	// Redelivered messages can come back out of order: sort by sequence.
	slices.SortFunc(batch, func(a, b Message) int { return cmp.Compare(a.Seq, b.Seq) })
	err := l.runHandle(ctx, raw, batch, last, handle)
	if err != nil {
		delay := retryDelay(attempt)
		if ctx.Err() != nil {
			delay = 0 // shutting down: let another instance take it at once
		}
		for _, m := range raw {
			_ = m.NakWithDelay(delay) // if lost, the ack wait redelivers
		}
		if ctx.Err() == nil {
			l.log.Warn("batch failed; it will be redelivered", "consumer", durable, "messages", len(raw),
				"last_seq", last, "retry_in", delay, "err", err)
		}
		return false
	}
	l.ack(raw, down)
	return true
}

// ack acknowledges msgs and waits for the server to confirm the last: it
// processes a consumer's acks in order, so then all are done. It does so
// even when Consume's context has ended, as handle's work is done. A
// failure (the consumer's leader changing) is harmless for the stored
// data: unconfirmed events are redelivered, and handle is idempotent.
func (l *Log) ack(msgs []jetstream.Msg, down *outage) {
	if len(msgs) == 0 {
		return
	}
	for _, m := range msgs[:len(msgs)-1] {
		_ = m.Ack()
	}
	ctx, cancel := context.WithTimeout(context.Background(), ackTimeout)
	defer cancel()
	if err := msgs[len(msgs)-1].DoubleAck(ctx); err != nil {
		down.failed(fmt.Errorf("acknowledging a batch (it may be delivered again): %w", err))
	}
}

// runHandle calls handle, telling the server every third of the ack wait
// that the batch is still being worked on.
func (l *Log) runHandle(ctx context.Context, msgs []jetstream.Msg, batch []Message, last uint64, handle func(context.Context, []Message, uint64) error) error {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(l.ackWait / 3)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				for _, m := range msgs {
					_ = m.InProgress()
				}
			}
		}
	})
	err := handle(ctx, batch, last)
	close(done)
	wg.Wait()
	return err
}

// Pending returns how many events the persister has not yet
// acknowledged, and the time the oldest of them was stored (zero when
// there are none): the persister's lag, for metrics and for a clean stop
// to wait on. durable names the persister's consumer (Consume's durable
// name). Under workqueue retention the figure is the stream's content, so
// it is right before that consumer exists, too. When the stream still
// holds messages at or below durable's ack floor (acknowledged, so
// persisted, but not dropped: a write of the store failed; see
// dropAcked), Pending removes them first, or the figure would never reach
// 0. Returns EUnavailable when the log cannot be read.
func (l *Log) Pending(ctx context.Context, durable string) (events uint64, oldest time.Time, err error) {
	st, err := l.unacknowledged(ctx, durable, "pending")
	if err != nil || st.Msgs == 0 {
		return 0, time.Time{}, err
	}
	return st.Msgs, st.FirstTime, nil
}

// unacknowledged returns the state of the stream once the messages at or
// below durable's ack floor are gone (see Pending); op names the caller
// in errors.
func (l *Log) unacknowledged(ctx context.Context, durable, op string) (jetstream.StreamState, error) {
	if l.closed.Load() {
		return jetstream.StreamState{}, unavailable(op, errClosed)
	}
	info, err := l.stream.Info(ctx)
	if err != nil {
		return jetstream.StreamState{}, unavailable(op, err)
	}
	if info.State.Msgs == 0 {
		return info.State, nil
	}
	if c, err := l.stream.Consumer(ctx, durable); err == nil && c.CachedInfo().AckFloor.Stream >= info.State.FirstSeq {
		l.dropAcked(ctx)
		if info, err = l.stream.Info(ctx); err != nil {
			return jetstream.StreamState{}, unavailable(op, err)
		}
	}
	return info.State, nil
}

// Oldest returns the version of the first event the persister has not
// acknowledged (durable names its consumer, as for Pending): under
// workqueue retention, the first event of the stream, the oldest the
// store still lacks by the log's order. ok is false when the store lacks
// none. Versions are not in the log's order (writes publish
// concurrently, a relay publishes late): the events after it may be
// older by as much as that disorder, which the caller allows for.
// Messages that are not events are skipped. Returns EUnavailable when
// the log cannot be read.
func (l *Log) Oldest(ctx context.Context, durable string) (v followgraph.Version, ok bool, err error) {
	st, err := l.unacknowledged(ctx, durable, "oldest")
	if err != nil || st.Msgs == 0 {
		return 0, false, err
	}
	for seq := st.FirstSeq; seq <= st.LastSeq; seq++ {
		msgs, err := l.getNext(ctx, seq)
		if err != nil {
			return 0, false, unavailable("oldest", err)
		}
		if len(msgs) == 0 {
			return 0, false, nil
		}
		m := msgs[0]
		if e, _, err := l.decode(m.Subject, m.Data); err == nil {
			return e.Version, true, nil
		}
		seq = m.Sequence
	}
	return 0, false, nil
}
