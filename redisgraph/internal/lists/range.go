package lists

import (
	"container/heap"
	"context"
	"fmt"
	"strconv"

	fg "github.com/followgraph/followgraph"

	"github.com/followgraph/followgraph/redisgraph/internal/layout"
	"github.com/followgraph/followgraph/redisgraph/internal/scripts"
	"github.com/followgraph/followgraph/redisgraph/internal/wire"
	"github.com/redis/rueidis"
)

// Reads never ask one command for more than these, so that each stays
// under a millisecond on the server, even on sets of millions (TestSlowlog
// checks it; the figures are in docs/BENCHMARKS.md, in the rows that name
// ProbeBatch and RangeBatch).
const (
	ProbeBatch = 200  // members one ZMSCORE asks about
	RangeBatch = 1000 // entries one ZRANGE returns (a list page holds at most 1001)
)

// PerCached is how many of each chunk's newest entries the cache keeps
// for a first page of n entries over chunks chunks: four times a chunk's
// share and six (all n for one chunk), so that the newest n entries of
// the list, spread over the chunks by the hash of their ids, hold that
// many of one chunk only rarely. The chance is at most chunks × P(X ≥
// per) for X binomial(n, 1/chunks): for 51 entries over 256 chunks, per
// 6, 1.4e-5, once in about 70,000 pages.
func PerCached(n, chunks int) int {
	return min(n, 4*n/chunks+6)
}

// MergeCached merges rs, the replies of the cached reads of the newest
// per entries of each of the chunks keys, into the newest n entries of
// them all. It reports false when a chunk read in full ran out before the
// page was full: that chunk may hold an entry newer than the rest.
//
// This is the whole cost of a cached first page, so it parses an entry
// only when it reaches the head of its chunk (about n + chunks entries
// rather than per × chunks), and picks the newest head with a heap.
func MergeCached(keys []string, rs []rueidis.RedisResult, per, n int) ([]fg.Entry, bool, error) {
	heads := make([]chunkHead, len(rs))
	h := make(chunkHeads, 0, len(rs))
	for j, r := range rs {
		vals, err := r.ToArray()
		if err != nil {
			return nil, false, err
		}
		c := &heads[j]
		*c = chunkHead{key: keys[j], vals: vals, full: len(vals) == per}
		if ok, err := c.next(); err != nil {
			return nil, false, err
		} else if ok {
			h = append(h, c)
		}
	}
	heap.Init(&h)
	out := make([]fg.Entry, 0, n)
	for len(out) < n && len(h) > 0 {
		c := h[0]
		out = append(out, fg.Entry{ID: c.id, Since: fg.Millis(c.ms)})
		ok, err := c.next()
		switch {
		case err != nil:
			return nil, false, err
		case ok:
			heap.Fix(&h, 0)
		case c.full && len(out) < n:
			return nil, false, nil
		default:
			heap.Pop(&h)
		}
	}
	return out, true, nil
}

// chunkHead is a chunk's cached entries in MergeCached: the head (ms,
// id), and the entries after it, unparsed. The replies are RESP3's (a
// [member, score] pair an entry): rueidis caches only over RESP3.
type chunkHead struct {
	key  string
	vals []rueidis.RedisMessage
	full bool // the read returned all it asked for: the chunk may hold more
	ms   int64
	id   fg.UserID
}

// next parses the next entry into the head, or reports there is none.
func (c *chunkHead) next() (bool, error) {
	if len(c.vals) == 0 {
		return false, nil
	}
	pair, err := c.vals[0].ToArray()
	if err != nil || len(pair) != 2 {
		return false, fmt.Errorf("an entry of %s is not a member and score: %v", c.key, err)
	}
	member, score := pair[0], pair[1]
	c.vals = c.vals[1:]
	m, err := member.ToString()
	if err != nil {
		return false, err
	}
	id, ok := wire.MemberID(m)
	if !ok {
		return false, fmt.Errorf("member %q of %s is not an id", m, c.key)
	}
	f, err := score.AsFloat64()
	if err != nil {
		return false, err
	}
	c.ms, c.id = int64(f), id
	return true, nil
}

