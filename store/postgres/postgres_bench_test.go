package postgres_test

import (
	"context"
	"iter"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/graphgen"
	"github.com/followgraph/followgraph/store/postgres"
)

// The benchmarks are those of store/sqlite, on a database of their own
// each: the figures compare side by side.

// benchEdges is the size of the generated graph of the Apply, Events and
// Import benchmarks: graphgen.Default(1M), 20,000 users.
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

// importedStore returns a store on a new database holding the generated
// graph, vacuumed and analyzed as autovacuum would leave it, and the
// database's URL.
func importedStore(tb testing.TB) (*postgres.Store, string) {
	tb.Helper()
	url := newDatabase(tb)
	s := openStore(tb, url)
	if _, err := s.Import(context.Background(), generated()); err != nil {
		tb.Fatal(err)
	}
	query(tb, url, `VACUUM ANALYZE edges`)
	return s, url
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
// committed transaction (synchronous_commit as the server has it, on by
// default): to an empty store, to the generated 1M-edge graph, and the
// same batch again (a redelivery: no row changes). rows/s counts the
// events applied, as store/sqlite's benchmark does.
func BenchmarkApply(b *testing.B) {
	const batch = 1000
	b.Run("Empty", func(b *testing.B) {
		runApply(b, newStore(b), liveBatches(benchEdges/50, batch, 1), batch)
	})
	b.Run("Graph1M", func(b *testing.B) {
		s, _ := importedStore(b)
		runApply(b, s, liveBatches(benchEdges/50, batch, 1), batch)
	})
	// The same with every batch in one transaction, as before applySplit.
	b.Run("Graph1MOneTransaction", func(b *testing.B) {
		defer postgres.SetSplitMin(math.MaxInt)()
		s, _ := importedStore(b)
		runApply(b, s, liveBatches(benchEdges/50, batch, 1), batch)
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
// sizes before it grew (by some 100,000 edges each), which if anything
// favors the smaller ones.
func BenchmarkBatchSize(b *testing.B) {
	s, _ := importedStore(b)
	for i, n := range []int{1000, 2000, 5000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			runApply(b, s, liveBatches(benchEdges/50, n, uint64(10+i)), n)
		})
	}
}

// runApply applies the batches of next to s, each with the next
// sequence, and reports the events applied per second.
func runApply(b *testing.B, s *postgres.Store, next func() []fg.Event, batch int) {
	ctx := context.Background()
	seq := uint64(0)
	b.ResetTimer()
	for b.Loop() {
		seq++
		if _, err := s.Apply(ctx, next(), seq); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkEvents reads the generated 1M-edge graph back with Events.
func BenchmarkEvents(b *testing.B) {
	s, _ := importedStore(b)
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
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkFollowers reads the first page of 100 followers of the most
// followed user of the generated graph, and its counts.
func BenchmarkFollowers(b *testing.B) {
	s, url := importedStore(b)
	ctx := context.Background()
	top := fg.UserID(query(b, url, `SELECT followee FROM edges WHERE following
		GROUP BY followee ORDER BY count(*) DESC LIMIT 1`)[0][0].(int64))
	b.Run("Page", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.Followers(ctx, top, nil, 100); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Counts", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := s.Counts(ctx, top); err != nil {
				b.Fatal(err)
			}
		}
	})
}
