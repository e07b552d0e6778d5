package redisgraph

import (
	"context"
	"flag"
	"testing"
	"time"

	"github.com/redis/rueidis"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/memgraph"
	"github.com/followgraph/followgraph/redisgraph/internal/jobs"
	"github.com/followgraph/followgraph/redisgraph/internal/layout"
	"github.com/followgraph/followgraph/redisgraph/internal/redistest"
)

var archiveFollowers = flag.Int("archive-followers", 2_000_000, "followers of the user BenchmarkArchive hides and restores")

// BenchmarkArchive hides and then restores, by the archive step, the
// follows of a user with -archive-followers followers who follows 1000 of
// them, on the standalone Redis of FOLLOWGRAPH_TEST_REDIS, with SLOWLOG
// logging every command over a millisecond meanwhile. The graph is written
// by Rebuild from a memgraph first (not timed). It reports each step's
// seconds, the slowest command Redis logged and how many were over 1 ms,
// of the script calls it made, and the same for as many calls of a script
// that does next to nothing (the floor).
//
//	go test -run '^$' -bench BenchmarkArchive -benchtime 1x ./redisgraph/
func BenchmarkArchive(b *testing.B) {
	ctx := context.Background()
	c := redistest.Standalone(b)
	n := *archiveFollowers
	const user = fg.UserID(1)
	g := celebrityGraph(b, c, user, n)
	edges := int64(n + 1000)
	// calls is about how many script calls a step makes at batch edges a
	// call (HSCAN's batches of a restore may end short).
	calls := func(batch int) int { return (n+batch-1)/batch + (1000+batch-1)/batch }

	restore := slowlogAll(b, c)
	defer restore()
	b.ResetTimer()
	for b.Loop() {
		for _, step := range []struct {
			name, step string
			state      fg.State
			nin        int64
			batch      int // edges a call
		}{{"hide", layout.StepHide, fg.StateDeactivated, 0, jobs.DefaultBatches.Hide}, {"restore", layout.StepShow, fg.StateActive, int64(n), jobs.DefaultBatches.Show}} {
			if _, err := g.SetState(ctx, user, step.state); err != nil {
				b.Fatal(err)
			}
			mustDo(b, c, c.B().SlowlogReset().Build())
			began := time.Now()
			got, err := g.jobs.Archive(ctx, user, step.step)
			took := time.Since(began)
			if err != nil || got != edges {
				b.Fatalf("%s = %d, %v; want %d", step.name, got, err, edges)
			}
			if nin, _ := c.Do(ctx, c.B().Hget().Key(g.ks.User(user, layout.Counters)).Field("nin").Build()).AsInt64(); nin != step.nin {
				b.Fatalf("after the %s, nin(1) = %d, want %d", step.name, nin, step.nin)
			}
			slow, slowest := slowSince(b, c)
			b.ReportMetric(took.Seconds(), step.name+"-s")
			b.ReportMetric(float64(slow), step.name+"-cmds-over-1ms")
			b.ReportMetric(float64(slowest.Microseconds()), step.name+"-max-cmd-µs")
			b.Logf("%s: %d edges in %v, %d script calls; %d commands over 1 ms, the slowest %v",
				step.name, got, took.Round(time.Millisecond), calls(step.batch), slow, slowest)
		}
		// The floor: as many calls, one after another as the steps make
		// them, of a script that reads one field of h(u), to tell the
		// commands this machine logs over 1 ms whatever they do (the
		// benchmark's own process shares its 2 cores with Redis) from the
		// steps' own.
		floor := rueidis.NewLuaScript("return redis.call('HGET', KEYS[1], 'st')")
		h := []string{g.ks.User(user, layout.Counters)}
		mustDo(b, c, c.B().SlowlogReset().Build())
		began := time.Now()
		for range calls(jobs.DefaultBatches.Hide) {
			if err := floor.Exec(ctx, c, h, nil).Error(); err != nil {
				b.Fatal(err)
			}
		}
		slow, slowest := slowSince(b, c)
		b.ReportMetric(float64(slow), "floor-cmds-over-1ms")
		b.ReportMetric(float64(slowest.Microseconds()), "floor-max-cmd-µs")
		b.Logf("floor: %d calls of one HGET in %v; %d commands over 1 ms, the slowest %v",
			calls(jobs.DefaultBatches.Hide), time.Since(began).Round(time.Millisecond), slow, slowest)
	}
}

