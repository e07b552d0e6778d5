package redisgraph

import (
	"context"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/redis/rueidis"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/redisgraph/internal/layout"
	"github.com/followgraph/followgraph/redisgraph/internal/redistest"
	"github.com/followgraph/followgraph/redisgraph/internal/scripts"
	"github.com/followgraph/followgraph/redisgraph/internal/wire"
)

// BenchmarkScriptCall runs the follow script (lua/change.lua, with the
// keys and arguments a live follow sends on a standalone Redis) by
// EVALSHA, as the engine does, and by FCALL of the very same source loaded
// as a Redis Functions library, from 64 goroutines, each call a new follow
// between two random users among 1M. Besides the rate it reports Redis's
// own time per call (INFO commandstats, usec of the command over its
// calls during the run): what the choice between scripts and Functions
// costs Redis, the rest being equal. Each run starts a Redis of its own.
func BenchmarkScriptCall(b *testing.B) {
	var seed atomic.Uint64
	for _, way := range []struct {
		name, stat string
		cmd        func(c rueidis.Client, g *testGraph, call scripts.Call) rueidis.Completed
	}{
		{"EVALSHA", "evalsha", func(c rueidis.Client, g *testGraph, call scripts.Call) rueidis.Completed {
			return g.lua.Cmd(call)
		}},
		{"FCALL", "fcall", func(c rueidis.Client, _ *testGraph, call scripts.Call) rueidis.Completed {
			return c.B().Fcall().Function("change").Numkeys(int64(len(call.Keys))).Key(call.Keys...).Arg(call.Args...).Build()
		}},
	} {
		b.Run(way.name, func(b *testing.B) {
			c, g := scriptCallRedis(b)
			ctx := context.Background()
			calls0, usec0 := redistest.CommandStat(b, c, way.stat)
			b.SetParallelism(32)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				rng := rand.New(rand.NewPCG(seed.Add(1), 7))
				for pb.Next() {
					u, t := fg.UserID(1+rng.IntN(1_000_000)), fg.UserID(1+rng.IntN(1_000_000))
					if u == t {
						t = u%1_000_000 + 1
					}
					res, err := c.Do(ctx, way.cmd(c, g, scripts.Change.Call(g.changeKeys(u, t), g.liveArgs("follow", u, t, g.writeRate, "0")))).ToArray()
					if err != nil {
						b.Error(err)
						return
					}
					if st, err := wire.Status(res[0]); err != nil || (st != layout.Changed && st != layout.None) {
						b.Errorf("the follow script answered %v, %v", res, err)
						return
					}
				}
			})
			b.StopTimer()
			calls1, usec1 := redistest.CommandStat(b, c, way.stat)
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
			if calls1 > calls0 {
				b.ReportMetric(float64(usec1-usec0)/float64(calls1-calls0), "redis-µs/call")
			}
		})
	}
}

// scriptCallRedis starts a Redis of the benchmark's own (so that INFO
// commandstats counts its calls only, and each run starts empty), with a
// Graph on it and the follow script loaded both ways.
func scriptCallRedis(b *testing.B) (rueidis.Client, *testGraph) {
	addr, _ := redistest.Private(b)
	c := redistest.SingleClient(b, addr)
	g := newTestGraph(b, c)
	lib := "#!lua name=fgbench\nredis.register_function('change', function(KEYS, ARGV)\n" + g.lua.Source(scripts.Change.Script) + "\nend)\n"
	if err := c.Do(context.Background(), c.B().FunctionLoad().FunctionCode(lib).Build()).Error(); err != nil {
		b.Fatalf("FUNCTION LOAD: %v", err)
	}
	return c, g
}
