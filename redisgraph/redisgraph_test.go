package redisgraph

import (
	"testing"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/graphtest"
)

// TestConformance runs the conformance suite on a standalone Redis and on
// a Cluster, with the first page of every followers list served through
// the client-side cache.
func TestConformance(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			c := m.client(t)
			if g := newTestGraph(t, c); g.Cluster() != (m.name == "Cluster") {
				t.Fatalf("Cluster() = %v on a %s Redis", g.Cluster(), m.name)
			}
			graphtest.Run(t, func(tb testing.TB, o graphtest.Options) fg.Graph {
				return newTestGraph(tb, c, WithClock(o.Now), WithMaxFollowing(o.MaxFollowing), WithHook(o.Hook), WithCacheThreshold(1))
			})
		})
	}
}
