package console

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// HistoryPath is where the server serves the History of its metrics, with
// the access of /metrics (the server routes it: a token with scope admin
// when authentication is on; on the operator port with one).
const HistoryPath = Prefix + "history"

// HistoryMetrics are the metric families the console's charts draw,
// which a History keeps: the page opens with their last minutes drawn.
var HistoryMetrics = []string{
	"followgraph_persister_pending_events",
	"followgraph_persister_pending_seconds",
	"followgraph_persister_events_total",
	"followgraph_persister_lag_seconds",
	"followgraph_persister_failures_total",
	"followgraph_relay_events_total",
	"followgraph_relay_lag_seconds",
	"followgraph_redis_second_steps_deferred_total",
	"followgraph_http_requests_total",
}

// Defaults of NewHistory: a sample every HistoryInterval, the last
// HistoryWindow of them kept (the page's own polling interval and
// window).
const (
	HistoryInterval = 2 * time.Second
	HistoryWindow   = 5 * time.Minute
)

// History samples the metric families the console charts (HistoryMetrics)
// from a gatherer every interval while Run runs, keeping the last window
// of samples, and serves them as JSON (ServeHTTP): the console's page
// reads it when it opens, so that its charts start with the last minutes
// rather than blank. It costs a gathering of the registry every interval
// and, for a window of 150 samples, some kilobytes a series.
type History struct {
	g        prometheus.Gatherer
	interval time.Duration
	keep     int
	names    map[string]bool

	mu     sync.Mutex
	times  []int64            // Unix milliseconds, oldest first
	series map[string]*series // by name and labels
}

// series is one metric's values, one per time of the History; nil where
// the metric was not exported then.
type series struct {
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels"`
	Values []*float64        `json:"values"`
}

// NewHistory returns the History of g's HistoryMetrics, sampled every
// HistoryInterval for HistoryWindow.
func NewHistory(g prometheus.Gatherer) *History {
	h := &History{g: g, interval: HistoryInterval, keep: int(HistoryWindow / HistoryInterval),
		names: map[string]bool{}, series: map[string]*series{}}
	for _, n := range HistoryMetrics {
		h.names[n] = true
	}
	return h
}

// Run samples every interval until ctx ends, the first at once.
func (h *History) Run(ctx context.Context) {
	t := time.NewTicker(h.interval)
	defer t.Stop()
	for {
		h.Sample(time.Now())
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Sample takes the values of the metrics at now. A gathering that fails
// in part (a backend's gauge that could not be read) keeps what it got.
func (h *History) Sample(now time.Time) {
	mfs, _ := h.g.Gather()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.times = append(h.times, now.UnixMilli())
	n := len(h.times)
	for _, mf := range mfs {
		if !h.names[mf.GetName()] {
			continue
		}
		for _, m := range mf.GetMetric() {
			v, ok := value(mf.GetType(), m)
			if !ok {
				continue
			}
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			key := seriesKey(mf.GetName(), labels)
			s := h.series[key]
			if s == nil {
				s = &series{Name: mf.GetName(), Labels: labels, Values: make([]*float64, n-1)}
				if mf.GetType() == dto.MetricType_COUNTER {
					// A counter is exported from its first increment: it
					// was 0 before, which a rate needs.
					zero := 0.0
					for i := range s.Values {
						s.Values[i] = &zero
					}
				}
				h.series[key] = s
			}
			s.Values = append(s.Values, &v)
		}
	}
	for key, s := range h.series {
		if len(s.Values) < n { // not exported this time
			s.Values = append(s.Values, nil)
		}
		if n > h.keep {
			s.Values = s.Values[n-h.keep:]
			if !slices.ContainsFunc(s.Values, func(v *float64) bool { return v != nil }) {
				delete(h.series, key)
			}
		}
	}
	if n > h.keep {
		h.times = h.times[n-h.keep:]
	}
}

// value is m's value, for the types a chart reads.
func value(t dto.MetricType, m *dto.Metric) (float64, bool) {
	switch t {
	case dto.MetricType_COUNTER:
		return m.GetCounter().GetValue(), true
	case dto.MetricType_GAUGE:
		return m.GetGauge().GetValue(), true
	case dto.MetricType_UNTYPED:
		return m.GetUntyped().GetValue(), true
	}
	return 0, false
}

// seriesKey names a series by its metric's name and labels.
func seriesKey(name string, labels map[string]string) string {
	var b strings.Builder
	b.WriteString(name)
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		b.WriteString("\x00" + k + "=" + labels[k])
	}
	return b.String()
}

// historyAnswer is the JSON of a History: the times of the samples (Unix
// milliseconds, oldest first), the server's time now, and each series
// with a value a time (null where it was not exported).
type historyAnswer struct {
	IntervalSeconds float64   `json:"interval_seconds"`
	Now             int64     `json:"now"`
	Times           []int64   `json:"times"`
	Series          []*series `json:"series"`
}

// ServeHTTP answers the samples kept, as JSON.
func (h *History) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	h.mu.Lock()
	a := historyAnswer{IntervalSeconds: h.interval.Seconds(), Now: time.Now().UnixMilli(),
		Times: slices.Clone(h.times), Series: make([]*series, 0, len(h.series))}
	for _, key := range slices.Sorted(maps.Keys(h.series)) {
		s := *h.series[key]
		s.Values = slices.Clone(s.Values)
		a.Series = append(a.Series, &s)
	}
	h.mu.Unlock()
	if a.Times == nil {
		a.Times = []int64{}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(a)
}
