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

// Outbox is where an engine keeps the events of its changes until they
// are in the log: streams of events, each in the order of its changes,
// read and trimmed from its start. Each relay reads it as one owner, with
// a lease of each stream it moves, so that the relays of several nodes
// share the streams instead of repeating each other's work.
type Outbox interface {
	// Streams returns the streams that hold events.
	Streams(ctx context.Context) ([]string, error)
	// Claim takes or renews the owner's lease of stream and reports
	// whether the owner holds it.
	Claim(ctx context.Context, stream string) (bool, error)
	// Read returns the first n events of stream, in order, and the
	// position of the last of them, for Trim.
	Read(ctx context.Context, stream string, n int) (events []fg.Event, last string, err error)
	// Settle completes in the engine whatever the changes of events still
	// lack (on a Redis Cluster, the followee's side of each), so that
	// their events can go.
	Settle(ctx context.Context, events []fg.Event) error
	// Trim removes the events of stream up to and including the position
	// through.
	Trim(ctx context.Context, stream, through string) error
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
// Any number of relays may run over one outbox, one per serve node, each
// moving only the streams whose lease it holds, so they share the work;
// when a lease runs out under a paused owner, two relays may publish the
// same events, which is harmless as above.
type Relay struct {
	outbox  Outbox
	publish func(context.Context, fg.Event) error
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

// Run relays until ctx ends. A failed pass is retried after a pause that
// grows up to a second. A run of failed passes (the log or the engine
// unavailable for a while) is logged as one warning when it begins and
// one line when a pass works again; the passes between are counted in
// followgraph_relay_failures_total and logged at debug level.
func (r *Relay) Run(ctx context.Context) {
	var (
		pause    time.Duration
		failures int       // in a row
		since    time.Time // the first of them
	)
	for {
		n, err := r.Pass(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			r.failures.Inc()
			if failures++; failures == 1 {
				since = time.Now()
				r.log.Warn("relay: pass failed; the events stay in the outbox and are retried until a pass works (one line until then)", "err", err)
			} else {
				r.log.Debug("relay: pass failed again", "failures", failures, "err", err)
			}
			pause = min(max(2*pause, 10*time.Millisecond), time.Second)
		} else {
			if failures > 0 {
				r.log.Info("relay: passes work again", "failed_passes", failures, "after", time.Since(since).Round(time.Millisecond).String())
				failures = 0
			}
			if n > 0 {
				pause = 0
				continue
			}
			pause = min(max(2*pause, r.idle), r.maxIdle)
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return
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
	streams, err := r.outbox.Streams(ctx)
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

// move relays one batch of stream, if this relay holds its lease.
func (r *Relay) move(ctx context.Context, stream string) (int, error) {
	if mine, err := r.outbox.Claim(ctx, stream); err != nil || !mine {
		return 0, err
	}
	events, last, err := r.outbox.Read(ctx, stream, r.batch)
	if err != nil || len(events) == 0 {
		return 0, err
	}
	if err := r.outbox.Settle(ctx, events); err != nil {
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
	if err := r.outbox.Trim(ctx, stream, last); err != nil {
		return 0, err
	}
	r.relayed.Add(float64(len(events)))
	r.lag.Set(time.Since(events[len(events)-1].Time).Seconds())
	return len(events), nil
}
