package redisgraph_test

// The Redis engine against the seeds' design (seeds_bench_test.go), side by
// side in one run on the same standalone Redis:
//
//	FOLLOWGRAPH_TEST_REDIS=redis://127.0.0.1:6379 go test -run '^$' -bench . -count 5 -timeout 30m ./redisgraph/
//
// (about 5 minutes; 2 with -count 1). Each top-level benchmark builds its
// fixtures once, under key prefixes of its own, with pipelined commands
// (Apply for the engine, seeds.load for the baseline: the same edges and
// follow times), and deletes them when its sub-benchmarks are done. The set
// queries and pages also report, from SLOWLOG, the slowest single command
// Redis ran for them (max-cmd-µs) and how many commands per operation took
// over 1 ms (slow-cmds/op); for that they set slowlog-log-slower-than and
// slowlog-max-len while they run, so do not run them alongside tests that
// read the slow log. BenchmarkFollow also runs redis-benchmark when it is
// installed.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/graphgen"
	"github.com/followgraph/followgraph/redisgraph"
)

// benchGraph returns an engine on c under prefix p, with opts.
func benchGraph(tb testing.TB, c rueidis.Client, p string, opts ...redisgraph.Option) *redisgraph.Graph {
	tb.Helper()
	g, err := redisgraph.New(tb.Context(), c, append([]redisgraph.Option{redisgraph.WithPrefix(p), redisgraph.WithVouchScope("fgtest")}, opts...)...)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := g.InitOutbox(context.Background()); err != nil {
		tb.Fatal(err)
	}
	if err := g.VouchAll(context.Background(), 0); err != nil {
		tb.Fatal(err)
	}
	return g
}

// benchApply applies events in pipelined batches from a few goroutines.
// The events must be of distinct edges.
func benchApply(ctx context.Context, g *redisgraph.Graph, events []fg.Event) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		sem   = make(chan struct{}, 4)
	)
	for batch := range slices.Chunk(events, 2000) {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := g.Apply(ctx, batch); err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return first
}

var benchEpoch = time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC).UnixMilli()

func benchFollowEvent(u, t fg.UserID, ms int64) fg.Event {
	return fg.NewEvent(u, t, fg.OpFollow, fg.VersionAt(ms))
}

// Follow throughput: new follows between random users among 1M, from 64
// goroutines (GOMAXPROCS is 2 here: parallelism 32), each op one Follow
// (ours) or one EVALSHA of the seeds' script, through the same client. The
// reference, RedisBenchmark, runs testdata/follow_bench.sh: redis-benchmark
// with 64 connections and pipelines of 16 sending EVALSHA of the seeds'
// script, the same Lua as Seeds; RedisBenchmarkSeedsWithEvent sends the
// seeds' script with an XADD of the change event added (what the outbox
// alone costs their design); RedisBenchmarkOurScript sends the engine's
// follow script the same way, which is what Redis alone can do with it.
// Each run starts on empty keys (the engine's outbox would otherwise fill
// up: nothing relays it here).
const (
	benchUsers      = 1_000_000
	benchGoroutines = 64
)

var benchFollowSeed atomic.Uint64

func BenchmarkFollow(b *testing.B) {
	c := benchRedis(b)
	b.Run("Ours", func(b *testing.B) {
		g := benchGraph(b, c, benchPrefix(b, c))
		benchFollows(b, func(ctx context.Context, u, t fg.UserID) error {
			_, err := g.Follow(ctx, u, t)
			return err
		})
	})
	b.Run("Seeds", func(b *testing.B) {
		s := seeds{c, benchPrefix(b, c)}
		benchFollows(b, func(ctx context.Context, u, t fg.UserID) error {
			_, err := s.follow(ctx, u, t, time.Now().UnixMilli())
			return err
		})
	})
	for _, m := range [][2]string{
		{"seeds", "RedisBenchmark"},
		{"seeds-event", "RedisBenchmarkSeedsWithEvent"},
		{"ours", "RedisBenchmarkOurScript"},
	} {
		mode, name := m[0], m[1]
		b.Run(name, func(b *testing.B) {
			if _, err := exec.LookPath("redis-benchmark"); err != nil {
				b.Skip("redis-benchmark is not installed (apt-get install redis-tools)")
			}
			var rps float64
			for b.Loop() {
				rps = benchRedisBenchmark(b, 300_000, mode)
			}
			b.ReportMetric(rps, "follows/s")
		})
	}
}

