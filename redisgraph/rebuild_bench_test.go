package redisgraph_test

import (
	"context"
	"flag"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/graphgen"
	"github.com/followgraph/followgraph/memgraph"
	"github.com/followgraph/followgraph/redisgraph"
	"github.com/followgraph/followgraph/redisgraph/internal/redistest"
)

// BenchmarkRebuild rebuilds the generated graph (graphgen.Default, 2M
// edges unless -rebuild-edges says otherwise) from a memgraph into a
// standalone Redis:
//
//	FOLLOWGRAPH_TEST_REDIS=redis://127.0.0.1:6379 go test -run '^$' -bench Rebuild -benchtime 1x ./redisgraph/
//
// Empty writes into an empty prefix (the restore after a loss), Full
// over the same edges already there (every edge read and compared, none
// written); Reconcile then compares the copy with the source (no
// difference; it scans the whole keyspace for users only Redis has).
// edges/s counts the edges of the source, each on both sides; load-s is the memgraph Load of the source, which the operator
// command also pays; server-µs/edge is Redis's own time in the bulk
// script per edge (from INFO commandstats, so other clients' EVALSHA count
// too), redis-cpu-% how busy Redis's main thread was (near 100: Redis is
// what bounds the rate); max-cmd-µs and slow-cmds/op come from SLOWLOG,
// as in the other benchmarks.
var rebuildEdges = flag.Int("rebuild-edges", 2_000_000, "edges of the graph BenchmarkRebuild rebuilds")

func BenchmarkRebuild(b *testing.B) {
	c, ctx := benchRedis(b), context.Background()
	start := time.Now()
	src := memgraph.New()
	err := src.Load(ctx, func(yield func(fg.Event) bool) {
		for e := range graphgen.Edges(graphgen.Default(*rebuildEdges, 1)) {
			if !yield(fg.NewEvent(e.Follower, e.Followee, fg.OpFollow, fg.VersionAt(e.Millis))) {
				return
			}
		}
	})
	if err != nil {
		b.Fatal(err)
	}
	load := time.Since(start)
	edges := src.Stats().Edges
	runtime.GC()

	p := benchPrefix(b, c)
	g := benchGraph(b, c, p)
	for _, run := range []string{"Empty", "Full"} {
		b.Run(run, func(b *testing.B) {
			sl := startSlowlog(b, c)
			if err := c.Do(ctx, c.B().ConfigSet().ParameterValue().ParameterValue("slowlog-max-len", "100000").Build()).Error(); err != nil {
				b.Fatal(err)
			}
			var st redisgraph.RebuildStats
			before, cpu := evalshaMicros(b, c), redisCPU(b, c)
			for b.Loop() {
				if run == "Empty" {
					b.StopTimer()
					if err := benchDelete(ctx, c, p); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				if st, err = g.Rebuild(ctx, src, redisgraph.RebuildOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			if st.Edges != int64(edges) {
				b.Fatalf("Rebuild = %+v, want %d edges", st, edges)
			}
			b.Logf("%+v", st)
			b.ReportMetric(float64(edges)*float64(b.N)/b.Elapsed().Seconds(), "edges/s")
			b.ReportMetric(load.Seconds(), "load-s")
			b.ReportMetric((evalshaMicros(b, c)-before)/float64(2*edges*b.N), "server-µs/edge")
			b.ReportMetric(100*(redisCPU(b, c)-cpu)/b.Elapsed().Seconds(), "redis-cpu-%")
			sl.report(b, int(st.Calls)*b.N, p)
		})
	}
	// As followgraph rebuild does: the rebuilt graph is marked whole, or
	// reads refuse it as a graph Redis lost.
	if _, err := g.InitOutbox(ctx); err != nil {
		b.Fatal(err)
	}
	b.Run("Reconcile", func(b *testing.B) {
		sl := startSlowlog(b, c)
		var st redisgraph.ReconcileStats
		for b.Loop() {
			if st, err = g.Reconcile(ctx, src, redisgraph.ReconcileOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		if st.Differences() != 0 {
			b.Fatalf("Reconcile = %+v, want no difference", st)
		}
		b.ReportMetric(float64(edges)*float64(b.N)/b.Elapsed().Seconds(), "edges/s")
		sl.report(b, int(st.Users)*b.N, p)
	})
}

// redisCPU returns the CPU seconds Redis's main thread has used.
func redisCPU(tb testing.TB, c rueidis.Client) float64 {
	tb.Helper()
	info, err := c.Do(context.Background(), c.B().Info().Section("cpu").Build()).ToString()
	if err != nil {
		tb.Fatal(err)
	}
	var sum float64
	for line := range strings.Lines(info) {
		for _, f := range []string{"used_cpu_sys_main_thread:", "used_cpu_user_main_thread:"} {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), f); ok {
				x, err := strconv.ParseFloat(v, 64)
				if err != nil {
					tb.Fatalf("%s%q: %v", f, v, err)
				}
				sum += x
			}
		}
	}
	return sum
}

// evalshaMicros returns the microseconds Redis has spent in EVALSHA.
func evalshaMicros(tb testing.TB, c rueidis.Client) float64 {
	tb.Helper()
	_, usec := redistest.CommandStat(tb, c, "evalsha")
	return float64(usec)
}
