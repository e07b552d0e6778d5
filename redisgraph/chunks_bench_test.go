package redisgraph_test

import (
	"context"
	"encoding/binary"
	"slices"
	"strconv"
	"testing"

	"github.com/redis/rueidis"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/redisgraph"
	"github.com/followgraph/followgraph/redisgraph/internal/layout"
)

// BenchmarkChunkPaging walks a list of a million followers, newest first,
// in pages of 1,000 with an exact keyset cursor, as the list is kept by
// each candidate layout: one sorted set (today's); chunks by member hash of
// at most 10,000 (in the user's slot, the layout that ends big keys and
// keeps each member's chunk known without a lookup); the same with chunks of
// at most 128 (small enough to stay listpack-encoded, what the memory
// target needs); and chunks by time of at most 128, with a directory
// (layout 3's shape, whose member index this walk does not need: see
// BenchmarkTimeline in internal/scripts). A hash chunk's page is a merge: each chunk is
// read from the cursor, 2·page/chunks+2 entries at a time, and a chunk is
// read again only when the merge reaches its last entry read. Scores are
// distinct (ties cost the same in each layout). It reports followers/s, and
// the Redis commands per page. The walk of each layout checks that every
// follower comes exactly once, in order.
func BenchmarkChunkPaging(b *testing.B) {
	c, ctx := benchRedis(b), context.Background()
	const n, page = 1_000_000, 1000
	for _, l := range []struct {
		name  string
		max   int
		byMod bool
	}{{"OneKey", n, true}, {"Hash10000", 10_000, true}, {"Hash128", 128, true}, {"Time128", 128, false}} {
		p := benchPrefix(b, c)
		keys, dir, err := loadChunkList(ctx, c, p, n, l.max, l.byMod)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(l.name, func(b *testing.B) {
			var cmds int
			for b.Loop() {
				cmds = 0
				var cur *chunkEntry
				seen := 0
				for {
					var es []chunkEntry
					var k int
					if dir == "" {
						es, k, err = hashPage(ctx, c, keys, cur, page)
					} else {
						es, k, err = timePage(ctx, c, p, dir, cur, page)
					}
					if err != nil {
						b.Fatal(err)
					}
					cmds += k
					for _, e := range es {
						if want := float64(n - 1 - seen); e.score != want || e.id != uint64(n-1-seen) {
							b.Fatalf("entry %d: %v, want score %v", seen, e, want)
						}
						seen++
					}
					if len(es) < page {
						break
					}
					cur = &es[len(es)-1]
				}
				if seen != n {
					b.Fatalf("walked %d followers, want %d", seen, n)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "followers/s")
			b.ReportMetric(float64(cmds)/float64(n/page), "commands/page")
			b.ReportMetric(float64(len(keys)), "keys")
		})
	}
}

// chunkEntry is a list entry: newest first, a larger score first.
type chunkEntry struct {
	score float64
	id    uint64
}

// loadChunkList writes followers 0..n-1 (score = id) under p in chunks of
// at most max: by id modulo the chunk count (byMod), filled to three
// quarters, or by time, filled to three quarters, with dir a sorted set of
// the chunks scored by their newest entry. It returns the chunks' keys.
func loadChunkList(ctx context.Context, c rueidis.Client, p string, n, max int, byMod bool) (keys []string, dir string, err error) {
	fill := max * 3 / 4
	if max >= n {
		fill = n
	}
	chunks := (n + fill - 1) / fill
	for k := range chunks {
		keys = append(keys, p+"{1}:in:"+strconv.Itoa(k))
	}
	pipe := benchPipe{c: c}
	if !byMod {
		dir = p + "{1}:ind"
	}
	for k := range chunks {
		z := c.B().Zadd().Key(keys[k]).ScoreMember()
		var newest int
		for i := 0; i < n; i++ {
			if byMod && i%chunks != k || !byMod && i/fill != k {
				continue
			}
			z, newest = z.ScoreMember(float64(i), chunkMember(uint64(i))), i
		}
		if err := pipe.add(ctx, z.Build()); err != nil {
			return nil, "", err
		}
		if dir != "" {
			if err := pipe.add(ctx, c.B().Zadd().Key(dir).ScoreMember().ScoreMember(float64(newest), strconv.Itoa(k)).Build()); err != nil {
				return nil, "", err
			}
		}
	}
	return keys, dir, pipe.flush(ctx)
}

func chunkMember(id uint64) string {
	var m [8]byte
	binary.BigEndian.PutUint64(m[:], id)
	return string(m[:])
}

// chunkRange reads up to count entries of key older than cur (nil: from
// the newest).
func chunkRange(c rueidis.Client, key string, cur *chunkEntry, count int) rueidis.Completed {
	max := "+inf"
	if cur != nil {
		max = "(" + strconv.FormatFloat(cur.score, 'f', -1, 64)
	}
	return c.B().Zrange().Key(key).Min(max).Max("-inf").Byscore().Rev().Limit(0, int64(count)).Withscores().Build()
}

func chunkEntries(r rueidis.RedisResult) ([]chunkEntry, error) {
	zs, err := r.AsZScores()
	if err != nil {
		return nil, err
	}
	es := make([]chunkEntry, len(zs))
	for i, z := range zs {
		es[i] = chunkEntry{z.Score, binary.BigEndian.Uint64([]byte(z.Member))}
	}
	return es, nil
}

// hashPage returns the page of size n after cur of the list kept in the
// hash chunks keys, and the commands it sent: a merge that reads every
// chunk once, and a chunk again whenever the merge has taken every entry
// read of it and it may hold more.
func hashPage(ctx context.Context, c rueidis.Client, keys []string, cur *chunkEntry, n int) ([]chunkEntry, int, error) {
	per := 2*n/len(keys) + 2
	bufs := make([][]chunkEntry, len(keys))
	more := make([]bool, len(keys))
	last := make([]*chunkEntry, len(keys))
	cmds := make(rueidis.Commands, len(keys))
	for i, k := range keys {
		cmds[i] = chunkRange(c, k, cur, per)
	}
	for i, r := range c.DoMulti(ctx, cmds...) {
		es, err := chunkEntries(r)
		if err != nil {
			return nil, 0, err
		}
		bufs[i], more[i] = es, len(es) == per
	}
	sent := len(keys)
	out := make([]chunkEntry, 0, n)
	for len(out) < n {
		best := -1
		for i, buf := range bufs {
			if len(buf) == 0 && more[i] {
				es, err := chunkEntries(c.Do(ctx, chunkRange(c, keys[i], last[i], per)))
				if err != nil {
					return nil, 0, err
				}
				sent++
				bufs[i], more[i], buf = es, len(es) == per, es
			}
			if len(buf) > 0 && (best < 0 || buf[0].score > bufs[best][0].score) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		e := bufs[best][0]
		bufs[best], last[best] = bufs[best][1:], &e
		out = append(out, e)
	}
	return out, sent, nil
}

// timePage returns the page of size n after cur of the list kept in time
// chunks under p with the directory dir, and the commands it sent: the
// cursor's chunk and the older ones the page needs, from the directory,
// then those chunks from the cursor, pipelined.
func timePage(ctx context.Context, c rueidis.Client, p, dir string, cur *chunkEntry, n int) ([]chunkEntry, int, error) {
	out, sent := make([]chunkEntry, 0, n), 0
	for len(out) < n {
		from := "+inf"
		if cur != nil {
			from = strconv.FormatFloat(cur.score, 'f', -1, 64)
		}
		// The cursor's own chunk (the oldest whose newest entry is at least
		// the cursor's), then the chunks wholly older, as many as the page
		// needs if they are three quarters full.
		res := c.DoMulti(ctx,
			c.B().Zrange().Key(dir).Min(from).Max("+inf").Byscore().Limit(0, 1).Build(),
			c.B().Zrange().Key(dir).Min("("+from).Max("-inf").Byscore().Rev().Limit(0, int64((n-len(out))/96+1)).Build())
		sent += 2
		var ids []string
		for _, r := range res {
			s, err := r.AsStrSlice()
			if err != nil {
				return nil, 0, err
			}
			ids = append(ids, s...)
		}
		if len(ids) == 0 {
			break
		}
		cmds := make(rueidis.Commands, len(ids))
		for i, id := range ids {
			cmds[i] = chunkRange(c, p+"{1}:in:"+id, cur, n-len(out))
		}
		sent += len(cmds)
		had := len(out)
		for _, r := range c.DoMulti(ctx, cmds...) {
			es, err := chunkEntries(r)
			if err != nil {
				return nil, 0, err
			}
			out = append(out, es[:min(len(es), n-len(out))]...)
		}
		if len(out) == had {
			break
		}
		cur = &out[len(out)-1]
	}
	return out, sent, nil
}

// BenchmarkChunkSplit times the live follow that splits a list, at the
// default bound and at smaller ones: each iteration gives a user of its
// own one follower short of the split (seven eighths of the bound) by
// Apply, untimed, then times the one Follow that reaches it, whose script
// moves about half the list and its versions into a second chunk.
// split-µs is the slowest of that Follow's commands in Redis (SLOWLOG: its
// script), the median over the iterations; the time per op adds the
// round trips.
func BenchmarkChunkSplit(b *testing.B) {
	c, ctx := benchRedis(b), context.Background()
	for _, bound := range []int{1_000, 2_500, redisgraph.DefaultMaxKeyMembers} {
		b.Run(strconv.Itoa(bound), func(b *testing.B) {
			gp := benchPrefix(b, c)
			g := benchGraph(b, c, gp, redisgraph.WithMaxKeyMembers(bound))
			n := fg.UserID(bound*7/8 - 1)
			sl := startSlowlog(b, c)
			var splits []int64
			next := fg.UserID(1)
			for b.Loop() {
				b.StopTimer()
				t := next
				next += n + 2
				events := make([]fg.Event, n)
				for i := range events {
					events[i] = benchFollowEvent(t+1+fg.UserID(i), t, benchEpoch+int64(i))
				}
				if err := benchApply(ctx, g, events); err != nil {
					b.Fatal(err)
				}
				chunk1 := gp + ":{" + t.String() + "}:" + layout.ChunkKey(layout.In, 1)
				if k, err := c.Do(ctx, c.B().Exists().Key(chunk1).Build()).AsInt64(); err != nil || k != 0 {
					b.Fatalf("%s before the split: %d, %v", chunk1, k, err)
				}
				if err := sl.mark(ctx); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				if _, err := g.Follow(ctx, t+1+n, t); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if k, err := c.Do(ctx, c.B().Exists().Key(chunk1).Build()).AsInt64(); err != nil || k != 1 {
					b.Fatalf("%s after the split: %d, %v", chunk1, k, err)
				}
				cs, err := g.Counts(ctx, []fg.UserID{t})
				if err != nil || cs[0].FollowerCount != int64(n+1) {
					b.Fatalf("counts after the split: %v, %v", cs, err)
				}
				slowest, _, _, err := sl.slowest(ctx, []string{gp})
				if err != nil {
					b.Fatal(err)
				}
				splits = append(splits, slowest)
				b.StartTimer()
			}
			slices.Sort(splits)
			b.ReportMetric(float64(splits[len(splits)/2]), "split-µs")
			b.ReportMetric(float64(splits[len(splits)-1]), "max-split-µs")
		})
	}
}
