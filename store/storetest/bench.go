package storetest

import (
	"context"
	"iter"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/graphgen"
)

// The benchmarks every store runs, written once so that their figures
// compare side by side: the same generated graph, the same live batches,
// the same counting. A store's own benchmark file calls them with its
// constructors and adds what only it has.

// BenchEdges is the size of the generated graph of the benchmarks:
// graphgen.Default(1M), 20,000 users.
const BenchEdges = 1_000_000

// Generated yields the follows of graphgen.Default(BenchEdges, 1), in
// (follower, followee) order, each at the version of its time.
func Generated() iter.Seq[fg.Event] {
	return func(yield func(fg.Event) bool) {
		for e := range graphgen.Edges(graphgen.Default(BenchEdges, 1)) {
			if !yield(fg.NewEvent(e.Follower, e.Followee, fg.OpFollow, fg.VersionAt(e.Millis))) {
				return
			}
		}
	}
}

// LiveBatches returns a source of batches of n events shaped like live
// traffic on the generated graph's users: random followers, targets
// skewed toward popular users, one event in ten an unfollow, versions
// increasing from now. Sources of different seeds draw different edges.
// Each call returns the same slice, refilled.
func LiveBatches(n int, seed uint64) func() []fg.Event {
	const users = BenchEdges / 50
	rng := rand.New(rand.NewPCG(seed, 2))
	zipf := rand.NewZipf(rng, 1.1, 1, uint64(users-1))
	v := fg.VersionAt(time.Now().UnixMilli())
	batch := make([]fg.Event, n)
	return func() []fg.Event {
		for i := range batch {
			u := fg.UserID(1 + rng.IntN(users))
			t := fg.UserID(1 + zipf.Uint64())
			if t == u {
				t = u%fg.UserID(users) + 1
			}
			op := fg.OpFollow
			if rng.IntN(10) == 0 {
				op = fg.OpUnfollow
			}
			v++
			batch[i] = fg.NewEvent(u, t, op, v)
		}
		return batch
	}
}

// Imported returns a new store from open holding the generated graph.
func Imported(tb testing.TB, open func(tb testing.TB) Store) Store {
	tb.Helper()
	s := open(tb)
	if _, err := s.Import(context.Background(), Generated()); err != nil {
		tb.Fatal(err)
	}
	return s
}

// ApplyBatch is the batch of the Apply benchmarks, the persister's
// default --persist-batch.
const ApplyBatch = 1000

// BenchApply applies live batches of ApplyBatch events, each batch one
// committed transaction: to an empty store (Empty), to the generated
// graph (Graph1M), and the same batch again (Redelivered: no row
// changes). open makes an empty store, imported one holding the generated
// graph (Imported, plus whatever the store does after a bulk load).
func BenchApply(b *testing.B, open, imported func(tb testing.TB) Store) {
	b.Run("Empty", func(b *testing.B) {
		RunApply(b, open(b), LiveBatches(ApplyBatch, 1))
	})
	b.Run("Graph1M", func(b *testing.B) {
		RunApply(b, imported(b), LiveBatches(ApplyBatch, 1))
	})
	b.Run("Redelivered", func(b *testing.B) {
		s := open(b)
		events := LiveBatches(ApplyBatch, 1)()
		if _, err := s.Apply(context.Background(), events, 1); err != nil {
			b.Fatal(err)
		}
		RunApply(b, s, func() []fg.Event { return events })
	})
}

// BenchBatchSize applies live batches of 1000, 2000 and 5000 events (the
// persister's --persist-batch) to s, the generated graph, in that order:
// each size finds the store the sizes before it grew (by some 100,000
// edges each), which if anything favors the smaller ones.
func BenchBatchSize(b *testing.B, s Store) {
	for i, n := range []int{1000, 2000, 5000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			RunApply(b, s, LiveBatches(n, uint64(10+i)))
		})
	}
}

// RunApply applies the batches of next to s, each with the next
// sequence, and reports the events applied per second as rows/s, changed
// or not.
func RunApply(b *testing.B, s Store, next func() []fg.Event) {
	ctx := context.Background()
	seq, n := uint64(0), 0
	b.ResetTimer()
	for b.Loop() {
		seq++
		batch := next()
		if _, err := s.Apply(ctx, batch, seq); err != nil {
			b.Fatal(err)
		}
		n += len(batch)
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "rows/s")
}

// BenchEvents reads s, the generated graph, back with Events.
func BenchEvents(b *testing.B, s Store) {
	ctx := context.Background()
	b.ResetTimer()
	n := 0
	for b.Loop() {
		for _, err := range s.Events(ctx) {
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "rows/s")
}

// BenchImport imports the generated graph into empty stores from open,
// from events generated beforehand. Run it with -benchtime 1x: each op is
// a full import.
func BenchImport(b *testing.B, open func(tb testing.TB) Store) {
	ctx := context.Background()
	events := slices.Collect(Generated())
	n := 0
	for b.Loop() {
		b.StopTimer()
		s := open(b)
		b.StartTimer()
		k, err := s.Import(ctx, slices.Values(events))
		if err != nil {
			b.Fatal(err)
		}
		n += k
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "rows/s")
}
