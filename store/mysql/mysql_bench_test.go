package mysql_test

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
	"github.com/followgraph/followgraph/store/mysql"
)

// benchEdges is the size of the generated graph of the benchmarks:
// graphgen.Default(1M), 20,000 users.
const benchEdges = 1_000_000

// generated yields the follows of graphgen.Default(benchEdges, 1), in
// (follower, followee) order, each at the version of its time.
func generated() iter.Seq[fg.Event] {
	return func(yield func(fg.Event) bool) {
		for e := range graphgen.Edges(graphgen.Default(benchEdges, 1)) {
			if !yield(fg.NewEvent(e.Follower, e.Followee, fg.OpFollow, fg.VersionAt(e.Millis))) {
				return
			}
		}
	}
}

// importedStore returns a store on a database of tb's own holding the
// generated graph.
func importedStore(tb testing.TB) *mysql.Store {
	tb.Helper()
	s := newStore(tb)
	if _, err := s.Import(context.Background(), generated()); err != nil {
		tb.Fatal(err)
	}
	return s
}

// liveBatches returns a source of batches of n events shaped like live
// traffic: random followers among users, targets skewed toward popular
// users, one event in ten an unfollow, versions increasing from now.
// Sources of different seeds draw different edges.
func liveBatches(users, n int, seed uint64) func() []fg.Event {
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

// BenchmarkApply applies batches of 1000 live events, each batch one
// committed transaction (durable as the server's
// innodb_flush_log_at_trx_commit makes it): to an empty store, to the
// generated 1M-edge graph, and the same batch again (a redelivery: no row
// changes). edges/s counts the events applied, changed or not.
//
// On a server whose buffer pool is smaller than the 1M-edge table and its
// indexes (some 150 MiB; MariaDB's default pool is 128 MiB), Graph1M
// measures mostly the disk: each batch then waits for some 300 to 500
// page reads and causes some 1000 page writes (see upsert in write.go).
func BenchmarkApply(b *testing.B) {
	const batch = 1000
	b.Run("Empty", func(b *testing.B) {
		runApply(b, newStore(b), liveBatches(benchEdges/50, batch, 1), batch)
	})
	b.Run("Graph1M", func(b *testing.B) {
		runApply(b, importedStore(b), liveBatches(benchEdges/50, batch, 1), batch)
	})
	b.Run("Redelivered", func(b *testing.B) {
		s := newStore(b)
		events := liveBatches(benchEdges/50, batch, 1)()
		if _, err := s.Apply(context.Background(), events, 1); err != nil {
			b.Fatal(err)
		}
		runApply(b, s, func() []fg.Event { return events }, batch)
	})
}

// BenchmarkBatchSize applies live batches of 1000, 2000 and 5000 events
// (the persister's --persist-batch) to the generated 1M-edge graph, one
// store for all three, in that order: each size finds the store the
// sizes before it grew, which if anything favors the smaller ones.
func BenchmarkBatchSize(b *testing.B) {
	s := importedStore(b)
	for i, n := range []int{1000, 2000, 5000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			runApply(b, s, liveBatches(benchEdges/50, n, uint64(10+i)), n)
		})
	}
}

// runApply applies the batches of next to s, each with the next
// sequence, and reports the events applied per second.
func runApply(b *testing.B, s *mysql.Store, next func() []fg.Event, batch int) {
	ctx := context.Background()
	seq := uint64(0)
	b.ResetTimer()
	for b.Loop() {
		seq++
		if _, err := s.Apply(ctx, next(), seq); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "edges/s")
}

// BenchmarkEvents reads the generated 1M-edge graph back with Events.
func BenchmarkEvents(b *testing.B) {
	s := importedStore(b)
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
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "edges/s")
}

// BenchmarkImport imports the generated 1M-edge graph into an empty store,
// from events generated beforehand. Run it with -benchtime 1x: each op is
// a full import.
func BenchmarkImport(b *testing.B) {
	ctx := context.Background()
	events := slices.Collect(generated())
	n := 0
	for b.Loop() {
		b.StopTimer()
		s := newStore(b)
		b.StartTimer()
		k, err := s.Import(ctx, slices.Values(events))
		if err != nil {
			b.Fatal(err)
		}
		n += k
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "edges/s")
}
