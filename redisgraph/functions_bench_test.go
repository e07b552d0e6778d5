package redisgraph

import (
	"context"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/redis/rueidis"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/redisgraph/internal/layout"
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
		cmd        func(c rueidis.Client, change *script, keys, args []string) rueidis.Completed
	}{
		{"EVALSHA", "evalsha", func(c rueidis.Client, change *script, keys, args []string) rueidis.Completed {
			return change.cmd(c, keys, args)
		}},
		{"FCALL", "fcall", func(c rueidis.Client, _ *script, keys, args []string) rueidis.Completed {
			return c.B().Fcall().Function("change").Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
		}},
	} {
		b.Run(way.name, func(b *testing.B) {
			c, g, change := scriptCallRedis(b)
			ctx := context.Background()
			calls0, usec0 := commandStat(b, c, way.stat)
			b.SetParallelism(32)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				rng := rand.New(rand.NewPCG(seed.Add(1), 7))
				for pb.Next() {
					u, t := fg.UserID(1+rng.IntN(1_000_000)), fg.UserID(1+rng.IntN(1_000_000))
					if u == t {
						t = u%1_000_000 + 1
					}
					res, err := c.Do(ctx, way.cmd(c, change, g.changeKeys(u, t), g.liveArgs("follow", u, t, g.writeRate, "0"))).ToArray()
					if err != nil {
						b.Error(err)
						return
					}
					if st, err := statusOf(res[0]); err != nil || (st != layout.Changed && st != layout.None) {
						b.Errorf("the follow script answered %v, %v", res, err)
						return
					}
				}
			})
			b.StopTimer()
			calls1, usec1 := commandStat(b, c, way.stat)
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
func scriptCallRedis(b *testing.B) (rueidis.Client, *testGraph, *script) {
	addr, _ := privateRedis(b)
	c := singleClient(b, addr)
	g := newTestGraph(b, c)
	change := g.run(scriptChange)
	lib := "#!lua name=fgbench\nredis.register_function('change', function(KEYS, ARGV)\n" + change.src + "\nend)\n"
	if err := c.Do(context.Background(), c.B().FunctionLoad().FunctionCode(lib).Build()).Error(); err != nil {
		b.Fatalf("FUNCTION LOAD: %v", err)
	}
	return c, g, change
}

// BenchmarkScriptHeader: what a script pays at every call for the
// generated declarations it starts with, as Redis's time per call (INFO
// commandstats) of a script that does nothing else: none, lua/status.lua
// (every script), lua/status.lua and lua/layout.lua (the scripts that read
// the layout's tables). Each run starts a Redis of its own.
func BenchmarkScriptHeader(b *testing.B) {
	for _, h := range []struct{ name, src string }{
		{"None", ""},
		{"Status", luaStatus},
		{"StatusLayout", luaStatus + luaLayout},
	} {
		b.Run(h.name, func(b *testing.B) {
			addr, _ := privateRedis(b)
			c := singleClient(b, addr)
			ctx := context.Background()
			sha, err := c.Do(ctx, c.B().ScriptLoad().Script(h.src+"return 1\n").Build()).ToString()
			if err != nil {
				b.Fatal(err)
			}
			calls0, usec0 := commandStat(b, c, "evalsha")
			b.SetParallelism(32)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := c.Do(ctx, c.B().Evalsha().Sha1(sha).Numkeys(0).Build()).Error(); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			calls1, usec1 := commandStat(b, c, "evalsha")
			if calls1 > calls0 {
				b.ReportMetric(float64(usec1-usec0)/float64(calls1-calls0), "redis-µs/call")
			}
		})
	}
}
