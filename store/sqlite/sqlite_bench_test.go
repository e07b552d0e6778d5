package sqlite_test

import (
	"context"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/store/storetest"
)

// The benchmarks are storetest's, the same on every store (see
// store/storetest/bench.go), on a file in the benchmark's temporary
// directory.

func open(tb testing.TB) storetest.Store { return newStore(tb) }

func imported(tb testing.TB) storetest.Store { return storetest.Imported(tb, open) }

// BenchmarkApply applies batches of 1000 live events, each batch one
// committed (fsynced) transaction: to an empty store, to the generated
// 1M-edge graph, and the same batch again (a redelivery: no row changes).
func BenchmarkApply(b *testing.B) { storetest.BenchApply(b, open, imported) }

// BenchmarkEvents reads the generated 1M-edge graph back with Events.
func BenchmarkEvents(b *testing.B) { storetest.BenchEvents(b, imported(b)) }

// BenchmarkImport imports the generated 1M-edge graph into an empty store.
// Run it with -benchtime 1x: each op is a full import.
func BenchmarkImport(b *testing.B) { storetest.BenchImport(b, open) }

// BenchmarkTombstonePages measures the pages in use of the SQLite file
// (page_count - freelist_count: what its later writes cannot reuse)
// holding the generated 1M-edge graph (loaded), then after 1M follows of
// new edges among its users (before), after their 1M unfollows with the
// tombstones kept (kept), and once PurgeTombstones removed them in steps
// of 1000 as serve does (purged), every change applied in batches of
// 1000 as the persister does; and the file's size after a VACUUM against
// the loaded file's (vacuumed/loaded). The target: purged/before ≤ 1.05.
// Run it with -benchtime 1x.
func BenchmarkTombstonePages(b *testing.B) {
	ctx := context.Background()
	const n = 1_000_000
	for b.Loop() {
		path := filepath.Join(b.TempDir(), "followgraph.db")
		s := openStore(b, path)
		if _, err := s.Import(ctx, storetest.Generated()); err != nil {
			b.Fatal(err)
		}
		inUse := func() float64 {
			pages, _ := strconv.Atoi(pragma(b, path, "page_count"))
			free, _ := strconv.Atoi(pragma(b, path, "freelist_count"))
			return float64(pages - free)
		}
		size := func() float64 {
			execRaw(b, path, "PRAGMA wal_checkpoint(TRUNCATE)")
			st, err := os.Stat(path)
			if err != nil {
				b.Fatal(err)
			}
			return float64(st.Size())
		}
		loaded, loadedSize := inUse(), size()
		pairs := newEdges(n)
		seq := uint64(0)
		apply := func(op fg.Op, v fg.Version) {
			batch := make([]fg.Event, 0, storetest.ApplyBatch)
			for i, p := range pairs {
				batch = append(batch, fg.NewEvent(p[0], p[1], op, v+fg.Version(i)))
				if len(batch) == cap(batch) || i == len(pairs)-1 {
					seq++
					if _, err := s.Apply(ctx, batch, seq); err != nil {
						b.Fatal(err)
					}
					batch = batch[:0]
				}
			}
		}
		v := fg.VersionAt(time.Now().UnixMilli())
		apply(fg.OpFollow, v)
		before := inUse()
		apply(fg.OpUnfollow, v+n)
		kept := inUse()
		removed := 0
		for more := true; more; {
			k, m, err := s.PurgeTombstones(ctx, v+2*n, 1000)
			if err != nil {
				b.Fatal(err)
			}
			removed, more = removed+k, m
		}
		if removed != n {
			b.Fatalf("removed %d tombstones, want %d", removed, n)
		}
		purged := inUse()
		execRaw(b, path, "VACUUM")
		b.ReportMetric(kept/before, "kept/before")
		b.ReportMetric(purged/before, "purged/before")
		b.ReportMetric(purged/loaded, "purged/loaded")
		b.ReportMetric(size()/loadedSize, "vacuumed/loaded")
	}
}

// newEdges returns n distinct edges between users of the generated graph
// (ids 1 to storetest.BenchEdges/50) that it does not have.
func newEdges(n int) [][2]fg.UserID {
	have := make(map[[2]fg.UserID]bool)
	for e := range storetest.Generated() {
		have[[2]fg.UserID{e.User, e.Target}] = true
	}
	users := make(map[fg.UserID]bool)
	for k := range have {
		users[k[0]], users[k[1]] = true, true
	}
	ids := slices.Sorted(maps.Keys(users))
	rng := rand.New(rand.NewPCG(3, 3))
	pairs := make([][2]fg.UserID, 0, n)
	for len(pairs) < n {
		p := [2]fg.UserID{ids[rng.IntN(len(ids))], ids[rng.IntN(len(ids))]}
		if p[0] != p[1] && !have[p] {
			have[p] = true
			pairs = append(pairs, p)
		}
	}
	return pairs
}