func benchFollows(b *testing.B, follow func(ctx context.Context, u, t fg.UserID) error) {
	b.SetParallelism((benchGoroutines + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		rng := rand.New(rand.NewPCG(benchFollowSeed.Add(1), 64))
		for pb.Next() {
			u, t := fg.UserID(1+rng.IntN(benchUsers)), fg.UserID(1+rng.IntN(benchUsers))
			if u == t {
				t = u%benchUsers + 1
			}
			if err := follow(ctx, u, t); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "follows/s")
}

// benchRedisBenchmark runs testdata/follow_bench.sh for n requests and
// returns the requests per second redis-benchmark reports.
func benchRedisBenchmark(b *testing.B, n int, mode string) float64 {
	b.Helper()
	out, err := exec.Command("sh", "testdata/follow_bench.sh", benchURL(), strconv.Itoa(n), mode).Output()
	if err != nil {
		b.Fatalf("follow_bench.sh: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	fields := strings.Split(lines[len(lines)-1], `","`)
	if len(fields) < 2 {
		b.Fatalf("follow_bench.sh printed %q", out)
	}
	rps, err := strconv.ParseFloat(fields[1], 64)
	if err != nil {
		b.Fatalf("follow_bench.sh printed %q: %v", out, err)
	}
	return rps
}

// Relations of a viewer who follows 2000 users and is followed by 2000
// (500 of them mutual) to 50 ids: 12 followed only, 12 followers only, 12
// mutual, 14 with no relation. Seeds is the temporary-key method one
// command per round trip, as the article sends them; SeedsPipelined sends
// the same commands in one round trip.
func BenchmarkRelations(b *testing.B) {
	c, ctx := benchRedis(b), context.Background()
	const viewer = fg.UserID(1)
	var events []fg.Event
	for i := range 2000 {
		events = append(events,
			benchFollowEvent(viewer, fg.UserID(1001+i), benchEpoch+int64(i)),
			benchFollowEvent(fg.UserID(2501+i), viewer, benchEpoch+int64(i)))
	}
	var ids []fg.UserID
	want := map[fg.UserID]fg.Relation{}
	add := func(from fg.UserID, n int, r fg.Relation) {
		for i := range n {
			id := from + fg.UserID(i*37)
			ids, want[id] = append(ids, id), r
		}
	}
	add(1001, 12, fg.RelationFollowing)
	add(3001, 12, fg.RelationFollower)
	add(2501, 12, fg.RelationMutual)
	add(100_001, 14, fg.RelationNone)
	rand.New(rand.NewPCG(5, 5)).Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })

	g := benchGraph(b, c, benchPrefix(b, c))
	s := seeds{c, benchPrefix(b, c)}
	if err := benchApply(ctx, g, events); err != nil {
		b.Fatal(err)
	}
	if err := s.load(ctx, events, false); err != nil {
		b.Fatal(err)
	}
	check := func(b *testing.B, got []fg.Relation) {
		for i, id := range ids {
			if got[i] != want[id] {
				b.Fatalf("relation to %d: got %s, want %s", id, got[i], want[id])
			}
		}
	}
	b.Run("Ours", func(b *testing.B) {
		rs, err := g.Relations(ctx, viewer, ids)
		if err != nil {
			b.Fatal(err)
		}
		got := make([]fg.Relation, len(rs))
		for i, r := range rs {
			got[i] = r.Relation
		}
		check(b, got)
		for b.Loop() {
			if _, err := g.Relations(ctx, viewer, ids); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, x := range []struct {
		name      string
		relations func(context.Context, fg.UserID, []fg.UserID) ([]fg.Relation, error)
	}{{"Seeds", s.relations}, {"SeedsPipelined", s.relationsPipelined}} {
		relations := x.relations
		b.Run(x.name, func(b *testing.B) {
			got, err := relations(ctx, viewer, ids)
			if err != nil {
				b.Fatal(err)
			}
			check(b, got)
			for b.Loop() {
				if _, err := relations(ctx, viewer, ids); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Common following of two users who follow 100k users each, 50k of them
// in common: the exact count and the first page of 50. The engine's count
// is remembered per pair while neither user changes: Cold is the first
// call (a new Graph on the same keys for each op, made outside the timer),
// Warm the same call again. SINTER is the whole intersection of the two
// following Sets in one reply; ZINTERSTORE the count and first page from
// the stored intersection of the two sorted sets.
func BenchmarkCommonFollowing(b *testing.B) {
	c, ctx := benchRedis(b), context.Background()
	const (
		userA, userB = fg.UserID(1), fg.UserID(2)
		pool         = fg.UserID(1_000_000)
		n, common    = 100_000, 50_000
	)
	var events []fg.Event
	for i := range n {
		events = append(events,
			benchFollowEvent(userA, pool+fg.UserID(i), benchEpoch+int64(i)),
			benchFollowEvent(userB, pool+fg.UserID(n-common+i), benchEpoch+int64(2*i)))
	}
	gp := benchPrefix(b, c)
	g := benchGraph(b, c, gp)
	s := seeds{c, benchPrefix(b, c)}
	if err := benchApply(ctx, g, events); err != nil {
		b.Fatal(err)
	}
	if err := s.load(ctx, events, true); err != nil {
		b.Fatal(err)
	}
	req := fg.PageRequest{Limit: 50}
	check := func(b *testing.B, p fg.SetPage, err error) {
		if err != nil || p.Count != common || len(p.Entries) != 50 {
			b.Fatalf("count %d, %d entries, %v", p.Count, len(p.Entries), err)
		}
	}
	b.Run("Ours/Cold", func(b *testing.B) {
		sl := startSlowlog(b, c)
		for b.Loop() {
			b.StopTimer()
			g := benchGraph(b, c, gp)
			b.StartTimer()
			p, err := g.CommonFollowing(ctx, userA, userB, req)
			check(b, p, err)
		}
		sl.report(b, b.N, gp)
	})
	b.Run("Ours/Warm", func(b *testing.B) {
		p, err := g.CommonFollowing(ctx, userA, userB, req)
		check(b, p, err)
		sl := startSlowlog(b, c)
		for b.Loop() {
			p, err := g.CommonFollowing(ctx, userA, userB, req)
			check(b, p, err)
		}
		sl.report(b, b.N, gp)
	})
	b.Run("Seeds/SINTER", func(b *testing.B) {
		sl := startSlowlog(b, c)
		for b.Loop() {
			ids, err := s.commonSINTER(ctx, userA, userB)
			if err != nil || len(ids) != common {
				b.Fatal(len(ids), err)
			}
		}
		sl.report(b, b.N, s.p)
	})
	b.Run("Seeds/ZINTERSTORE", func(b *testing.B) {
		sl := startSlowlog(b, c)
		for b.Loop() {
			count, page, err := s.commonZInter(ctx, userA, userB, 50)
			if err != nil || count != common || len(page) != 50 {
				b.Fatal(count, len(page), err)
			}
		}
		sl.report(b, b.N, s.p)
	})
}

// Pages of 50 of the followers of a user with 1M followers (follow times
// in pairs of equal milliseconds, so that ties are broken by id): the
// first, the 100th and the 10,000th (the middle of the list), by cursor
// (ours) and by ZREVRANGE offset (seeds). The engine serves the first page
// of large lists through the client-side cache.
func BenchmarkFollowers(b *testing.B) {
	c, ctx := benchRedis(b), context.Background()
	const (
		celeb = fg.UserID(1)
		base  = fg.UserID(1_000_000)
		n     = 1_000_000
		size  = 50
	)
	events := make([]fg.Event, n)
	for i := range n {
		events[i] = benchFollowEvent(base+fg.UserID(i), celeb, benchEpoch+int64(i/2))
	}
	gp := benchPrefix(b, c)
	g := benchGraph(b, c, gp)
	s := seeds{c, benchPrefix(b, c)}
	if err := benchApply(ctx, g, events); err != nil {
		b.Fatal(err)
	}
	if err := s.load(ctx, events, false); err != nil {
		b.Fatal(err)
	}
	// Newest first, ties by id larger first: rank r is event n-1-r.
	scope := fg.Scope(fg.ListFollowers, celeb)
	for _, page := range []int{1, 100, 10_000} {
		name := fmt.Sprintf("Page%d", page)
		if page == 1 {
			name = "First"
		}
		offset := (page - 1) * size
		req := fg.PageRequest{Limit: size}
		if offset > 0 {
			e := events[n-offset] // rank offset-1: the last entry of the page before
			req.Cursor = fg.EncodeCursor(scope, fg.Key{Millis: e.Version.Millis(), ID: e.User})
		}
		first := events[n-1-offset].User
		ours := func(g *redisgraph.Graph) func(b *testing.B) {
			return func(b *testing.B) {
				sl := startSlowlog(b, c)
				for b.Loop() {
					p, err := g.Followers(ctx, celeb, req)
					if err != nil || len(p.Entries) != size || p.Entries[0].ID != first {
						b.Fatal(len(p.Entries), err)
					}
				}
				sl.report(b, b.N, gp)
			}
		}
		b.Run("Ours/"+name, ours(g))
		if page == 1 { // the same page with the cache of first pages off
			b.Run("Ours/FirstUncached", ours(benchGraph(b, c, gp, redisgraph.WithCacheThreshold(0))))
		}
		b.Run("Seeds/"+name, func(b *testing.B) {
			sl := startSlowlog(b, c)
			for b.Loop() {
				p, err := s.followersPage(ctx, celeb, offset, size)
				if err != nil || len(p) != size || p[0].Member != first.String() {
					b.Fatal(len(p), err)
				}
			}
			sl.report(b, b.N, s.p)
		})
	}
	// The whole list, newest first, in pages of 1000: followers/s, and
	// the most entries a key of the user holds (its list's chunks).
	b.Run("Ours/Walk", func(b *testing.B) {
		for b.Loop() {
			seen := 0
			for req := (fg.PageRequest{Limit: fg.MaxLimit}); ; {
				p, err := g.Followers(ctx, celeb, req)
				if err != nil {
					b.Fatal(err)
				}
				seen += len(p.Entries)
				if p.Next == "" {
					break
				}
				req.Cursor = p.Next
			}
			if seen != n {
				b.Fatalf("walked %d followers, want %d", seen, n)
			}
		}
		b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "followers/s")
		largest, keys := int64(0), 0
		if err := benchScan(ctx, c, gp+":{"+celeb.String()+"}:*", func(ks []string) error {
			for _, k := range ks {
				size, err := c.Do(ctx, c.B().Zcard().Key(k).Build()).AsInt64()
				if err != nil { // a hash
					size, err = c.Do(ctx, c.B().Hlen().Key(k).Build()).AsInt64()
				}
				if err != nil {
					return err
				}
				largest, keys = max(largest, size), keys+1
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(largest), "largest-key")
		b.ReportMetric(float64(keys), "keys")
	})
}

// Memory per edge of the generated 1M-edge graph (graphgen.Default(1M, 1):
// 20k users), loaded into the engine (Apply) and as the seeds' plain sorted
// sets with their two counter hashes: the sum of MEMORY USAGE (SAMPLES 0)
// over every key of each, divided by the edges. SmallIDs keeps graphgen's
// ids (1 to 20k), LargeIDs adds 2^60 to each, the size of real 63-bit ids:
// Redis stores small decimal members as integers, so the seeds' members
// are smaller than the engine's 8-byte ones only while ids are small.
// memgraph's figure is in docs/BENCHMARKS.md; layout 3's lists are
// measured by BenchmarkTimeline (internal/scripts).
func BenchmarkMemory(b *testing.B) {
	c, ctx := benchRedis(b), context.Background()
	var small, large []fg.Event
	for e := range graphgen.Edges(graphgen.Default(1_000_000, 1)) {
		small = append(small, benchFollowEvent(e.Follower, e.Followee, e.Millis))
		large = append(large, benchFollowEvent(e.Follower+1<<60, e.Followee+1<<60, e.Millis))
	}
	type fixture struct{ name, prefix string }
	var fixtures []fixture
	for _, x := range []struct {
		name   string
		events []fg.Event
	}{{"SmallIDs", small}, {"LargeIDs", large}} {
		gp, sp := benchPrefix(b, c), benchPrefix(b, c)
		if err := benchApply(ctx, benchGraph(b, c, gp), x.events); err != nil {
			b.Fatal(err)
		}
		if err := (seeds{c, sp}).load(ctx, x.events, false); err != nil {
			b.Fatal(err)
		}
		fixtures = append(fixtures, fixture{x.name + "/Ours", gp}, fixture{x.name + "/Seeds", sp})
	}
	edges := float64(len(small))
	for _, f := range fixtures {
		b.Run(f.name, func(b *testing.B) {
			var used map[string]int64
			for b.Loop() {
				var err error
				if used, err = benchMemory(ctx, c, f.prefix); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(logMemory(b, "", used, edges))/edges, "bytes/edge")
		})
	}
}

// logMemory logs used (benchMemory's) per edge by kind of key, headed by
// name, and returns its total.
func logMemory(b *testing.B, name string, used map[string]int64, edges float64) int64 {
	var total int64
	kinds := make([]string, 0, len(used))
	for k, n := range used {
		total += n
		kinds = append(kinds, fmt.Sprintf("%s %.1f", k, float64(n)/edges))
	}
	slices.Sort(kinds)
	b.Logf("%sbytes/edge by kind of key: %s", name, strings.Join(kinds, ", "))
	return total
}

// benchMemory returns the sum of MEMORY USAGE of the keys under prefix p,
// by kind of key: what follows the hash tag ("out", "h"), or else the
// first part after the prefix ("following", "follow:count").
func benchMemory(ctx context.Context, c rueidis.Client, p string) (map[string]int64, error) {
	used := map[string]int64{}
	err := benchScan(ctx, c, p+"*", func(ks []string) error {
		cmds := make(rueidis.Commands, len(ks))
		for i, k := range ks {
			cmds[i] = c.B().MemoryUsage().Key(k).Samples(0).Build()
		}
		for i, r := range c.DoMulti(ctx, cmds...) {
			n, err := r.AsInt64()
			if err != nil {
				return err
			}
			kind := strings.TrimPrefix(ks[i], p)
			if _, after, ok := strings.Cut(kind, "}:"); ok {
				kind = after
			} else if strings.HasSuffix(kind, ":count") {
				// a counters hash: keep its whole name
			} else {
				kind, _, _ = strings.Cut(kind, ":")
			}
			used[kind] += n
		}
		return nil
	})
	return used, err
}
