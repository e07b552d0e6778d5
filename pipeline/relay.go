package pipeline

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	fg "github.com/followgraph/followgraph"
)

// Outbox is an engine's record of the changes whose events have yet to
// reach the event log: redisgraph writes each change's event into an
// outbox stream in the same atomic step as the change.
type Outbox interface {
	// OutboxStreams returns the streams that may hold entries.
	OutboxStreams(ctx context.Context) ([]string, error)
	// ReadOutbox returns up to n entries of stream, in order, after the
	// entry id after ("" for the start).
	ReadOutbox(ctx context.Context, stream, after string, n int) ([]OutboxEntry, error)
	// SettleOutbox completes in the engine whatever the changes of events
	// still lack (on a Redis Cluster, the followee's side of each), so that
	// their entries can go.
	SettleOutbox(ctx context.Context, events []fg.Event) error
	// TrimOutbox removes the entries of stream up to and including the
	// entry id through.
	TrimOutbox(ctx context.Context, stream, through string) error
}

// OutboxEntry is one event of an outbox stream with its entry id.
type OutboxEntry struct {
	ID    string
	Event fg.Event
}

// Relay moves events from an Outbox into the event log. Per stream, it
// reads a batch, settles it in the engine, publishes every event and waits
// for all the acknowledgements, and only then trims the batch from the
// stream. A crash anywhere in between leaves the batch in the stream, to be
// published again: the log drops a repeated event by its message id within
// its duplicate window, and after that the durable store's
// version-conditional upserts make it change nothing. So an event leaves
// the outbox only once it is in the log, and no event is lost.
//
// Any number of relays may run over one outbox, one per serve node. With
// WithRelayLease each moves only the streams whose lease it holds, so they
// share the work; without, or when a lease runs out under a paused owner,
// two relays publish the same events, which is harmless as above.
type Relay struct {
	outbox  Outbox
	publish func(context.Context, fg.Event) error
	claim   func(ctx context.Context, stream string) (bool, error)
	batch   int
	idle    time.Duration // the pause after a pass that moved nothing...
	maxIdle time.Duration // ...doubling while passes find nothing, up to this
	log     *slog.Logger

	relayed  prometheus.Counter
	failures prometheus.Counter
	lag      prometheus.Gauge
}

// RelayOption configures a Relay.
type RelayOption func(*Relay)

// WithRelayBatch sets the most events read from a stream at once (default
// 1000).
func WithRelayBatch(n int) RelayOption { return func(r *Relay) { r.batch = max(n, 1) } }

// WithRelayIdle sets how long the relay waits after a pass that found
// nothing to move (default 5 ms), and up to how long that wait doubles
// while passes keep finding nothing (default the same: no doubling). A
// pass over a Redis Cluster's 16384 outbox streams costs 16 round trips,
// so a Cluster's relay backs off while idle.
func WithRelayIdle(d, max time.Duration) RelayOption {
	return func(r *Relay) { r.idle, r.maxIdle = d, max }
}

// WithRelayLease makes the relay move a stream only when claim, called
// before each batch, says this relay holds the stream's lease (taking or
// renewing it). A stream it does not hold is left to its holder.
func WithRelayLease(claim func(ctx context.Context, stream string) (bool, error)) RelayOption {
	return func(r *Relay) { r.claim = claim }
}

// WithRelayLogger sets the logger (default slog.Default()).
func WithRelayLogger(l *slog.Logger) RelayOption { return func(r *Relay) { r.log = l } }

// NewRelay returns a relay from outbox to the log that publish stores
// events in (it returns once the log has acknowledged the event),
// registering its metrics on reg (nil: not registered).
func NewRelay(outbox Outbox, publish func(context.Context, fg.Event) error, reg prometheus.Registerer, opts ...RelayOption) *Relay {
	r := &Relay{
		outbox:  outbox,
		publish: publish,
		batch:   1000,
		idle:    5 * time.Millisecond,
		maxIdle: 5 * time.Millisecond,
		log:     slog.Default(),
		relayed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "followgraph_relay_events_total",
			Help: "Events moved from the engine's outbox into the event log.",
		}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "followgraph_relay_failures_total",
			Help: "Relay passes that failed (the events stay in the outbox and are retried).",
		}),
		lag: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "followgraph_relay_lag_seconds",
			Help: "Age of the newest event of the last batch relayed.",
		}),
	}
	for _, o := range opts {
		o(r)
	}
	r.maxIdle = max(r.maxIdle, r.idle)
	if reg != nil {
		reg.MustRegister(r.relayed, r.failures, r.lag)
	}
	return r
}

// Run relays until ctx ends, then returns nil. A failed pass is logged and
// retried after a pause that grows up to a second.
func (r *Relay) Run(ctx context.Context) error {
	var pause time.Duration
	for {
		n, err := r.Pass(ctx)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			r.failures.Inc()
			r.log.Warn("relay: pass failed; the events stay in the outbox and are retried", "err", err)
			pause = min(max(2*pause, 10*time.Millisecond), time.Second)
		case n == 0:
			pause = min(max(2*pause, r.idle), r.maxIdle)
		default:
			pause = 0
			continue
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// Drain relays until a pass finds nothing to move, or ctx ends (then it
// returns ctx's error; what is left stays in the outbox).
func (r *Relay) Drain(ctx context.Context) error {
	for {
		n, err := r.Pass(ctx)
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
	}
}

// Pass moves one batch from each stream that has entries, and returns how
// many events it moved.
func (r *Relay) Pass(ctx context.Context) (int, error) {
	streams, err := r.outbox.OutboxStreams(ctx)
	if err != nil {
		return 0, fmt.Errorf("pipeline: relay: %w", err)
	}
	moved := 0
	for _, s := range streams {
		n, err := r.move(ctx, s)
		moved += n
		if err != nil {
			return moved, fmt.Errorf("pipeline: relay %s: %w", s, err)
		}
	}
	return moved, nil
}

// move relays one batch of stream.
func (r *Relay) move(ctx context.Context, stream string) (int, error) {
	if r.claim != nil {
		if mine, err := r.claim(ctx, stream); err != nil || !mine {
			return 0, err
		}
	}
	entries, err := r.outbox.ReadOutbox(ctx, stream, "", r.batch)
	if err != nil || len(entries) == 0 {
		return 0, err
	}
	events := make([]fg.Event, len(entries))
	for i, e := range entries {
		events[i] = e.Event
	}
	if err := r.outbox.SettleOutbox(ctx, events); err != nil {
		return 0, err
	}
	// Every publish of the batch in flight at once; the log keeps their
	// order (one connection) and acknowledges each.
	errs := make([]error, len(events))
	var wg sync.WaitGroup
	for i, e := range events {
		wg.Go(func() { errs[i] = r.publish(ctx, e) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return 0, err
		}
	}
	if err := r.outbox.TrimOutbox(ctx, stream, entries[len(entries)-1].ID); err != nil {
		return 0, err
	}
	r.relayed.Add(float64(len(events)))
	r.lag.Set(time.Since(events[len(events)-1].Time).Seconds())
	return len(events), nil
}
