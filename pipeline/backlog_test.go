package pipeline_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/followgraph/followgraph/pipeline"
)

// TestBacklog: the gauges say what the log says, and are absent while it
// cannot say.
func TestBacklog(t *testing.T) {
	var events uint64
	var oldest time.Time
	var err error
	reg := prometheus.NewRegistry()
	reg.MustRegister(pipeline.NewBacklog(func(context.Context) (uint64, time.Time, error) { return events, oldest, err }))
	gauges := func() map[string]float64 {
		t.Helper()
		families, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]float64{}
		for _, f := range families {
			m[f.GetName()] = f.GetMetric()[0].GetGauge().GetValue()
		}
		return m
	}
	if g := gauges(); g["followgraph_persister_pending_events"] != 0 || g["followgraph_persister_pending_seconds"] != 0 || len(g) != 2 {
		t.Errorf("an empty backlog: %v, want both gauges at 0", g)
	}
	events, oldest = 7, time.Now().Add(-3*time.Second)
	if g := gauges(); g["followgraph_persister_pending_events"] != 7 || g["followgraph_persister_pending_seconds"] < 3 || g["followgraph_persister_pending_seconds"] > 60 {
		t.Errorf("7 events, the oldest 3 s old: %v", g)
	}
	err = errors.New("nats: no servers available")
	if g := gauges(); len(g) != 0 {
		t.Errorf("while the log cannot say: %v, want no gauge", g)
	}
}
