package scripts

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/followgraph/followgraph/redisgraph/internal/redistest"
)

// serverBounds returns the timeline bounds a server's own limits give: a
// chunk holds as many entries as a sorted set keeps in a listpack (and a
// hash, when that is fewer), and an index chunk splits the next at three
// quarters of that, so that the chunks linear hashing splits last stay
// listpacks too, and an HGET scans at most some hundred entries (a hash
// keeps 512 in a listpack by default, a sorted set 128).
func serverBounds(tb testing.TB, c rueidis.Client) (bound, indexSplit int) {
	tb.Helper()
	ctx := context.Background()
	get := func(p string) int {
		m, err := c.Do(ctx, c.B().ConfigGet().Parameter(p).Build()).AsStrMap()
		if err != nil {
			tb.Fatal(err)
		}
		n, err := strconv.Atoi(m[p])
		if err != nil {
			tb.Fatalf("%s: %q", p, m[p])
		}
		return n
	}
	bound = min(get("zset-max-listpack-entries"), get("hash-max-listpack-entries"))
	return bound, bound * 3 / 4
}

// grow grows the timeline to n entries as a celebrity's followers grow:
// live follows at the newest end, three a millisecond; for every ten, one
// follower of the list leaves (an unfollow), and for every twenty, one who
// left comes back (a new follow) and one entry is added at an older time
// (a rebuild or an import out of order); a page of 50 after a random
// entry is read every hundred. The calls go in pipelines of 500. It
// returns the entries the timeline holds, oldest first, and the one key
// (set to the same entries by ZADD, when one is given) is what the seeds'
// layout keeps: one sorted set.
func (t *timeline) grow(ctx context.Context, tb testing.TB, n int, r *rand.Rand, one string) []tlEntry {
	tb.Helper()
	now := int64(1_700_000_000_000)
	held := map[uint64]int64{}
	var order []uint64 // ids added, to pick leavers from
	var left []uint64
	var next uint64
	var calls []rueidis.LuaExec
	flush := func() {
		for _, res := range t.lua.ExecMulti(ctx, t.c, calls...) {
			if err := res.Error(); err != nil {
				tb.Fatal(err)
			}
		}
		calls = calls[:0]
	}
	add := func(id uint64, ms int64) {
		held[id] = ms
		calls = append(calls, rueidis.LuaExec{Keys: t.keys, Args: []string{"add", strconv.FormatInt(ms, 10), member(id)}})
	}
	for i := 0; len(held) < n; i++ {
		if i%3 == 0 {
			now++
		}
		next++
		add(next, now)
		order = append(order, next)
		switch {
		case i%10 == 3 && len(order) > 0:
			id := order[r.IntN(len(order))]
			if _, ok := held[id]; ok {
				delete(held, id)
				left = append(left, id)
				calls = append(calls, rueidis.LuaExec{Keys: t.keys, Args: []string{"rem", member(id)}})
			}
		case i%20 == 7 && len(left) > 0:
			k := r.IntN(len(left))
			id := left[k]
			left[k] = left[len(left)-1]
			left = left[:len(left)-1]
			add(id, now)
		case i%20 == 13:
			next++
			add(next, now-1-r.Int64N(now-1_700_000_000_000+1))
			order = append(order, next)
		case i%100 == 50:
			id := order[r.IntN(len(order))]
			if ms, ok := held[id]; ok {
				calls = append(calls, rueidis.LuaExec{Keys: t.keys, Args: []string{"page", "50", strconv.FormatInt(ms, 10), member(id)}})
			}
		}
		if len(calls) >= 500 {
			flush()
		}
	}
	flush()
	es := make([]tlEntry, 0, len(held))
	for id, ms := range held {
		es = append(es, tlEntry{id, ms})
	}
	slices.SortFunc(es, func(a, b tlEntry) int { return newer(b, a) })
	if one != "" {
		for i := 0; i < len(es); i += 1000 {
			cmd := t.c.B().Zadd().Key(one).ScoreMember()
			for _, e := range es[i:min(i+1000, len(es))] {
				cmd = cmd.ScoreMember(float64(e.ms), member(e.id))
			}
			if err := t.c.Do(ctx, cmd.Build()).Error(); err != nil {
				tb.Fatal(err)
			}
		}
	}
	return es
}

// scanKeys calls each with the keys matching match, a SCAN batch at a
// time.
func scanKeys(ctx context.Context, c rueidis.Client, match string, each func(keys []string) error) error {
	var cursor uint64
	for {
		e, err := c.Do(ctx, c.B().Scan().Cursor(cursor).Match(match).Count(1000).Build()).AsScanEntry()
		if err != nil {
			return err
		}
		if len(e.Elements) > 0 {
			if err := each(e.Elements); err != nil {
				return err
			}
		}
		if cursor = e.Cursor; cursor == 0 {
			return nil
		}
	}
}

