// Package horizon removes tombstones once no change older than them can
// still arrive. A tombstone (an edge that is off, kept with the version
// that turned it off) is what stops an older change arriving late from
// bringing its edge back; once every change that could arrive is newer
// than it, it holds nothing back and only takes room.
//
// A Purger computes, every Interval, how far the holders' tombstone
// horizons may go (Bound): the retention before the oldest of now and of
// the first event of every backlog the durable store has yet to apply
// (the event log's work queue, Redis's outbox). Then each holder removes
// its tombstones older than that in steps of Step, raising its horizon
// to just above the newest it removes, with a pause between steps as
// long as the step took, so that the holder's own work goes on
// (docs/design/horizon.md).
package horizon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/internal/pause"
)

// Backlog holds events the durable store has yet to apply. Oldest returns
// the version of its first event by its own order, and false when it
// holds none (eventlog.Log.Oldest, outbox.Outbox.Oldest).
type Backlog func(ctx context.Context) (v fg.Version, ok bool, err error)

// Holder is a holder of tombstones the Purger purges, named for its
// metrics and log lines ("store", "engine").
type Holder struct {
	Name string
	fg.TombstonePurger
}

// Config configures a Purger.
type Config struct {
	// Retention is how long before the oldest of now and the backlogs'
	// first events a tombstone is kept: more than any change can take
	// from its version to the store (the write timeout, the clocks' skew
	// between nodes). Positive.
	Retention time.Duration
	// Interval is the time between two passes; 0: DefaultInterval of
	// Retention.
	Interval time.Duration
	// Step is the most tombstones a holder removes in one step (one
	// transaction of a store); 0: DefaultStep.
	Step int
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Logger (default slog.Default()).
	Logger *slog.Logger
}

// DefaultStep is Config.Step's default: a step of a store is one
// transaction of some milliseconds.
const DefaultStep = 1000

// DefaultInterval returns the time between passes for a retention: a
// tenth of it, within a second and a minute. A tombstone so stays at most
// that much longer than the retention.
func DefaultInterval(retention time.Duration) time.Duration {
	return min(max(retention/10, time.Second), time.Minute)
}

// minPause is the shortest pause between two steps.
const minPause = 10 * time.Millisecond

// Purger purges the tombstones of holders as the backlogs allow.
type Purger struct {
	cfg      Config
	backlogs []Backlog
	holders  []Holder

	horizon *prometheus.GaugeVec   // by holder
	removed *prometheus.CounterVec // by holder
	failed  *prometheus.CounterVec // by holder
	bound   prometheus.Gauge
}

// New returns a Purger of holders, bounded by backlogs, with its metrics
// registered on reg (nil: not registered). It returns an error for a
// Retention that is not positive.
func New(cfg Config, backlogs []Backlog, holders []Holder, reg prometheus.Registerer) (*Purger, error) {
	if cfg.Retention <= 0 {
		return nil, errors.New("horizon: the retention must be positive")
	}
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval(cfg.Retention)
	}
	if cfg.Step <= 0 {
		cfg.Step = DefaultStep
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	p := &Purger{cfg: cfg, backlogs: backlogs, holders: holders,
		horizon: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "followgraph_tombstone_horizon_timestamp_seconds",
			Help: "Each holder's tombstone horizon, as a Unix time: its tombstones older than it are gone, and a change older than it to an edge it keeps no record of is refused.",
		}, []string{"holder"}),
		removed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "followgraph_tombstones_removed_total",
			Help: "Tombstones removed by the purge, by holder.",
		}, []string{"holder"}),
		failed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "followgraph_tombstone_purge_failures_total",
			Help: "Purge steps that failed, by holder; the next pass tries again.",
		}, []string{"holder"}),
		bound: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "followgraph_tombstone_bound_timestamp_seconds",
			Help: "How far the last pass let the tombstone horizons go, as a Unix time: the retention before the oldest of now and the first events the durable store lacks.",
		}),
	}
	for _, h := range holders {
		p.removed.WithLabelValues(h.Name)
		p.failed.WithLabelValues(h.Name)
	}
	if reg != nil {
		reg.MustRegister(p.horizon, p.removed, p.failed, p.bound)
	}
	return p, nil
}

