package httpapi

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the server's Prometheus metrics. Their labels take few
// values: route patterns, statuses, and the outcomes of writes.
type metrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	writes   *prometheus.CounterVec
	byRoute  sync.Map // routeStatus → *routeMetrics, resolved once each
	conns    prometheus.Gauge
	refused  prometheus.Counter
}

type routeStatus struct {
	route  string
	status int
}

// routeMetrics are the children of requests and latency for one route and
// status.
type routeMetrics struct {
	requests prometheus.Counter
	latency  prometheus.Observer
}

func newMetrics(reg prometheus.Registerer) *metrics {
	return &metrics{
		requests: register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "followgraph_http_requests_total",
			Help: "HTTP requests answered, by route pattern and status.",
		}, []string{"route", "code"})),
		latency: register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "followgraph_http_request_duration_seconds",
			Help:    "Time to answer an HTTP request, by route pattern and status.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"route", "code"})),
		writes: register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "followgraph_writes_total",
			Help: "Follows and unfollows by outcome: created, removed, unchanged, or the error code.",
		}, []string{"op", "outcome"})),
		conns: register(reg, prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "followgraph_http_connections",
			Help: "HTTP connections open and served (at most the connection limit).",
		})),
		refused: register(reg, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "followgraph_http_connections_refused_total",
			Help: "HTTP connections refused because the server was at its connection limit.",
		})),
	}
}

// register registers c in reg, or returns the collector already registered
// under its name, so that several servers can share one registry.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
		panic("httpapi: registering metrics: " + err.Error())
	}
	return c
}

func (m *metrics) observe(route string, status int, d time.Duration) {
	key := routeStatus{route, status}
	v, ok := m.byRoute.Load(key)
	if !ok {
		code := strconv.Itoa(status)
		v, _ = m.byRoute.LoadOrStore(key, &routeMetrics{
			requests: m.requests.WithLabelValues(route, code),
			latency:  m.latency.WithLabelValues(route, code),
		})
	}
	rm := v.(*routeMetrics)
	rm.requests.Inc()
	rm.latency.Observe(d.Seconds())
}

func (m *metrics) write(op, outcome string) {
	m.writes.WithLabelValues(op, outcome).Inc()
}

// backendsUp exports followgraph_backend_up: 1 for each backend whose
// readiness check passes when /metrics is scraped, 0 for the others.
type backendsUp struct{ s *Server }

var backendUpDesc = prometheus.NewDesc("followgraph_backend_up",
	"Whether the backend answers its readiness check (1) or not (0), checked at each scrape.",
	[]string{"backend", "degradable"}, nil)

func (b backendsUp) Describe(ch chan<- *prometheus.Desc) { ch <- backendUpDesc }

func (b backendsUp) Collect(ch chan<- prometheus.Metric) {
	for i, err := range b.s.checkBackends(context.Background()) {
		up := 1.0
		if err != nil {
			up = 0
		}
		c := b.s.ready[i]
		ch <- prometheus.MustNewConstMetric(backendUpDesc, prometheus.GaugeValue, up, c.name, strconv.FormatBool(c.degradable))
	}
}