// eachReply sends cmd for every key matching match, and calls each with
// every reply.
func eachReply(ctx context.Context, tb testing.TB, c rueidis.Client, match string,
	cmd func(key string) rueidis.Completed, each func(rueidis.RedisResult) error) {
	tb.Helper()
	err := scanKeys(ctx, c, match, func(keys []string) error {
		cmds := make(rueidis.Commands, len(keys))
		for i, k := range keys {
			cmds[i] = cmd(k)
		}
		for _, r := range c.DoMulti(ctx, cmds...) {
			if err := each(r); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
}

// memoryOf returns the sum of MEMORY USAGE of the keys matching match, and
// their number.
func memoryOf(ctx context.Context, tb testing.TB, c rueidis.Client, match string) (total int64, keys int) {
	eachReply(ctx, tb, c, match, func(k string) rueidis.Completed { return c.B().MemoryUsage().Key(k).Samples(0).Build() },
		func(r rueidis.RedisResult) error {
			n, err := r.AsInt64()
			total, keys = total+n, keys+1
			return err
		})
	return total, keys
}

// encodings counts the encodings of the keys matching match.
func encodings(ctx context.Context, tb testing.TB, c rueidis.Client, match string) map[string]int {
	out := map[string]int{}
	eachReply(ctx, tb, c, match, func(k string) rueidis.Completed { return c.B().ObjectEncoding().Key(k).Build() },
		func(r rueidis.RedisResult) error {
			s, err := r.ToString()
			out[s]++
			return err
		})
	return out
}

// TestTimelineListpack grows a timeline to 20,000 followers at the
// server's own bounds, with churn (grow), and checks it (check) and that
// every chunk and every chunk of the index is a listpack. (The directory
// is one too while it lists few enough chunks.)
func TestTimelineListpack(t *testing.T) {
	c := redistest.Standalone(t)
	ctx := context.Background()
	bound, split := serverBounds(t, c)
	tl := newTimeline(t, c, bound, split)
	es := tl.grow(ctx, t, 20_000, rand.New(rand.NewPCG(3, 4)), "")
	want := make(map[uint64]int64, len(es))
	for _, e := range es {
		want[e.id] = e.ms
	}
	tl.check(ctx, t, want)
	base := tl.keys[0][:len(tl.keys[0])-2]
	for _, match := range []string{base + ":z*", base + ":x*"} {
		enc := encodings(ctx, t, c, match)
		if len(enc) != 1 || enc["listpack"] < 150 {
			t.Fatalf("encodings of the keys %s: %v", match, enc)
		}
		t.Logf("%s: %d keys, all listpacks", match, enc["listpack"])
	}
}

// BenchmarkTimeline measures layout 3's timeline against one sorted set
// (the seeds' layout of a list of followers) on a Redis of its own, with
// a million entries grown as a celebrity's list grows (grow), at the
// server's bounds:
//
//   - Memory: bytes an entry (MEMORY USAGE of every key), of the chunks
//     with their directory and fields, of the index, and of the one key.
//   - Slowest: the slow log at 1 ms while the timeline grows: how many
//     commands it logged, and the slowest.
//   - Page50: a page of 50 after a random cursor deep in the list (past
//     the newest 10%), by script, outside a script (from a window of the
//     directory, or from the whole directory read once), and by ZRANGE …
//     BYSCORE REV LIMIT on the one key, in turn: the client's time and Redis's
//     (INFO commandstats) of each, and their ratios to the one key's.
//   - Walk1000: the same of the list in pages of 1,000, each after the
//     last, from the newest again once the oldest is read.
func BenchmarkTimeline(b *testing.B) {
	addr, _ := redistest.Private(b)
	c := redistest.SingleClient(b, addr)
	ctx := context.Background()
	bound, split := serverBounds(b, c)
	n := 1_000_000
	if s := testingEntries(); s > 0 {
		n = s
	}
	tl := newTimeline(b, c, bound, split)
	one := "one:{seeds}:followers"
	set := func(p, v string) {
		if err := c.Do(ctx, c.B().ConfigSet().ParameterValue().ParameterValue(p, v).Build()).Error(); err != nil {
			b.Fatal(err)
		}
	}
	set("slowlog-log-slower-than", "1000")
	c.Do(ctx, c.B().SlowlogReset().Build())
	began := time.Now()
	es := tl.grow(ctx, b, n, rand.New(rand.NewPCG(5, 6)), one)
	grown := time.Since(began)
	slow, err := c.Do(ctx, c.B().SlowlogGet().Count(-1).Build()).ToArray()
	if err != nil {
		b.Fatal(err)
	}
	var slowest time.Duration
	var slowCmd []string
	var slowCount int
	for _, v := range slow {
		f, _ := v.ToArray()
		if args, _ := f[3].AsStrSlice(); slices.Contains(args, one) {
			continue // the ZADDs that fill the one key
		}
		slowCount++
		us, _ := f[2].AsInt64()
		if d := time.Duration(us) * time.Microsecond; d > slowest {
			slowest = d
			slowCmd, _ = f[3].AsStrSlice()
		}
	}
	base := tl.keys[0][:len(tl.keys[0])-2]
	chunks, nc := memoryOf(ctx, b, c, base+":[zdh]*")
	index, nx := memoryOf(ctx, b, c, base+":x*")
	oneMem, _ := memoryOf(ctx, b, c, one)
	b.Logf("%d entries grown in %v; %d chunk keys, %d index keys; encodings %v", len(es), grown.Round(time.Millisecond),
		nc, nx, encodings(ctx, b, c, base+"*"))
	b.Logf("slow log at 1 ms while growing: %d commands, the slowest %v %q", slowCount, slowest, slowCmd[:min(len(slowCmd), 3)])

	b.Run("Memory", func(b *testing.B) {
		for b.Loop() {
		}
		e := float64(len(es))
		b.ReportMetric(float64(chunks+index)/e, "bytes/entry")
		b.ReportMetric(float64(chunks)/e, "chunks-bytes/entry")
		b.ReportMetric(float64(index)/e, "index-bytes/entry")
		b.ReportMetric(float64(oneMem)/e, "onekey-bytes/entry")
		b.ReportMetric(float64(chunks+index)/float64(oneMem), "x-onekey")
	})
	b.Run("Slowest", func(b *testing.B) {
		for b.Loop() {
		}
		b.ReportMetric(float64(slowCount), "slow-commands")
		b.ReportMetric(float64(slowest.Microseconds()), "slowest-µs")
	})
	// The three ways to read a page take turns in every iteration, each
	// timed on its own, so that the machine's drift falls on all three.
	ways := []string{"Script", "Outside", "Whole", "OneKey"}
	whole := *tl
	whole.whole = true
	type walker struct{ after *tlEntry }
	read := func(way string, n int, after *tlEntry) ([]tlEntry, error) {
		switch way {
		case "Script":
			return tl.page(ctx, n, after)
		case "Outside":
			return tl.pageOutside(ctx, n, after)
		case "Whole":
			return whole.pageOutside(ctx, n, after)
		}
		max := "+inf"
		if after != nil {
			max = "(" + strconv.FormatInt(after.ms, 10)
		}
		zs, err := c.Do(ctx, c.B().Zrange().Key(one).Min(max).Max("-inf").Byscore().Rev().
			Limit(0, int64(n)).Withscores().Build()).AsZScores()
		p := make([]tlEntry, len(zs))
		for i, z := range zs {
			p[i] = tlEntry{binary.BigEndian.Uint64([]byte(z.Member)), int64(z.Score)}
		}
		return p, err
	}
	deep := es[:len(es)*9/10]
	r := rand.New(rand.NewPCG(7, 8))
	for _, pg := range []struct {
		name string
		n    int
		walk bool // each page after the last (else after a random deep entry)
	}{{"Page50", 50, false}, {"Walk1000", 1000, true}} {
		b.Run(pg.name, func(b *testing.B) {
			took := make([]time.Duration, len(ways))
			usec := make([]int64, len(ways))
			entries := make([]int, len(ways))
			walkers := make([]walker, len(ways))
			for b.Loop() {
				e := deep[r.IntN(len(deep))]
				for i, way := range ways {
					after := &e
					if pg.walk {
						after = walkers[i].after
					}
					c.Do(ctx, c.B().ConfigResetstat().Build())
					began := time.Now()
					p, err := read(way, pg.n, after)
					took[i] += time.Since(began)
					if err != nil {
						b.Fatal(err)
					}
					usec[i] += redisUsec(b, c)
					entries[i] += len(p)
					walkers[i].after = nil
					if len(p) == pg.n {
						walkers[i].after = &p[len(p)-1]
					}
				}
			}
			for i, way := range ways {
				b.ReportMetric(float64(took[i].Microseconds())/float64(b.N), way+"-µs/page")
				b.ReportMetric(float64(usec[i])/float64(b.N), way+"-redis-µs/page")
				if last := len(ways) - 1; i < last {
					b.ReportMetric(float64(took[i])/float64(took[last]), way+"-x-onekey")
					b.ReportMetric(float64(usec[i])/float64(usec[last]), way+"-redis-x-onekey")
				}
			}
		})
	}
}

// testingEntries returns FOLLOWGRAPH_BENCH_ENTRIES, the entries of
// BenchmarkTimeline's list (0: a million).
func testingEntries() int {
	n, _ := strconv.Atoi(os.Getenv("FOLLOWGRAPH_BENCH_ENTRIES"))
	return n
}

// redisUsec returns the µs Redis spent in commands since INFO's stats were
// reset, but for INFO and CONFIG themselves: in EVALSHA alone when there
// were any (the commands a script calls are counted in their own lines
// too).
func redisUsec(tb testing.TB, c rueidis.Client) int64 {
	tb.Helper()
	info, err := c.Do(context.Background(), c.B().Info().Section("commandstats").Build()).ToString()
	if err != nil {
		tb.Fatal(err)
	}
	var total int64
	for line := range strings.Lines(info) {
		name, rest, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(line), "cmdstat_"), ":")
		if !ok || strings.HasPrefix(name, "info") || strings.HasPrefix(name, "config") {
			continue
		}
		var calls, usec int64
		if _, err := fmt.Sscanf(strings.ReplaceAll(rest, ",", " "), "calls=%d usec=%d", &calls, &usec); err == nil {
			if name == "evalsha" {
				return usec
			}
			total += usec
		}
	}
	return total
}
