package redistime

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/rueidis"
)

// BenchmarkDo is a GET to the test Redis, untimed and timed, side by side
// in one run: what the metric costs a command.
func BenchmarkDo(b *testing.B) {
	raw, key := testClient(b)
	for _, bc := range []struct {
		name string
		c    rueidis.Client
	}{
		{"plain", raw},
		{"timed", Wrap(raw, prometheus.NewRegistry())},
	} {
		b.Run(bc.name, func(b *testing.B) {
			ctx := context.Background()
			for b.Loop() {
				if err := bc.c.Do(ctx, bc.c.B().Get().Key(key).Build()).Error(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkTiming is what Do adds to each command alone: two clock reads
// and an observation, without the round trip it times.
func BenchmarkTiming(b *testing.B) {
	c := &Client{roundTrip: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "t"})}
	for b.Loop() {
		c.since(time.Now())
	}
}
