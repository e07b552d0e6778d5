package redisgraph

import (
	"container/heap"
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/redis/rueidis"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/redisgraph/internal/layout"
)

// Reads never ask one command for more than these, so that each stays
// under a millisecond on the server, even on sets of millions (TestSlowlog
// checks it; the figures are in docs/BENCHMARKS.md, in the rows that name
// probeChunk and rangeChunk).
const (
	probeChunk = 200  // members one ZMSCORE asks about
	rangeChunk = 1000 // entries one ZRANGE returns (a list page holds at most 1001)
)

// IsFollowing reports whether user follows target; see followgraph.Graph.
// It reads the follower's side, which decides every change.
func (g *Graph) IsFollowing(ctx context.Context, user, target fg.UserID) (fg.Edge, error) {
	if err := fg.CheckIDs(user, target); err != nil {
		return fg.Edge{}, err
	}
	if stop, err := g.inactive(ctx, "is-following", user); stop {
		return fg.Edge{}, err
	}
	m := member(target)
	res, _, err := g.readChunked(ctx, []fg.UserID{user}, func(vs []chunkView) rueidis.Commands {
		return rueidis.Commands{g.c.B().Zscore().Key(g.chunkKey(user, vs[0], layout.Out, m)).Member(m).Build()}
	})
	if err != nil {
		return fg.Edge{}, unavailable("is-following", err)
	}
	ms, err := res[0].AsFloat64()
	switch {
	case rueidis.IsRedisNil(err):
		return fg.Edge{}, nil
	case err != nil:
		return fg.Edge{}, unavailable("is-following", err)
	}
	return fg.Edge{Following: true, Since: fg.Millis(int64(ms))}, nil
}

// Counts returns the counters of each id; see followgraph.Graph. They are
// served through the client-side cache (see cache.go).
func (g *Graph) Counts(ctx context.Context, ids []fg.UserID) ([]fg.Counts, error) {
	if err := fg.CheckIDList(ids, fg.MaxCountIDs); err != nil {
		return nil, err
	}
	cs, err := g.readCounters(ctx, ids)
	if err != nil {
		return nil, unavailable("counts", err)
	}
	out := make([]fg.Counts, len(ids))
	for i, id := range ids {
		if c := cs[i]; !c.state.Active() {
			out[i] = fg.Counts{ID: id, State: c.state} // as for a user with no edges
			continue
		}
		out[i] = fg.Counts{ID: id, FollowingCount: cs[i].following, FollowerCount: cs[i].followers, FollowRequests: cs[i].requestsIn}
	}
	return out, nil
}

// Following returns a page of the users that user follows.
func (g *Graph) Following(ctx context.Context, user fg.UserID, req fg.PageRequest) (fg.Page, error) {
	q, err := req.Query(fg.ListFollowing, user)
	if err != nil {
		return fg.Page{}, err
	}
	if stop, err := g.inactive(ctx, "following", user); stop {
		return fg.Page{}, err
	}
	es, err := g.rangeSide(ctx, user, layout.Out, q.After, q.Size+1)
	if err != nil {
		return fg.Page{}, unavailable("following", err)
	}
	return q.Page(es), nil
}

// Followers returns a page of the users that follow user. The first page of
// a user with at least the cache threshold of followers is served through
// the client-side cache.
func (g *Graph) Followers(ctx context.Context, user fg.UserID, req fg.PageRequest) (fg.Page, error) {
	q, err := req.Query(fg.ListFollowers, user)
	if err != nil {
		return fg.Page{}, err
	}
	cs, err := g.readCounters(ctx, []fg.UserID{user})
	if err != nil {
		return fg.Page{}, unavailable("followers", err)
	}
	if !cs[0].state.Active() {
		return fg.Page{}, nil // as for a user with no edges
	}
	var es []fg.Entry
	if q.After != nil || g.cacheMin == 0 {
		es, err = g.rangeSide(ctx, user, layout.In, q.After, q.Size+1)
	} else {
		es, err = g.firstFollowers(ctx, user, cs[0], q.Size+1)
	}
	if err != nil {
		return fg.Page{}, unavailable("followers", err)
	}
	return q.Page(es), nil
}

