package pipeline

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Backlog is a collector of the persister's backlog, the events in the
// log not yet in the durable store: followgraph_persister_pending_events
// and _pending_seconds (the age of the oldest). pending says them; while
// it cannot (an error: the log unreachable), both gauges are left out
// rather than read 0, which would say "all stored".
type Backlog struct {
	pending func(ctx context.Context) (events uint64, oldest time.Time, err error)
}

// NewBacklog returns the collector of what pending says, asked at each
// scrape with a deadline of a second.
func NewBacklog(pending func(ctx context.Context) (uint64, time.Time, error)) *Backlog {
	return &Backlog{pending: pending}
}

var (
	pendingEventsDesc  = prometheus.NewDesc("followgraph_persister_pending_events", "Events in the log not yet in the durable store (absent while the log cannot say).", nil, nil)
	pendingSecondsDesc = prometheus.NewDesc("followgraph_persister_pending_seconds", "Age of the oldest event not yet in the durable store, 0 when none (absent while the log cannot say).", nil, nil)
)

// Describe implements prometheus.Collector.
func (b *Backlog) Describe(ch chan<- *prometheus.Desc) {
	ch <- pendingEventsDesc
	ch <- pendingSecondsDesc
}

// Collect implements prometheus.Collector.
func (b *Backlog) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	n, oldest, err := b.pending(ctx)
	if err != nil {
		return
	}
	age := 0.0
	if n > 0 && !oldest.IsZero() {
		age = time.Since(oldest).Seconds()
	}
	ch <- prometheus.MustNewConstMetric(pendingEventsDesc, prometheus.GaugeValue, float64(n))
	ch <- prometheus.MustNewConstMetric(pendingSecondsDesc, prometheus.GaugeValue, age)
}