// celebrityGraph writes, by Rebuild from a memgraph (not timed), a graph
// in which user has n followers and follows 1000 of them, under a prefix
// of its own on c, and returns its Graph, with its outbox made (for the
// events of states); the prefix is deleted when tb ends.
func celebrityGraph(tb testing.TB, c rueidis.Client, user fg.UserID, n int) *Graph {
	ctx := context.Background()
	base := int64(1_700_000_000_000)
	src := memgraph.New()
	err := src.Load(ctx, func(yield func(fg.Event) bool) {
		for i := range n {
			f := fg.UserID(1000 + i)
			if !yield(fg.NewEvent(f, user, fg.OpFollow, fg.VersionAt(base+int64(i)))) {
				return
			}
			if i < 1000 && !yield(fg.NewEvent(user, f, fg.OpFollow, fg.VersionAt(base+int64(n+i)))) {
				return
			}
		}
	})
	if err != nil {
		tb.Fatal(err)
	}
	prefix := randomPrefix()
	g, err := New(ctx, c, WithPrefix(prefix), WithVouchScope(testScope))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		g.Close()
		if err := unlinkPrefix(ctx, c, prefix+":"); err != nil {
			tb.Errorf("deleting %s: %v", prefix, err)
		}
	})
	loaded := time.Now()
	if _, err := g.Rebuild(ctx, src, RebuildOptions{}); err != nil {
		tb.Fatal(err)
	}
	tb.Logf("%d followers written in %v", n, time.Since(loaded).Round(time.Millisecond))
	if _, err := g.InitOutbox(ctx); err != nil {
		tb.Fatal(err)
	}
	if err := g.VouchAll(ctx, 0); err != nil {
		tb.Fatal(err)
	}
	return g
}

// slowlogAll makes Redis log every command over a millisecond, up to
// 100,000 of them, and returns what puts the settings back.
func slowlogAll(tb testing.TB, c rueidis.Client) func() {
	ctx := context.Background()
	old, err := c.Do(ctx, c.B().ConfigGet().Parameter("slowlog-*").Build()).AsStrMap()
	if err != nil {
		tb.Fatal(err)
	}
	mustDo(tb, c, c.B().ConfigSet().ParameterValue().ParameterValue("slowlog-log-slower-than", "1000").ParameterValue("slowlog-max-len", "100000").Build())
	return func() {
		mustDo(tb, c, c.B().ConfigSet().ParameterValue().ParameterValue("slowlog-log-slower-than", old["slowlog-log-slower-than"]).
			ParameterValue("slowlog-max-len", old["slowlog-max-len"]).Build())
	}
}

// slowSince returns how many commands the slow log holds, and the slowest.
func slowSince(tb testing.TB, c rueidis.Client) (int, time.Duration) {
	vals, err := c.Do(context.Background(), c.B().SlowlogGet().Count(-1).Build()).ToArray()
	if err != nil {
		tb.Fatal(err)
	}
	var slowest time.Duration
	byName := map[string]int{}
	defer func() {
		if len(byName) > 0 {
			tb.Logf("slow commands by name: %v", byName)
		}
	}()
	for i, v := range vals {
		f, err := v.ToArray()
		if err != nil || len(f) < 4 {
			tb.Fatalf("a slow log entry: %v %v", f, err)
		}
		us, _ := f[2].AsInt64()
		if d := time.Duration(us) * time.Microsecond; d > slowest {
			slowest = d
		}
		args, _ := f[3].AsStrSlice()
		if len(args) > 0 {
			byName[args[0]]++
		}
		if i < 3 {
			if len(args) > 4 {
				args = args[:4]
			}
			tb.Logf("slow: %dµs %q", us, args)
		}
	}
	return len(vals), slowest
}

func mustDo(tb testing.TB, c rueidis.Client, cmd rueidis.Completed) {
	if err := c.Do(context.Background(), cmd).Error(); err != nil {
		tb.Fatal(err)
	}
}

// unlinkPrefix unlinks every key whose name starts with p.
func unlinkPrefix(ctx context.Context, c rueidis.Client, p string) error {
	if c.Mode() != rueidis.ClientModeCluster {
		return unlinkScanned(ctx, c, c, p, false)
	}
	for _, n := range c.Nodes() { // each node scans its own keys (the test Cluster has no replicas)
		if err := unlinkScanned(ctx, n, c, p, true); err != nil {
			return err
		}
	}
	return nil
}

// unlinkScanned unlinks the keys of prefix p that SCAN on scan finds, by
// c: on a Cluster (one) each key by a command of its own, since the keys
// of one UNLINK must share a slot.
func unlinkScanned(ctx context.Context, scan, c rueidis.Client, p string, one bool) error {
	var cursor uint64
	for {
		found, err := scan.Do(ctx, scan.B().Scan().Cursor(cursor).Match(p+"*").Count(5000).Build()).AsScanEntry()
		if err != nil {
			return err
		}
		if one {
			cmds := make(rueidis.Commands, len(found.Elements))
			for i, k := range found.Elements {
				cmds[i] = c.B().Unlink().Key(k).Build()
			}
			for _, r := range c.DoMulti(ctx, cmds...) {
				if err := r.Error(); err != nil {
					return err
				}
			}
		} else if len(found.Elements) > 0 {
			if err := c.Do(ctx, c.B().Unlink().Key(found.Elements...).Build()).Error(); err != nil {
				return err
			}
		}
		if cursor = found.Cursor; cursor == 0 {
			return nil
		}
	}
}
