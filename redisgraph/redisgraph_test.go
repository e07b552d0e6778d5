package redisgraph

import (
	"math/rand/v2"
	"sync"
	"testing"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/graphtest"
	"github.com/followgraph/followgraph/redisgraph/internal/effects"
	"github.com/followgraph/followgraph/redisgraph/internal/redistest"
)

// TestConformance runs the conformance suite on a standalone Redis and on
// a Cluster, with the first page of every followers list served through
// the client-side cache.
func TestConformance(t *testing.T) {
	for _, m := range modes {
		t.Run(m.Name, func(t *testing.T) {
			c := m.Client(t)
			if g := newTestGraph(t, c); g.Cluster() != (m.Name == "Cluster") {
				t.Fatalf("Cluster() = %v on a %s Redis", g.Cluster(), m.Name)
			}
			graphtest.Run(t, func(tb testing.TB, o graphtest.Options) fg.Graph {
				return newTestGraph(tb, c, WithClock(o.Now), WithMaxFollowing(o.MaxFollowing), WithHook(o.Hook), WithRefused(o.Refused),
					WithRegion(o.Region), WithCacheThreshold(1))
			})
		})
	}
}

// TestConformanceChunked runs the conformance suites with every key of a
// user bounded to chunkedMax entries, on a standalone Redis and on a
// Cluster: the suites' lists then span many chunks, and their writes split
// them (chunks.go), so every read and write meets chunks. The suites take
// minutes; under the race detector, which TestConformance already runs
// them with, it is left out: .ci/run runs it without.
func TestConformanceChunked(t *testing.T) {
	if raceDetector {
		t.Skip("the conformance suites again, under the race detector: .ci/run runs this test without -race")
	}
	for _, m := range modes {
		t.Run(m.Name, func(t *testing.T) {
			c := m.Client(t)
			newGraph := func(tb testing.TB, o graphtest.Options) fg.Graph {
				return newTestGraph(tb, c, WithClock(o.Now), WithMaxFollowing(o.MaxFollowing), WithHook(o.Hook), WithRefused(o.Refused),
					WithRegion(o.Region), WithCacheThreshold(1), WithMaxKeyMembers(chunkedMax))
			}
			t.Run("Graph", func(t *testing.T) { graphtest.Run(t, newGraph) })
			t.Run("States", func(t *testing.T) { graphtest.RunStates(t, newGraph) })
		})
	}
}

// chunkedMax is the bound of TestConformanceChunked's keys.
const chunkedMax = 4

// TestConformanceStates runs the conformance suite of account states on
// a standalone Redis and on a Cluster, whose jobs the suite runs.
func TestConformanceStates(t *testing.T) {
	for _, m := range modes {
		t.Run(m.Name, func(t *testing.T) {
			c := m.Client(t)
			graphtest.RunStates(t, func(tb testing.TB, o graphtest.Options) fg.Graph {
				return newTestGraph(tb, c, WithClock(o.Now), WithMaxFollowing(o.MaxFollowing), WithHook(o.Hook), WithRefused(o.Refused), WithCacheThreshold(1))
			})
		})
	}
}

// TestConformanceSecondStepFaults runs the conformance suite on a Cluster
// whose second steps fail at random, each at most one attempt short of
// all of them, so that every write is complete when it returns, through
// the retries, as the suite expects. It takes minutes; under the race
// detector, which TestConformance already runs the suite with, it is left
// out: .ci/run runs it without.
func TestConformanceSecondStepFaults(t *testing.T) {
	if raceDetector {
		t.Skip("the conformance suite again, under the race detector: .ci/run runs this test without -race")
	}
	c := redistest.Cluster(t)
	graphtest.Run(t, func(tb testing.TB, o graphtest.Options) fg.Graph {
		var mu sync.Mutex
		failed := map[string]int{}
		return newTestGraph(tb, c, WithClock(o.Now), WithMaxFollowing(o.MaxFollowing), WithHook(o.Hook), WithRefused(o.Refused),
			WithRegion(o.Region), withSecondStepFault(func(e fg.Event) error {
				mu.Lock()
				defer mu.Unlock()
				if failed[e.ID()] < effects.Attempts-1 && rand.IntN(2) == 0 {
					failed[e.ID()]++
					return errInjected
				}
				return nil
			}))
	})
}