// chunkHeads is a heap of chunks by their heads, newest (then the larger
// id) on top.
type chunkHeads []*chunkHead

func (h chunkHeads) Len() int { return len(h) }

func (h chunkHeads) Less(i, j int) bool {
	if h[i].ms != h[j].ms {
		return h[i].ms > h[j].ms
	}
	return h[i].id > h[j].id
}

func (h chunkHeads) Swap(i, j int) { h[i], h[j] = h[j], h[i] }

func (h *chunkHeads) Push(x any) { *h = append(*h, x.(*chunkHead)) }

func (h *chunkHeads) Pop() any {
	old := *h
	c := old[len(old)-1]
	*h = old[:len(old)-1]
	return c
}

// rangeSide returns up to n entries of user's sorted set k (one of the
// lists), newest first, strictly after the cursor (from the start when it
// is nil), over its chunks.
//
// In one chunk, the entries after a cursor (ms, id) are those scored ms
// with a smaller id followed by those scored below ms. One ZRANGE BYSCORE
// from ms down, n+tieSlack long, holds them after the entries scored ms
// with an id at least the cursor's, which it skips: almost always only
// the cursor's own entry. When the skipped ones fill that range, the ties'
// way is taken (rangeTies).
//
// A list in several chunks is a merge: each chunk is read from the
// cursor, 2n/chunks+2 entries at once, and a chunk is read again only when
// the merge has taken every entry read of it and it may hold more. The
// chunks' reads are pipelined, not atomic; as they read disjoint ranges
// of keys, the entries are still in order, each at most once, and each
// entry present throughout is there (a split under the reads makes them
// again: ReadViews).
func (l *Lists) Range(ctx context.Context, user fg.UserID, k layout.Key, after *fg.Key, n int) ([]fg.Entry, error) {
	var es []fg.Entry
	err := Retry(func() (err error) {
		es, err = l.rangeView(ctx, user, k, after, n, l.View(user))
		return err
	})
	return es, err
}

// rangeView is rangeSide for the chunks of view v, or ErrViewChanged.
func (l *Lists) rangeView(ctx context.Context, user fg.UserID, k layout.Key, after *fg.Key, n int, v View) ([]fg.Entry, error) {
	keys := l.ChunkKeys(user, v, k)
	per := n
	if len(keys) > 1 {
		per = min(n, 2*n/len(keys)+2)
	}
	bufs, more := make([][]fg.Entry, len(keys)), make([]bool, len(keys))
	read := func(idx []int, from []*fg.Key) error {
		res, changed, err := l.ReadViews(ctx, []fg.UserID{user}, []View{v}, func() rueidis.Commands {
			cmds := make(rueidis.Commands, len(idx))
			for i, j := range idx {
				cmds[i] = l.rangeCmd(keys[j], from[i], per)
			}
			return cmds
		})
		switch {
		case err != nil:
			return err
		case changed:
			return ErrViewChanged
		}
		for i, j := range idx {
			es, tied, err := rangeReply(keys[j], from[i], per, res[i])
			if err != nil {
				return err
			}
			if tied {
				if es, err = l.rangeTies(ctx, []fg.UserID{user}, []View{v}, keys[j], from[i], per); err != nil {
					return err
				}
			}
			bufs[j], more[j] = es, len(es) == per
		}
		return nil
	}
	all, froms := make([]int, len(keys)), make([]*fg.Key, len(keys))
	for j := range all {
		all[j], froms[j] = j, after
	}
	if err := read(all, froms); err != nil {
		return nil, err
	}
	if len(keys) == 1 {
		return bufs[0], nil
	}
	out := make([]fg.Entry, 0, n)
	last := make([]*fg.Key, len(keys))
	for len(out) < n {
		best := -1
		for j := range bufs {
			if len(bufs[j]) == 0 && more[j] && last[j] != nil {
				if err := read([]int{j}, []*fg.Key{last[j]}); err != nil {
					return nil, err
				}
			}
			if len(bufs[j]) > 0 && (best < 0 || Newer(bufs[j][0], bufs[best][0])) {
				best = j
			}
		}
		if best < 0 {
			break
		}
		e := bufs[best][0]
		bufs[best] = bufs[best][1:]
		key := e.Key()
		last[best] = &key
		out = append(out, e)
	}
	return out, nil
}

