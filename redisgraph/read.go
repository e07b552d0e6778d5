package redisgraph

import (
	"context"
	"slices"
	"strconv"

	"github.com/redis/rueidis"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/redisgraph/internal/errs"
	"github.com/followgraph/followgraph/redisgraph/internal/guard"
	"github.com/followgraph/followgraph/redisgraph/internal/layout"
	"github.com/followgraph/followgraph/redisgraph/internal/lists"
	"github.com/followgraph/followgraph/redisgraph/internal/wire"
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
	m := wire.Member(target)
	res, _, err := g.lists.ReadChunked(ctx, []fg.UserID{user}, func(vs []lists.View) rueidis.Commands {
		return rueidis.Commands{g.c.B().Zscore().Key(g.lists.ChunkKey(user, vs[0], layout.Out, m)).Member(m).Build()}
	})
	if err != nil {
		return fg.Edge{}, errs.Wrap("is-following", err)
	}
	ms, err := res[0].AsFloat64()
	switch {
	case rueidis.IsRedisNil(err):
		return fg.Edge{}, nil
	case err != nil:
		return fg.Edge{}, errs.Wrap("is-following", err)
	}
	return fg.Edge{Following: true, Since: fg.Millis(int64(ms))}, nil
}

// Counts returns the counters of each id; see followgraph.Graph. They are
// served through the client-side cache (readCounters).
func (g *Graph) Counts(ctx context.Context, ids []fg.UserID) ([]fg.Counts, error) {
	if err := fg.CheckIDList(ids, fg.MaxCountIDs); err != nil {
		return nil, err
	}
	cs, err := g.readCounters(ctx, ids)
	if err != nil {
		return nil, errs.Wrap("counts", err)
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
	es, err := g.lists.Range(ctx, user, layout.Out, q.After, q.Size+1)
	if err != nil {
		return fg.Page{}, errs.Wrap("following", err)
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
		return fg.Page{}, errs.Wrap("followers", err)
	}
	if !cs[0].state.Active() {
		return fg.Page{}, nil // as for a user with no edges
	}
	var es []fg.Entry
	if q.After != nil || g.cacheMin == 0 {
		es, err = g.lists.Range(ctx, user, layout.In, q.After, q.Size+1)
	} else {
		es, err = g.firstFollowers(ctx, user, cs[0], q.Size+1)
	}
	if err != nil {
		return fg.Page{}, errs.Wrap("followers", err)
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
// A list in chunks is cached chunk by chunk: the newest lists.PerCached(n,
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
		return g.lists.Range(ctx, user, layout.In, nil, n)
	}
	keys := g.lists.ChunkKeys(user, c.view, layout.In)
	per := lists.PerCached(n, len(keys))
	cr := g.guard.For(user)
	grp := g.ks.GroupOf(user)
	cmds := make([]rueidis.CacheableTTL, len(keys))
	for j, key := range keys {
		cmds[j] = rueidis.CT(g.c.B().Zrange().Key(key).Min("0").Max(strconv.Itoa(per-1)).Rev().Withscores().Cache(), guard.CacheTTL)
	}
	rs := g.c.DoMultiCache(ctx, cmds...)
	hit := true
	for _, r := range rs {
		switch {
		case r.Error() != nil:
		case !r.IsCacheHit():
			hit = false
		case !g.guard.Trusted(grp, r):
			return g.lists.Range(ctx, user, layout.In, nil, n)
		}
	}
	if !hit {
		if again, err := g.guard.Verify(ctx, cr); err != nil || again {
			if err != nil {
				return nil, err
			}
			return g.lists.Range(ctx, user, layout.In, nil, n)
		}
	}
	es, whole, err := lists.MergeCached(keys, rs, per, n)
	if err != nil {
		return nil, err
	}
	if !whole {
		return g.lists.Range(ctx, user, layout.In, nil, n)
	}
	if cs, err := g.readCounters(ctx, []fg.UserID{user}); err != nil {
		return nil, err
	} else if cs[0].view != c.view {
		return g.lists.Range(ctx, user, layout.In, nil, n)
	}
	if hit {
		g.hits.Add(1)
	} else {
		g.misses.Add(1)
	}
	return es, nil
}

// Relations returns the relation of viewer to each id, from the viewer's
// own keys: ZMSCORE on its two follow sets, in chunks of lists.ProbeBatch ids,
// and, when the viewer's counters (read through the client-side cache)
// say it has edges of the other kinds, ZMSCORE of its flags set (layout.Flags),
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
		return nil, errs.Wrap("relations", err)
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
		members[i] = wire.Member(id)
	}
	scores, flags, err := g.probeFlags(ctx, viewer, cs[0].linked(), members, layout.Out, layout.In)
	if err != nil {
		return nil, errs.Wrap("relations", err)
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
	scores, err := g.lists.Probe(ctx, user, members, keys...)
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
	var plan []lists.MemberGroup
	res, _, err := g.lists.ReadChunked(ctx, []fg.UserID{user}, func(vs []lists.View) rueidis.Commands {
		plan = g.lists.ByChunk(user, vs[0], layout.MuteExpiry, ms, lists.ProbeBatch)
		cmds := make(rueidis.Commands, len(plan))
		for i, grp := range plan {
			cmds[i] = g.c.B().Hmget().Key(grp.Key).Field(grp.Members(ms)...).Build()
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
				out[muted[grp.At[j]]] = -1
			}
		}
	}
	var ids []fg.UserID
	var at []int
	for i, sc := range out {
		if sc >= 0 {
			id, _ := wire.MemberID(members[i])
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