// Bound returns how far the holders' tombstone horizons may go now: the
// version of Retention before the oldest of the clock and the first event
// of each backlog. The retention is also the margin for the order of the
// events behind a backlog's first, which is not their versions' order.
// It returns 0 while that is before 1970, and the first backlog's error.
func (p *Purger) Bound(ctx context.Context) (fg.Version, error) {
	ms := p.cfg.Now().UnixMilli()
	for _, b := range p.backlogs {
		v, ok, err := b(ctx)
		if err != nil {
			return 0, err
		}
		if ok {
			ms = min(ms, v.Millis())
		}
	}
	ms -= p.cfg.Retention.Milliseconds()
	if ms <= 0 {
		return 0, nil
	}
	return fg.VersionAt(ms), nil
}

// Pass purges each holder, in order, of its tombstones older than Bound,
// in steps of Step with a pause after each as long as it took (at least
// 10 ms), and returns how many tombstones it removed. A holder whose step fails is left until the
// next pass, and the others are purged; the error returned joins the
// failures. When the backlogs cannot be read nothing is purged.
func (p *Purger) Pass(ctx context.Context) (removed int, err error) {
	bound, err := p.Bound(ctx)
	if err != nil {
		return 0, fmt.Errorf("horizon: the oldest event the store lacks: %w", err)
	}
	if bound == 0 {
		return 0, nil
	}
	p.bound.Set(float64(bound.Millis()) / 1000)
	var errs []error
	for _, h := range p.holders {
		n, err := p.purge(ctx, h, bound)
		removed += n
		if err != nil {
			if ctx.Err() != nil {
				return removed, ctx.Err()
			}
			p.failed.WithLabelValues(h.Name).Inc()
			errs = append(errs, fmt.Errorf("horizon: %s: %w", h.Name, err))
		}
	}
	return removed, errors.Join(errs...)
}

// purge purges h up to bound, step by step, and returns how many went.
func (p *Purger) purge(ctx context.Context, h Holder, bound fg.Version) (removed int, err error) {
	for {
		start := time.Now()
		n, more, err := h.PurgeTombstones(ctx, bound, p.cfg.Step)
		removed += n
		p.removed.WithLabelValues(h.Name).Add(float64(n))
		if err != nil {
			return removed, err
		}
		if !more {
			break
		}
		if err := pause.For(ctx, max(time.Since(start), minPause)); err != nil {
			return removed, err
		}
	}
	v, err := h.TombstoneHorizon(ctx)
	if err != nil {
		return removed, err
	}
	p.horizon.WithLabelValues(h.Name).Set(float64(v.Millis()) / 1000)
	return removed, nil
}

// Run runs a pass now and every Interval after until ctx ends, logging
// what each removed (at debug level) and each failure (a warning).
func (p *Purger) Run(ctx context.Context) {
	for {
		start := time.Now()
		n, err := p.Pass(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			p.cfg.Logger.Warn("purging tombstones failed; the next pass tries again", "err", err, "retry_in", p.cfg.Interval.String())
		} else {
			p.cfg.Logger.Debug("tombstones purged", "removed", n, "took", time.Since(start).String())
		}
		if pause.For(ctx, p.cfg.Interval) != nil {
			return
		}
	}
}

// Refusals counts and logs the changes holders refuse for being older
// than their tombstone horizons (followgraph.Refusal): none arrives while
// the horizons are kept by a Purger whose retention is longer than any
// change takes to reach the store, so each is logged as an error.
type Refusals struct {
	logger  *slog.Logger
	refused *prometheus.CounterVec
}

// NewRefusals returns a Refusals logging to logger; Register exports its
// counter.
func NewRefusals(logger *slog.Logger) *Refusals {
	return &Refusals{logger: logger, refused: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "followgraph_tombstone_refused_total",
		Help: "Changes a holder refused for being older than its tombstone horizon, to an edge it keeps no record of: logged as errors; none arrives while the retention exceeds every delay.",
	}, []string{"holder"})}
}

// Register exports the counter on reg.
func (r *Refusals) Register(reg prometheus.Registerer) { reg.MustRegister(r.refused) }

// Of returns the function that holder named holder calls with each change
// it refuses (a store's or memgraph's WithRefused).
func (r *Refusals) Of(holder string) func(fg.Refusal) {
	c := r.refused.WithLabelValues(holder)
	return func(x fg.Refusal) {
		c.Inc()
		r.logger.Error("a change older than the tombstone horizon was refused, not applied: the retention (--tombstone-retention) is shorter than the delay it came with, or something replayed old changes",
			"holder", holder, "kind", x.Kind.String(), "user", uint64(x.User), "target", uint64(x.Target), "on", x.On,
			"change_time", x.Version.Time().Format(fg.TimeFormat), "horizon", x.Horizon.Time().Format(fg.TimeFormat))
	}
}
