// Package pipeline moves acknowledged changes from the event log into the
// durable store: the persister. It reads batches (the log delivers them by
// count and by time), waits on a token bucket when a rate is set, applies
// each batch to the store in one transaction together with the batch's last
// stream sequence, and only then lets the log acknowledge it. A batch that
// fails is not acknowledged and comes back; the store's version-conditional
// upserts make the repeat change nothing it already has.
package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	fg "github.com/followgraph/followgraph"
)

// Store is what the persister writes to: one transaction per batch, with
// the stream sequence it reached.
type Store interface {
	Apply(ctx context.Context, events []fg.Event, lastSeq uint64) (changed int, err error)
}

// Message is one event of the log with its stream sequence.
type Message struct {
	Seq   uint64
	Event fg.Event
	// Foreign is true for an event of another region, which the engine
	// here has not applied (WithImport).
	Foreign bool
}

// DefaultMaxOffset is Importer.MaxOffset's default: how far ahead of
// this region's clock another region's event may be, CockroachDB's
// default maximum clock offset.
const DefaultMaxOffset = 500 * time.Millisecond

// Importer is how the persister of a deployment in several regions
// brings the events of the other regions into the engine
// (docs/design/regions.md).
type Importer struct {
	// Apply applies events to the engine (followgraph.Applier's Apply).
	Apply func(ctx context.Context, events []fg.Event) error
	// Mend, when not nil, restores the rules between kinds after the
	// other regions' events of a batch are applied, by writes of this
	// region (followgraph.Mend on the engine), and returns how many it
	// made.
	Mend func(ctx context.Context, events []fg.Event) (int, error)
	// Own makes the persister apply the region's own events as well: for
	// an engine that keeps nothing across a restart (memgraph), whose
	// Replay at start may miss the few events acknowledged just before
	// it that the log had not copied yet.
	Own bool
	// MaxOffset is how far ahead of this region's clock another region's
	// event may be (DefaultMaxOffset when 0). An event further ahead
	// would move the engine's clock, and so every version issued here
	// after it, into the future: its batch is held back, and tried again
	// until the clock here has caught up within MaxOffset.
	MaxOffset time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// ErrAhead is the error of a batch held back because an event of another
// region is ahead of this region's clock by more than the max offset.
var ErrAhead = errors.New("an event of another region is ahead of this region's clock by more than the max offset")

// Persister applies batches of the log to a Store.
type Persister struct {
	store   Store
	limiter *rate.Limiter // nil: unlimited
	log     *slog.Logger
	imp     *Importer // nil: one region

	imported prometheus.Histogram
	ahead    prometheus.Counter
	mended   prometheus.Counter

	batchSize prometheus.Histogram
	rows      prometheus.Counter
	changed   prometheus.Counter
	failures  prometheus.Counter
	waits     prometheus.Counter
	waited    prometheus.Counter
	lag       prometheus.Gauge
	eventLag  prometheus.Histogram
	applied   prometheus.Histogram
}

// Option configures a Persister.
type Option func(*Persister)

// WithRate caps the rows written per second with a token bucket holding
// burst rows (at least one batch). 0 means unlimited, the default.
func WithRate(perSecond float64, burst int) Option {
	return func(p *Persister) {
		if perSecond > 0 {
			p.limiter = rate.NewLimiter(rate.Limit(perSecond), max(burst, 1))
		}
	}
}

// WithImport makes the persister apply the other regions' events (and,
// with Own, all) to the engine with im.Apply, before the store.
func WithImport(im Importer) Option {
	return func(p *Persister) {
		if im.MaxOffset == 0 {
			im.MaxOffset = DefaultMaxOffset
		}
		if im.Now == nil {
			im.Now = time.Now
		}
		p.imp = &im
	}
}

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(p *Persister) { p.log = l } }

// New returns a persister writing to store, registering its metrics on reg
// (nil: not registered).
func New(store Store, reg prometheus.Registerer, opts ...Option) *Persister {
	p := &Persister{
		store: store,
		log:   slog.Default(),
		batchSize: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "followgraph_persister_batch_events",
			Help:    "Events per batch applied to the durable store.",
			Buckets: prometheus.ExponentialBuckets(1, 4, 8),
		}),
		rows: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "followgraph_persister_events_total",
			Help: "Events applied to the durable store (rate() gives rows per second).",
		}),
		changed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "followgraph_persister_rows_changed_total",
			Help: "Edge rows the durable store changed (redelivered events change none).",
		}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "followgraph_persister_failures_total",
			Help: "Batches the durable store refused; each is redelivered.",
		}),
		waits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "followgraph_persister_token_waits_total",
			Help: "Batches that waited on the token bucket.",
		}),
		waited: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "followgraph_persister_token_wait_seconds_total",
			Help: "Time spent waiting on the token bucket.",
		}),
		lag: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "followgraph_persister_lag_seconds",
			Help: "Age of the newest event of the last batch applied.",
		}),
		applied: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "followgraph_persister_apply_seconds",
			Help:    "Time of each batch's transaction in the durable store.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
		}),
		eventLag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "followgraph_persister_event_lag_seconds",
			Help:    "Time from each event's change (its version's time) to its batch's commit in the durable store.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}),
		imported: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "followgraph_region_lag_seconds",
			Help:    "Time from each event of another region's change (its version's time) to its apply to the engine here: the replication lag between regions.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 3600},
		}),
		ahead: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "followgraph_region_ahead_total",
			Help: "Batches held back because an event of another region was ahead of this region's clock by more than the max offset.",
		}),
		mended: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "followgraph_region_mended_total",
			Help: "Writes made here to restore the rules between kinds that another region's concurrent changes broke (a follow across a block, a request to a public account).",
		}),
	}
	for _, o := range opts {
		o(p)
	}
	if reg != nil {
		reg.MustRegister(p.batchSize, p.rows, p.changed, p.failures, p.waits, p.waited, p.lag, p.eventLag, p.applied)
		if p.imp != nil {
			reg.MustRegister(p.imported, p.ahead, p.mended)
		}
	}
	return p
}

