package memgraph

import (
	"context"
	"fmt"
	"iter"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/graphgen"
)

// The benchmarks share one graph: the generated 10M-edge power-law graph
// plus the shapes the targets name, on users of their own:
//
//   - pool: 2M users (ids from poolBase), each following a few of the below
//   - celeb2M: followed by the whole pool
//   - celebA, celebB: 1M followers each, 100k of them in common (10%)
//   - heavyA, heavyB: each following 100k of the pool, 10k in common (10%)
//   - suggester: follows 500 of the pool, each of whom follows 500 others
const (
	baseEdges = 10_000_000
	poolBase  = fg.UserID(1_000_000_000_000)
	poolSize  = 2_000_000
	celeb2M   = fg.UserID(2_000_000_000_000)
	celebA    = celeb2M + 1
	celebB    = celeb2M + 2
	heavyA    = celeb2M + 3
	heavyB    = celeb2M + 4
	suggester = celeb2M + 5
)

var (
	fixtureOnce sync.Once
	fixture     *Graph
	baseOnce    sync.Once
	base        *Graph // the generated graph alone
	followSeed  atomic.Uint64
)

// baseGraph returns the generated 10M-edge graph alone, loaded once.
func baseGraph(b *testing.B) *Graph {
	b.Helper()
	baseOnce.Do(func() {
		base = New()
		if err := base.Load(context.Background(), baseEvents()); err != nil {
			b.Fatal(err)
		}
		runtime.GC()
	})
	return base
}

func baseEvents() iter.Seq[fg.Event] {
	return func(yield func(fg.Event) bool) {
		for e := range graphgen.Edges(graphgen.Default(baseEdges, 1)) {
			if !yield(fg.NewEvent(e.Follower, e.Followee, fg.OpFollow, fg.VersionAt(e.Millis))) {
				return
			}
		}
	}
}

func shapeEvents() iter.Seq[fg.Event] {
	return func(yield func(fg.Event) bool) {
		rng := rand.New(rand.NewPCG(7, 7))
		ms := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
		follow := func(u, t fg.UserID) bool {
			ms += int64(rng.IntN(3))
			return yield(fg.NewEvent(u, t, fg.OpFollow, fg.VersionAt(ms)))
		}
		pool := func(i int) fg.UserID { return poolBase + fg.UserID(i) }
		for i := range poolSize {
			ok := follow(pool(i), celeb2M)
			if i < 1_000_000 {
				ok = ok && follow(pool(i), celebA)
			}
			if i >= 900_000 && i < 1_900_000 {
				ok = ok && follow(pool(i), celebB)
			}
			if !ok {
				return
			}
		}
		for i := range 100_000 {
			if !follow(heavyA, pool(i)) || !follow(heavyB, pool(90_000+i)) {
				return
			}
		}
		for i := range 500 {
			if !follow(suggester, pool(i)) {
				return
			}
			picked := map[int]bool{i: true}
			r := rand.New(rand.NewPCG(uint64(i), 1))
			for len(picked) < 501 {
				j := r.IntN(poolSize)
				if picked[j] {
					continue
				}
				picked[j] = true
				if !follow(pool(i), pool(j)) {
					return
				}
			}
		}
	}
}

func benchGraph(b *testing.B) *Graph {
	b.Helper()
	fixtureOnce.Do(func() {
		g := New()
		all := func(yield func(fg.Event) bool) {
			for e := range baseEvents() {
				if !yield(e) {
					return
				}
			}
			for e := range shapeEvents() {
				if !yield(e) {
					return
				}
			}
		}
		if err := g.Load(context.Background(), all); err != nil {
			b.Fatal(err)
		}
		runtime.GC() // the load's garbage is not the benchmarks' cost
		fixture = g
	})
	return fixture
}