// rangeKey is rangeSide's read of one key, key, with no view to check:
// for Reconcile, which checks the view around the whole read of a user.
func (l *Lists) RangeKey(ctx context.Context, key string, after *fg.Key, n int) ([]fg.Entry, error) {
	r, err := l.guard.ReadOne(ctx, func() rueidis.Completed { return l.rangeCmd(key, after, n) })
	if err != nil {
		return nil, err
	}
	es, tied, err := rangeReply(key, after, n, r)
	if err != nil || !tied {
		return es, err
	}
	return l.rangeTies(ctx, nil, nil, key, after, n)
}

// Newer reports whether a comes before b in a list: newer, or as new
// with a larger id.
func Newer(a, b fg.Entry) bool {
	if !a.Since.Equal(b.Since) {
		return a.Since.After(b.Since)
	}
	return a.ID > b.ID
}

// tieSlack is how many entries of the cursor's millisecond at or above
// its id rangeSide reads past, in one ZRANGE, before it takes the ties
// script's way: the cursor's own entry, and a few more ties.
const tieSlack = 4

// rangeCmd returns the read of up to n entries of the sorted set key
// after the cursor (nil: from the start), which rangeReply reads.
func (l *Lists) rangeCmd(key string, after *fg.Key, n int) rueidis.Completed {
	if after == nil {
		return l.c.B().Zrange().Key(key).Min("0").Max(strconv.Itoa(n - 1)).Rev().Withscores().Build()
	}
	ms := strconv.FormatInt(after.Millis, 10)
	return l.c.B().Zrange().Key(key).Min(ms).Max("-inf").Byscore().Rev().Limit(0, int64(n+tieSlack)).Withscores().Build()
}

// rangeReply returns the entries of r, the reply of rangeCmd(key, after,
// n), strictly after the cursor, or reports that the cursor's ties filled
// it (the ties' way is needed).
func rangeReply(key string, after *fg.Key, n int, r rueidis.RedisResult) (es []fg.Entry, tied bool, err error) {
	es, err = wire.Entries(key, r)
	if err != nil || after == nil {
		return es, false, err
	}
	since := fg.Millis(after.Millis)
	skip := 0
	for skip < len(es) && es[skip].Since.Equal(since) && es[skip].ID >= after.ID {
		skip++
	}
	if skip > tieSlack && len(es) == n+tieSlack {
		return nil, true, nil
	}
	return es[skip:min(len(es), skip+n)], false, nil
}

// rangeTies is rangeSide's read of one chunk, key, for a cursor that has
// more ties at or above it than tieSlack: the entries scored ms with a
// smaller id (scripts.Ties) followed by those scored below ms (ZRANGE
// BYSCORE). The two commands are pipelined, not atomic; as they read
// disjoint ranges of keys, the entries are still in order, each at most
// once, and each entry present throughout is there.
// users and vs are the user and view the read checks (none: no check).
func (l *Lists) rangeTies(ctx context.Context, users []fg.UserID, vs []View, key string, after *fg.Key, n int) ([]fg.Entry, error) {
	ms := strconv.FormatInt(after.Millis, 10)
	call := scripts.Ties.Call(scripts.TiesKeys{Set: key}, scripts.TiesArgs{N: strconv.Itoa(n), Ms: ms, ID: wire.Member(after.ID)})
	res, changed, err := l.ReadViews(ctx, users, vs, func() rueidis.Commands {
		return rueidis.Commands{l.lua.Cmd(call),
			l.c.B().Zrange().Key(key).Min("("+ms).Max("-inf").Byscore().Rev().Limit(0, int64(n)).Withscores().Build()}
	})
	switch {
	case err != nil:
		return nil, err
	case changed:
		return nil, ErrViewChanged
	}
	tiesRes := res[0]
	if missing, ok := rueidis.IsRedisErr(tiesRes.Error()); ok && missing.IsNoScript() {
		// Redis lost its scripts (a restart): run it once more, loading it.
		if tiesRes, err = l.guard.ReadOne(ctx, func() rueidis.Completed { return l.lua.EvalCmd(call) }); err != nil {
			return nil, err
		}
	}
	ties, err := tiesRes.AsStrSlice()
	if err != nil {
		return nil, err
	}
	es := make([]fg.Entry, 0, n)
	for _, m := range ties {
		id, ok := wire.MemberID(m)
		if !ok {
			return nil, fmt.Errorf("member %q of %s is not an id", m, key)
		}
		es = append(es, fg.Entry{ID: id, Since: fg.Millis(after.Millis)})
	}
	if len(es) == n {
		return es, nil
	}
	older, err := wire.Entries(key, res[1])
	if err != nil {
		return nil, err
	}
	return append(es, older[:min(len(older), n-len(es))]...), nil
}