// firstFollowers returns the n newest followers of user, from the cache
// when user has at least cacheMin followers by c, its counters just read
// through the cache.
//
// The page is cached on the same connection as the user's counters hash
// (both keys are in one slot), where Redis sends their invalidations in
// the order of the changes. So once the counters were read on that
// connection with a stamp at least the one this Graph's last write left,
// the invalidation of an older page has been processed, and the page read
// next is at least as new. Counters read again from Redis, past a stale
// cache entry, do not prove that: the page is then read from Redis too.
//
// A list in chunks is cached chunk by chunk: the newest perCached(n,
// chunks) entries of each, merged as rangeSide merges. All of a user's
// chunks are in its slot, so on the same connection, and a change writes
// its chunk and the counters in one script: the argument above holds for
// each chunk. The page is served only while the user's view of its
// chunks, read with the counters, is the same when read again after the
// page: a split writes the counters and the chunks in one script, so
// their invalidations reach this connection together, and a page read
// after a split finds the counters' entry gone. When the merge empties a
// chunk's cached entries before the page is full and the chunk may hold
// more (rare: see perCached), the page is read from Redis instead.
func (g *Graph) firstFollowers(ctx context.Context, user fg.UserID, c counters, n int) ([]fg.Entry, error) {
	if c.followers < g.cacheMin || !c.fresh {
		return g.rangeSide(ctx, user, layout.In, nil, n)
	}
	keys := g.chunkKeys(user, c.view, layout.In)
	per := perCached(n, len(keys))
	cr := g.begin(nil)
	grp := g.group(slotOf(user))
	cr.add(g, grp)
	cmds := make([]rueidis.CacheableTTL, len(keys))
	for j, key := range keys {
		cmds[j] = rueidis.CT(g.c.B().Zrange().Key(key).Min("0").Max(strconv.Itoa(per-1)).Rev().Withscores().Cache(), cacheTTL)
	}
	rs := g.c.DoMultiCache(ctx, cmds...)
	hit := true
	for _, r := range rs {
		switch {
		case r.Error() != nil:
		case !r.IsCacheHit():
			hit = false
		case !g.trusted(grp, r):
			return g.rangeSide(ctx, user, layout.In, nil, n)
		}
	}
	if !hit {
		if again, err := g.verify(ctx, cr); err != nil || again {
			if err != nil {
				return nil, err
			}
			return g.rangeSide(ctx, user, layout.In, nil, n)
		}
	}
	es, whole, err := mergeCached(keys, rs, per, n)
	if err != nil {
		return nil, err
	}
	if !whole {
		return g.rangeSide(ctx, user, layout.In, nil, n)
	}
	if cs, err := g.readCounters(ctx, []fg.UserID{user}); err != nil {
		return nil, err
	} else if cs[0].view != c.view {
		return g.rangeSide(ctx, user, layout.In, nil, n)
	}
	if hit {
		g.hits.Add(1)
	} else {
		g.misses.Add(1)
	}
	return es, nil
}

// perCached is how many of each chunk's newest entries the cache keeps
// for a first page of n entries over chunks chunks: four times a chunk's
// share and six (all n for one chunk), so that the newest n entries of
// the list, spread over the chunks by the hash of their ids, hold that
// many of one chunk only rarely. The chance is at most chunks × P(X ≥
// per) for X binomial(n, 1/chunks): for 51 entries over 256 chunks, per
// 6, 1.4e-5, once in about 70,000 pages.
func perCached(n, chunks int) int {
	return min(n, 4*n/chunks+6)
}