func heapAfterGC() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkMemory reports the heap of the generated 10M-edge graph, both
// directions with follow times, per edge: after Load, and after building
// the same graph by Follow calls in random order.
func BenchmarkMemory(b *testing.B) {
	ctx := context.Background()
	b.Run("Load", func(b *testing.B) {
		for b.Loop() {
			before := heapAfterGC()
			g := New()
			if err := g.Load(ctx, baseEvents()); err != nil {
				b.Fatal(err)
			}
			after := heapAfterGC()
			edges := g.Stats().Edges
			b.ReportMetric(float64(after-before)/float64(edges), "bytes/edge")
			b.ReportMetric(float64(edges), "edges")
			runtime.KeepAlive(g)
		}
	})
	b.Run("Follow", func(b *testing.B) {
		var edges [][2]fg.UserID
		for e := range graphgen.Edges(graphgen.Default(baseEdges, 1)) {
			edges = append(edges, [2]fg.UserID{e.Follower, e.Followee})
		}
		rand.New(rand.NewPCG(1, 1)).Shuffle(len(edges), func(i, j int) { edges[i], edges[j] = edges[j], edges[i] })
		for b.Loop() {
			before := heapAfterGC()
			g := New()
			for _, e := range edges {
				if _, err := g.Follow(ctx, e[0], e[1]); err != nil {
					b.Fatal(err)
				}
			}
			after := heapAfterGC()
			b.ReportMetric(float64(after-before)/float64(len(edges)), "bytes/edge")
			runtime.KeepAlive(g)
		}
	})
}

// BenchmarkLoad is the start-up bulk load of the generated 10M edges.
func BenchmarkLoad(b *testing.B) {
	events := slices.Collect(baseEvents())
	b.ResetTimer()
	for b.Loop() {
		g := New()
		if err := g.Load(context.Background(), slices.Values(events)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(events))*float64(b.N)/b.Elapsed().Seconds(), "edges/s")
}

func BenchmarkCommonFollowing(b *testing.B) {
	g, ctx := benchGraph(b), context.Background()
	b.Run("100kx100k", func(b *testing.B) {
		for b.Loop() {
			p, err := g.CommonFollowing(ctx, heavyA, heavyB, fg.PageRequest{Limit: 50})
			if err != nil || p.Count != 10_000 || len(p.Entries) != 50 {
				b.Fatal(p.Count, len(p.Entries), err)
			}
		}
	})
}

func BenchmarkCommonFollowers(b *testing.B) {
	g, ctx := benchGraph(b), context.Background()
	b.Run("1Mx1M", func(b *testing.B) {
		for b.Loop() {
			p, err := g.CommonFollowers(ctx, celebA, celebB, fg.PageRequest{Limit: 50})
			if err != nil || p.Count != 100_000 || len(p.Entries) != 50 {
				b.Fatal(p.Count, len(p.Entries), err)
			}
		}
	})
}