// probe returns, for each of user's sorted sets ks, the score (follow
// time in ms) of each member in it, or -1 where it is absent: ZMSCORE on
// each chunk for its members, ProbeBatch at most a command, all
// pipelined.
func (l *Lists) Probe(ctx context.Context, user fg.UserID, members []string, ks ...layout.Key) ([][]int64, error) {
	var plans [][]MemberGroup
	res, _, err := l.ReadChunked(ctx, []fg.UserID{user}, func(vs []View) rueidis.Commands {
		plans = plans[:0]
		var cmds rueidis.Commands
		for _, k := range ks {
			plan := l.ByChunk(user, vs[0], k, members, ProbeBatch)
			plans = append(plans, plan)
			for _, grp := range plan {
				cmds = append(cmds, l.c.B().Zmscore().Key(grp.Key).Member(grp.Members(members)...).Build())
			}
		}
		return cmds
	})
	if err != nil {
		return nil, err
	}
	out := make([][]int64, len(ks))
	for k, plan := range plans {
		out[k] = make([]int64, len(members))
		for _, grp := range plan {
			vals, err := res[0].ToArray()
			if err != nil {
				return nil, err
			}
			res = res[1:]
			if len(vals) != len(grp.At) {
				return nil, fmt.Errorf("ZMSCORE of %d members answered %d", len(grp.At), len(vals))
			}
			for i, v := range vals {
				if v.IsNil() {
					out[k][grp.At[i]] = -1
					continue
				}
				ms, err := v.AsFloat64()
				if err != nil {
					return nil, err
				}
				out[k][grp.At[i]] = int64(ms)
			}
		}
	}
	return out, nil
}

// MemberGroup is members (by their index) of one chunk, key.
type MemberGroup struct {
	Key string
	At  []int
}

func (mg MemberGroup) Members(all []string) []string {
	ms := make([]string, len(mg.At))
	for i, j := range mg.At {
		ms[i] = all[j]
	}
	return ms
}

// byChunk groups members by their chunk of user's key k, as view v has
// it, at most most members a group.
func (l *Lists) ByChunk(user fg.UserID, v View, k layout.Key, members []string, most int) []MemberGroup {
	var out []MemberGroup
	if v.Chunks(k) == 1 {
		key := l.ks.User(user, k)
		for start := 0; start < len(members); start += most {
			at := make([]int, min(most, len(members)-start))
			for i := range at {
				at[i] = start + i
			}
			out = append(out, MemberGroup{key, at})
		}
		return out
	}
	open := map[string]int{} // a chunk's key → its group being filled
	for i, m := range members {
		key := l.ChunkKey(user, v, k, m)
		j, ok := open[key]
		if !ok || len(out[j].At) == most {
			j = len(out)
			out = append(out, MemberGroup{Key: key})
			open[key] = j
		}
		out[j].At = append(out[j].At, i)
	}
	return out
}
