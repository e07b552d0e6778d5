package redisgraph

import (
	"testing"

	"github.com/followgraph/followgraph/redisgraph/internal/redistest"
	"github.com/prometheus/client_golang/prometheus"
)

const metricDeferred = "followgraph_redis_second_steps_deferred_total"

// counter returns the value of the counter name in reg.
func counter(tb testing.TB, reg *prometheus.Registry, name string) float64 {
	tb.Helper()
	families, err := reg.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name {
			return f.GetMetric()[0].GetCounter().GetValue()
		}
	}
	tb.Fatalf("no metric %s in the registry", name)
	return 0
}

// TestWithRegisterer: New registers the metrics, starting at 0, and fails
// on a registry that holds them already.
func TestWithRegisterer(t *testing.T) {
	c := redistest.Standalone(t)
	reg := prometheus.NewRegistry()
	newTestGraph(t, c, WithRegisterer(reg))
	if n := counter(t, reg, metricDeferred); n != 0 {
		t.Errorf("%s of a new Graph = %v, want 0", metricDeferred, n)
	}
	if g, err := New(t.Context(), c, WithPrefix(randomPrefix()), WithRegisterer(reg)); err == nil {
		g.Close()
		t.Error("New with a registry that holds its metrics already: no error")
	}
}