// BenchmarkRelations asks the relation of a generated user who follows a
// few hundred people to 100 ids: a third followed, a third following, a
// third random.
func BenchmarkRelations(b *testing.B) {
	g, ctx := benchGraph(b), context.Background()
	var viewer fg.UserID
	for u := fg.UserID(1); ; u++ {
		c, _ := g.Counts(ctx, []fg.UserID{u})
		if c[0].FollowingCount >= 300 && c[0].FollowerCount >= 100 {
			viewer = u
			break
		}
	}
	following, _ := g.Following(ctx, viewer, fg.PageRequest{Limit: 34})
	followers, _ := g.Followers(ctx, viewer, fg.PageRequest{Limit: 33})
	var ids []fg.UserID
	for _, e := range append(following.Entries, followers.Entries...) {
		ids = append(ids, e.ID)
	}
	rng := rand.New(rand.NewPCG(5, 5))
	for len(ids) < 100 {
		ids = append(ids, fg.UserID(1+rng.IntN(baseEdges/50)))
	}
	b.Run("100ids", func(b *testing.B) {
		for b.Loop() {
			if _, err := g.Relations(ctx, viewer, ids); err != nil {
				b.Fatal(err)
			}
		}
	})
	// The same viewer muting the followed third and blocking ten of the
	// random ids: every flag is read from its rels.
	b.Run("100ids/links", func(b *testing.B) {
		for _, id := range ids[:34] {
			if _, err := g.Mute(ctx, viewer, id, 0); err != nil {
				b.Fatal(err)
			}
		}
		for _, id := range ids[90:] {
			if _, err := g.Block(ctx, viewer, id); err != nil {
				b.Fatal(err)
			}
		}
		b.ResetTimer()
		for b.Loop() {
			if _, err := g.Relations(ctx, viewer, ids); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkFollowers(b *testing.B) {
	g, ctx := benchGraph(b), context.Background()
	req := fg.PageRequest{Limit: 50}
	b.Run("2M/first", func(b *testing.B) {
		for b.Loop() {
			if p, err := g.Followers(ctx, celeb2M, req); err != nil || len(p.Entries) != 50 {
				b.Fatal(err)
			}
		}
	})
	for range 99 {
		p, _ := g.Followers(ctx, celeb2M, req)
		req.Cursor = p.Next
	}
	b.Run("2M/page100", func(b *testing.B) {
		for b.Loop() {
			if p, err := g.Followers(ctx, celeb2M, req); err != nil || len(p.Entries) != 50 {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkFollowUnfollow has random followers of the user with 2M
// followers unfollow it (from anywhere in the list) and follow it again (at
// the newest end), and reports the latency percentiles of each op.
func BenchmarkFollowUnfollow(b *testing.B) {
	g, ctx := benchGraph(b), context.Background()
	b.Run("2M", func(b *testing.B) {
		rng := rand.New(rand.NewPCG(11, 11))
		var lat []time.Duration
		for b.Loop() {
			u := poolBase + fg.UserID(rng.IntN(poolSize))
			t0 := time.Now()
			if removed, err := g.Unfollow(ctx, u, celeb2M); err != nil || !removed {
				b.Fatal(removed, err)
			}
			t1 := time.Now()
			if res, err := g.Follow(ctx, u, celeb2M); err != nil || !res.Created {
				b.Fatal(res, err)
			}
			lat = append(lat, t1.Sub(t0), time.Since(t1))
		}
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-µs")
		b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e3, "p99-µs")
	})
}

// BenchmarkFollowParallel makes new follows between random generated users
// from two goroutines (GOMAXPROCS is 2 here) on the generated 10M-edge
// graph (which grows by the follows of each run).
func BenchmarkFollowParallel(b *testing.B) {
	g := baseGraph(b)
	b.SetParallelism(1)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		rng := rand.New(rand.NewPCG(followSeed.Add(1), 99)) // new edges on every run
		ctx := context.Background()
		for pb.Next() {
			u, t := fg.UserID(1+rng.IntN(baseEdges/50)), fg.UserID(1+rng.IntN(baseEdges/50))
			if u == t {
				t++
			}
			if _, err := g.Follow(ctx, u, t); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "follows/s")
}

func BenchmarkSuggestions(b *testing.B) {
	g, ctx := benchGraph(b), context.Background()
	b.Run("500x500", func(b *testing.B) {
		for b.Loop() {
			s, err := g.Suggestions(ctx, suggester, 20)
			if err != nil || len(s) != 20 {
				b.Fatal(len(s), err)
			}
		}
	})
}

// BenchmarkLinks reads the first page of 50 of the pending follow requests
// of a private account with 1k and 100k of them: Links sorts the whole
// list for each page.
func BenchmarkLinks(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{1_000, 100_000} {
		g := New()
		const private = fg.UserID(1)
		if _, err := g.SetPrivate(ctx, private, true); err != nil {
			b.Fatal(err)
		}
		for i := range n {
			if _, err := g.Follow(ctx, fg.UserID(2+i), private); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(fmt.Sprintf("requests%d", n), func(b *testing.B) {
			for b.Loop() {
				if p, err := g.Links(ctx, fg.ListFollowRequests, private, fg.PageRequest{Limit: 50}); err != nil || len(p.Entries) != 50 {
					b.Fatal(len(p.Entries), err)
				}
			}
		})
	}
}

// BenchmarkTombstones measures the heap of the generated 10M-edge
// graph after Load (loaded) around 1M distinct unfollows: before them,
// after them with their tombstones kept (kept), and once their horizon
// has passed and PurgeTombstones removed them, in steps of 1000 as serve
// does (purged). The target: purged/before ≤ 1.05.
//
//   - Unfollow: 1M of the loaded graph's own edges are unfollowed, in
//     random order; before is the loaded graph.
//   - Churn: 1M new edges among its users are followed, then unfollowed
//     in random order; before is the graph with them, and purged/loaded
//     is the whole cycle's cost: the room the follows left in the chunks
//     (see chunks.remove), not tombstones.
func BenchmarkTombstones(b *testing.B) {
	const n = 1_000_000
	ctx := context.Background()
	cfg := graphgen.Default(baseEdges, 1)
	for _, churn := range []bool{false, true} {
		name := "Unfollow"
		if churn {
			name = "Churn"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				pairs := churnPairs(cfg, n, churn)
				heap0 := heapAfterGC()
				g := New()
				if err := g.Load(ctx, func(yield func(fg.Event) bool) {
					for e := range graphgen.Edges(cfg) {
						if !yield(fg.NewEvent(e.Follower, e.Followee, fg.OpFollow, fg.VersionAt(e.Millis))) {
							return
						}
					}
				}); err != nil {
					b.Fatal(err)
				}
				loaded := heapAfterGC() - heap0
				if churn {
					for _, p := range pairs {
						if r, err := g.Follow(ctx, p[0], p[1]); err != nil || !r.Created {
							b.Fatal(p, r, err)
						}
					}
				}
				before := heapAfterGC() - heap0
				rand.New(rand.NewPCG(2, 2)).Shuffle(len(pairs), func(i, j int) { pairs[i], pairs[j] = pairs[j], pairs[i] })
				for _, p := range pairs {
					if ok, err := g.Unfollow(ctx, p[0], p[1]); err != nil || !ok {
						b.Fatal(p, err)
					}
				}
				kept := heapAfterGC() - heap0
				horizon := fg.VersionAt(time.Now().Add(time.Minute).UnixMilli())
				removed := 0
				for more := true; more; {
					k, m, err := g.PurgeTombstones(ctx, horizon, 1000)
					if err != nil {
						b.Fatal(err)
					}
					removed, more = removed+k, m
				}
				purged := heapAfterGC() - heap0
				if removed != n {
					b.Fatalf("removed %d tombstones, want %d", removed, n)
				}
				b.ReportMetric(float64(kept-purged)/n, "bytes/tombstone")
				b.ReportMetric(float64(kept)/float64(before), "kept/before")
				b.ReportMetric(float64(purged)/float64(before), "purged/before")
				b.ReportMetric(float64(purged)/float64(loaded), "purged/loaded")
				runtime.KeepAlive(g)
				runtime.KeepAlive(pairs)
			}
		})
	}
}

// churnPairs returns n distinct edges of the generated graph of cfg, or,
// with fresh, between its users and not in it.
func churnPairs(cfg graphgen.Config, n int, fresh bool) [][2]fg.UserID {
	rng := rand.New(rand.NewPCG(1, 1))
	var edges [][2]fg.UserID
	for e := range graphgen.Edges(cfg) {
		edges = append(edges, [2]fg.UserID{e.Follower, e.Followee})
	}
	if !fresh {
		rng.Shuffle(len(edges), func(i, j int) { edges[i], edges[j] = edges[j], edges[i] })
		return slices.Clip(edges[:n])
	}
	have := make(map[[2]fg.UserID]bool, len(edges)+n)
	var users []fg.UserID
	for _, e := range edges {
		have[e] = true
		users = append(users, e[0], e[1])
	}
	slices.Sort(users)
	users = slices.Compact(users)
	pairs := make([][2]fg.UserID, 0, n)
	for len(pairs) < n {
		p := [2]fg.UserID{users[rng.IntN(len(users))], users[rng.IntN(len(users))]}
		if p[0] != p[1] && !have[p] {
			have[p] = true
			pairs = append(pairs, p)
		}
	}
	return pairs
}