// mergeCached merges rs, the replies of the cached reads of the newest
// per entries of each of the chunks keys, into the newest n entries of
// them all. It reports false when a chunk read in full ran out before the
// page was full: that chunk may hold an entry newer than the rest.
//
// This is the whole cost of a cached first page, so it parses an entry
// only when it reaches the head of its chunk (about n + chunks entries
// rather than per × chunks), and picks the newest head with a heap.
func mergeCached(keys []string, rs []rueidis.RedisResult, per, n int) ([]fg.Entry, bool, error) {
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

// chunkHead is a chunk's cached entries in mergeCached: the head (ms,
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
	id, ok := memberID(m)
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
func (h *chunkHeads) Push(x any)   { *h = append(*h, x.(*chunkHead)) }
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
// again: chunks.go).
func (g *Graph) rangeSide(ctx context.Context, user fg.UserID, k layout.Key, after *fg.Key, n int) ([]fg.Entry, error) {
	var es []fg.Entry
	err := chunked(func() (err error) {
		es, err = g.rangeView(ctx, user, k, after, n, g.view(user))
		return err
	})
	return es, err
}

// rangeView is rangeSide for the chunks of view v, or errViewChanged.
func (g *Graph) rangeView(ctx context.Context, user fg.UserID, k layout.Key, after *fg.Key, n int, v chunkView) ([]fg.Entry, error) {
	keys := g.chunkKeys(user, v, k)
	per := n
	if len(keys) > 1 {
		per = min(n, 2*n/len(keys)+2)
	}
	bufs, more := make([][]fg.Entry, len(keys)), make([]bool, len(keys))
	read := func(idx []int, from []*fg.Key) error {
		res, changed, err := g.readViews(ctx, []fg.UserID{user}, []chunkView{v}, func() rueidis.Commands {
			cmds := make(rueidis.Commands, len(idx))
			for i, j := range idx {
				cmds[i] = g.rangeCmd(keys[j], from[i], per)
			}
			return cmds
		})
		switch {
		case err != nil:
			return err
		case changed:
			return errViewChanged
		}
		for i, j := range idx {
			es, tied, err := rangeReply(keys[j], from[i], per, res[i])
			if err != nil {
				return err
			}
			if tied {
				if es, err = g.rangeTies(ctx, []fg.UserID{user}, []chunkView{v}, keys[j], from[i], per); err != nil {
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
			if len(bufs[j]) > 0 && (best < 0 || newer(bufs[j][0], bufs[best][0])) {
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
func (g *Graph) rangeKey(ctx context.Context, key string, after *fg.Key, n int) ([]fg.Entry, error) {
	r, err := g.readOne(ctx, func() rueidis.Completed { return g.rangeCmd(key, after, n) })
	if err != nil {
		return nil, err
	}
	es, tied, err := rangeReply(key, after, n, r)
	if err != nil || !tied {
		return es, err
	}
	return g.rangeTies(ctx, nil, nil, key, after, n)
}

// newer reports whether a comes before b in a list: newer, or as new
// with a larger id.
func newer(a, b fg.Entry) bool {
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
func (g *Graph) rangeCmd(key string, after *fg.Key, n int) rueidis.Completed {
	if after == nil {
		return g.c.B().Zrange().Key(key).Min("0").Max(strconv.Itoa(n - 1)).Rev().Withscores().Build()
	}
	ms := strconv.FormatInt(after.Millis, 10)
	return g.c.B().Zrange().Key(key).Min(ms).Max("-inf").Byscore().Rev().Limit(0, int64(n+tieSlack)).Withscores().Build()
}

// rangeReply returns the entries of r, the reply of rangeCmd(key, after,
// n), strictly after the cursor, or reports that the cursor's ties filled
// it (the ties' way is needed).
func rangeReply(key string, after *fg.Key, n int, r rueidis.RedisResult) (es []fg.Entry, tied bool, err error) {
	es, err = parseEntries(key, r)
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
// smaller id (scriptTies) followed by those scored below ms (ZRANGE
// BYSCORE). The two commands are pipelined, not atomic; as they read
// disjoint ranges of keys, the entries are still in order, each at most
// once, and each entry present throughout is there.
// users and vs are the user and view the read checks (none: no check).
func (g *Graph) rangeTies(ctx context.Context, users []fg.UserID, vs []chunkView, key string, after *fg.Key, n int) ([]fg.Entry, error) {
	ms := strconv.FormatInt(after.Millis, 10)
	keys, args := []string{key}, []string{strconv.Itoa(n), ms, member(after.ID)}
	res, changed, err := g.readViews(ctx, users, vs, func() rueidis.Commands {
		return rueidis.Commands{scriptTies.cmd(g.c, keys, args),
			g.c.B().Zrange().Key(key).Min("("+ms).Max("-inf").Byscore().Rev().Limit(0, int64(n)).Withscores().Build()}
	})
	switch {
	case err != nil:
		return nil, err
	case changed:
		return nil, errViewChanged
	}
	tiesRes := res[0]
	if missing, ok := rueidis.IsRedisErr(tiesRes.Error()); ok && missing.IsNoScript() {
		// Redis lost its scripts (a restart): run it once more, loading it.
		if tiesRes, err = g.readOne(ctx, func() rueidis.Completed { return scriptTies.evalCmd(g.c, keys, args) }); err != nil {
			return nil, err
		}
	}
	ties, err := tiesRes.AsStrSlice()
	if err != nil {
		return nil, err
	}
	es := make([]fg.Entry, 0, n)
	for _, m := range ties {
		id, ok := memberID(m)
		if !ok {
			return nil, fmt.Errorf("member %q of %s is not an id", m, key)
		}
		es = append(es, fg.Entry{ID: id, Since: fg.Millis(after.Millis)})
	}
	if len(es) == n {
		return es, nil
	}
	older, err := parseEntries(key, res[1])
	if err != nil {
		return nil, err
	}
	return append(es, older[:min(len(older), n-len(es))]...), nil
}

// parseEntries reads the reply of a ZRANGE … WITHSCORES.
func parseEntries(key string, r rueidis.RedisResult) ([]fg.Entry, error) {
	zs, err := r.AsZScores()
	if err != nil {
		return nil, err
	}
	es := make([]fg.Entry, len(zs))
	for i, z := range zs {
		id, ok := memberID(z.Member)
		if !ok {
			return nil, fmt.Errorf("member %q of %s is not an id", z.Member, key)
		}
		es[i] = fg.Entry{ID: id, Since: fg.Millis(int64(z.Score))}
	}
	return es, nil
}

// Relations returns the relation of viewer to each id, from the viewer's
// own keys: ZMSCORE on its two follow sets, in chunks of probeChunk ids,
// and, when the viewer's counters (read through the client-side cache)
// say it has edges of the other kinds, ZMSCORE of its flags set (keys.go),
// all pipelined; a mute's expiry is then read for the muted ids.
func (g *Graph) Relations(ctx context.Context, viewer fg.UserID, ids []fg.UserID) ([]fg.RelationInfo, error) {
	if err := fg.CheckIDList(ids, fg.MaxRelationIDs, viewer); err != nil {
		return nil, err
	}
	out := make([]fg.RelationInfo, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	cs, err := g.readCounters(ctx, []fg.UserID{viewer})
	if err != nil {
		return nil, unavailable("relations", err)
	}
	if !cs[0].state.Active() { // as for a viewer with no edges
		for i, id := range ids {
			out[i] = fg.RelationInfo{ID: id, Relation: fg.RelationNone}
			if id == viewer {
				out[i].Relation = fg.RelationSelf
			}
		}
		return out, nil
	}
	members := make([]string, len(ids))
	for i, id := range ids {
		members[i] = member(id)
	}
	scores, flags, err := g.probeFlags(ctx, viewer, cs[0].linked(), members, layout.Out, layout.In)
	if err != nil {
		return nil, unavailable("relations", err)
	}
	following, followedBy := scores[0], scores[1]
	for i, id := range ids {
		if id == viewer {
			out[i] = fg.RelationInfo{ID: id, Relation: fg.RelationSelf}
			continue
		}
		out[i] = fg.RelationInfo{ID: id, Relation: fg.RelationOf(following[i] >= 0, followedBy[i] >= 0)}
		if following[i] >= 0 {
			out[i].FollowingSince = fg.Millis(following[i])
		}
		if followedBy[i] >= 0 {
			out[i].FollowedBySince = fg.Millis(followedBy[i])
		}
		if f := flags[i]; f != 0 {
			r := &out[i]
			r.Blocking, r.BlockedBy, r.Muting = f&layout.FlagBlocking != 0, f&layout.FlagBlockedBy != 0, f&layout.FlagMuting != 0
			r.Requested, r.RequestedBy = f&layout.FlagRequested != 0, f&layout.FlagRequestedBy != 0
		}
	}
	return out, nil
}

// linked reports whether the user has edges of the other kinds, so that
// its flags hash may hold anything.
func (c counters) linked() bool {
	return c.blocks+c.blockedBy+c.mutes+c.requestsOut+c.requestsIn > 0
}

// probeFlags returns the scores of members in each of keys (as probe) and,
// when withFlags, the flags of user with each member (0 where none, and
// without withFlags), with expired mutes left out: in one round trip, and
// one more for the expiries when any member is muted.
func (g *Graph) probeFlags(ctx context.Context, user fg.UserID, withFlags bool, members []string, keys ...layout.Key) ([][]int64, []int, error) {
	flags := make([]int, len(members))
	if withFlags {
		keys = append(keys, layout.Flags)
	}
	scores, err := g.probe(ctx, user, members, keys...)
	if err != nil || !withFlags {
		return scores, flags, err
	}
	muted := make([]int64, len(members))
	any := false
	for i, f := range scores[len(scores)-1] {
		flags[i], muted[i] = max(int(f), 0), -1
		if flags[i]&layout.FlagMuting != 0 {
			muted[i], any = 0, true
		}
	}
	if any {
		if muted, err = g.unexpired(ctx, user, members, muted); err != nil {
			return nil, nil, err
		}
		for i, f := range flags {
			if f&layout.FlagMuting != 0 && muted[i] < 0 {
				flags[i] &^= layout.FlagMuting
			}
		}
	}
	return scores[:len(scores)-1], flags, nil
}

// unexpired returns scores, the scores of members in user's mutes (-1
// where absent), with -1 also where the mute has expired by the engine's
// clock, or where the muted user is not active: a mute is on the muter's
// side only, so no job finds it to hide (docs/design/
// states.md); it is hidden here, from the moment of the state, and shown
// again with its since and expiry when the user is active again.
func (g *Graph) unexpired(ctx context.Context, user fg.UserID, members []string, scores []int64) ([]int64, error) {
	var muted []int
	for i, s := range scores {
		if s >= 0 {
			muted = append(muted, i)
		}
	}
	if len(muted) == 0 {
		return scores, nil
	}
	ms := make([]string, len(muted))
	for j, i := range muted {
		ms[j] = members[i]
	}
	var plan []memberGroup
	res, _, err := g.readChunked(ctx, []fg.UserID{user}, func(vs []chunkView) rueidis.Commands {
		plan = g.byChunk(user, vs[0], layout.MuteExpiry, ms, probeChunk)
		cmds := make(rueidis.Commands, len(plan))
		for i, grp := range plan {
			cmds[i] = g.c.B().Hmget().Key(grp.key).Field(grp.members(ms)...).Build()
		}
		return cmds
	})
	if err != nil {
		return nil, err
	}
	now := g.now().UnixMilli()
	out := slices.Clone(scores)
	for i, grp := range plan {
		vals, err := res[i].ToArray()
		if err != nil {
			return nil, err
		}
		for j, v := range vals {
			if x, err := v.AsInt64(); err == nil && x <= now {
				out[muted[grp.at[j]]] = -1
			}
		}
	}
	var ids []fg.UserID
	var at []int
	for i, sc := range out {
		if sc >= 0 {
			id, _ := memberID(members[i])
			ids, at = append(ids, id), append(at, i)
		}
	}
	cs, err := g.readCounters(ctx, ids)
	if err != nil {
		return nil, err
	}
	for j, c := range cs {
		if !c.state.Active() {
			out[at[j]] = -1
		}
	}
	return out, nil
}

// probe returns, for each of user's sorted sets ks, the score (follow
// time in ms) of each member in it, or -1 where it is absent: ZMSCORE on
// each chunk for its members, probeChunk at most a command, all
// pipelined.
func (g *Graph) probe(ctx context.Context, user fg.UserID, members []string, ks ...layout.Key) ([][]int64, error) {
	var plans [][]memberGroup
	res, _, err := g.readChunked(ctx, []fg.UserID{user}, func(vs []chunkView) rueidis.Commands {
		plans = plans[:0]
		var cmds rueidis.Commands
		for _, k := range ks {
			plan := g.byChunk(user, vs[0], k, members, probeChunk)
			plans = append(plans, plan)
			for _, grp := range plan {
				cmds = append(cmds, g.c.B().Zmscore().Key(grp.key).Member(grp.members(members)...).Build())
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
			if len(vals) != len(grp.at) {
				return nil, fmt.Errorf("ZMSCORE of %d members answered %d", len(grp.at), len(vals))
			}
			for i, v := range vals {
				if v.IsNil() {
					out[k][grp.at[i]] = -1
					continue
				}
				ms, err := v.AsFloat64()
				if err != nil {
					return nil, err
				}
				out[k][grp.at[i]] = int64(ms)
			}
		}
	}
	return out, nil
}

// memberGroup is members (by their index) of one chunk, key.
type memberGroup struct {
	key string
	at  []int
}

func (mg memberGroup) members(all []string) []string {
	ms := make([]string, len(mg.at))
	for i, j := range mg.at {
		ms[i] = all[j]
	}
	return ms
}

// byChunk groups members by their chunk of user's key k, as view v has
// it, at most most members a group.
func (g *Graph) byChunk(user fg.UserID, v chunkView, k layout.Key, members []string, most int) []memberGroup {
	var out []memberGroup
	if v.chunks(k) == 1 {
		key := g.key(user, k)
		for start := 0; start < len(members); start += most {
			at := make([]int, min(most, len(members)-start))
			for i := range at {
				at[i] = start + i
			}
			out = append(out, memberGroup{key, at})
		}
		return out
	}
	open := map[string]int{} // a chunk's key → its group being filled
	for i, m := range members {
		key := g.chunkKey(user, v, k, m)
		j, ok := open[key]
		if !ok || len(out[j].at) == most {
			j = len(out)
			out = append(out, memberGroup{key: key})
			open[key] = j
		}
		out[j].at = append(out[j].at, i)
	}
	return out
}