// Handle applies one batch, after waiting for tokens for all its rows,
// with last, the highest stream sequence the batch covers (its messages
// that were not events included, so a batch may have no event). It
// returns nil only once the batch and last are committed; on an error the
// caller must not acknowledge the batch.
func (p *Persister) Handle(ctx context.Context, batch []Message, last uint64) error {
	if len(batch) == 0 && last == 0 {
		return nil
	}
	if err := p.wait(ctx, len(batch)); err != nil {
		return err
	}
	events := make([]fg.Event, len(batch))
	for i, m := range batch {
		events[i] = m.Event
		last = max(last, m.Seq)
	}
	if err := p.importBatch(ctx, batch); err != nil {
		p.failures.Inc()
		return err
	}
	start := time.Now()
	changed, err := p.store.Apply(ctx, events, last)
	p.applied.Observe(time.Since(start).Seconds())
	if err != nil {
		p.failures.Inc()
		p.log.Error("persister: batch not applied; it will be redelivered", "events", len(batch), "last_seq", last, "err", err)
		return fmt.Errorf("pipeline: apply batch up to %d: %w", last, err)
	}
	p.batchSize.Observe(float64(len(batch)))
	p.rows.Add(float64(len(batch)))
	p.changed.Add(float64(changed))
	now := time.Now()
	if len(batch) > 0 {
		p.lag.Set(now.Sub(batch[len(batch)-1].Event.Time).Seconds())
	}
	for _, m := range batch {
		p.eventLag.Observe(now.Sub(m.Event.Time).Seconds())
	}
	return nil
}

// importBatch applies to the engine the events of batch that WithImport
// names, once none of the other regions' is ahead of the clock by more
// than the max offset, and mends after the other regions' (Importer.Mend).
// The engine applies before the store: a batch that fails after it comes
// back, and applies again to no effect.
func (p *Persister) importBatch(ctx context.Context, batch []Message) error {
	if p.imp == nil {
		return nil
	}
	now := p.imp.Now()
	limit := now.Add(p.imp.MaxOffset).UnixMilli()
	var events, foreign []fg.Event
	for _, m := range batch {
		if m.Foreign && m.Event.Version.Millis() > limit {
			p.ahead.Inc()
			p.log.Error("persister: batch held back: an event of another region is ahead of this region's clock; check the clocks",
				"event", m.Event.ID(), "ahead", m.Event.Time.Sub(now), "max_offset", p.imp.MaxOffset)
			return fmt.Errorf("pipeline: event %s is %s ahead: %w", m.Event.ID(), m.Event.Time.Sub(now), ErrAhead)
		}
		if m.Foreign || p.imp.Own {
			events = append(events, m.Event)
		}
		if m.Foreign {
			foreign = append(foreign, m.Event)
		}
	}
	if len(events) == 0 {
		return nil
	}
	if err := p.imp.Apply(ctx, events); err != nil {
		p.log.Error("persister: batch not applied to the engine; it will be redelivered", "events", len(events), "err", err)
		return fmt.Errorf("pipeline: import: %w", err)
	}
	if p.imp.Mend != nil && len(foreign) > 0 {
		n, err := p.imp.Mend(ctx, foreign)
		p.mended.Add(float64(n))
		if err != nil {
			p.log.Error("persister: another region's changes applied, not yet mended; the batch will be redelivered", "events", len(foreign), "err", err)
			return fmt.Errorf("pipeline: mend: %w", err)
		}
	}
	for _, m := range batch {
		if m.Foreign {
			p.imported.Observe(now.Sub(m.Event.Time).Seconds())
		}
	}
	return nil
}

// wait takes n tokens, in steps no larger than the bucket.
func (p *Persister) wait(ctx context.Context, n int) error {
	if p.limiter == nil {
		return nil
	}
	start := time.Now()
	waited := false
	for n > 0 {
		k := min(n, p.limiter.Burst())
		if r := p.limiter.ReserveN(time.Now(), k); r.OK() {
			if d := r.DelayFrom(time.Now()); d > 0 {
				waited = true
				t := time.NewTimer(d)
				select {
				case <-t.C:
				case <-ctx.Done():
					t.Stop()
					r.Cancel()
					return fmt.Errorf("pipeline: waiting for tokens: %w", ctx.Err())
				}
			}
		}
		n -= k
	}
	if waited {
		p.waits.Inc()
		p.waited.Add(time.Since(start).Seconds())
	}
	return nil
}
