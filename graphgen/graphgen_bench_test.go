package graphgen

import "testing"

// BenchmarkEdges generates a graph of 1M edges (20k users) per iteration
// and reports the rate.
func BenchmarkEdges(b *testing.B) {
	c := Default(1_000_000, 1)
	n := 0
	for b.Loop() {
		for range Edges(c) {
			n++
		}
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "edges/s")
}
