package redisgraph

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/rueidis"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/redisgraph/internal/guard"
	"github.com/followgraph/followgraph/redisgraph/internal/layout"
	"github.com/followgraph/followgraph/redisgraph/internal/lists"
)

// The client-side cache (rueidis with Redis's server-assisted tracking)
// holds each user's counters hash, read by Counts and by set queries, and
// the first page of the followers of users with at least cacheMin
// followers. Redis tells the client when a cached key changes, and rueidis
// drops it; that message travels on the connection that read the key, and
// may arrive just after the reply of a write sent on another connection.
// So that a write is seen by the next read of the Graph that made it, each
// write notes the change stamps it left (stamps below), and a cached
// counters hash whose stamp is older than the one noted is read again from
// Redis. Writes of other clients are seen once their invalidation arrives.
//
// Every cached read lives at most guard.CacheTTL.

// counters are a user's counters, change stamp and private flag, the
// fields counterFields of the hash <prefix>:{id}:h.
type counters struct {
	following, followers int64
	stamp                int64
	requestsIn           int64 // nri: pending requests to the user
	blocks, blockedBy    int64 // nbo, nbi
	mutes                int64 // nmo, expired mutes too
	requestsOut          int64 // nro
	private              bool
	state                fg.State // s (lua/state.lua)
	fresh                bool     // read on the connection that caches the user's keys (see followersPage)
	view                 lists.View
}

// counterFields are the fields of h that counters holds, in its order:
// the numbers, then the state's word, then the user's view of its chunks
// (lists.GroupFields).
var counterFields = append([]string{"nout", "nin", "st", "nri", "nbo", "nbi", "nmo", "nro", "p", "s"}, lists.GroupFields[:]...)

// readCounters returns the counters of each id, through the cache. Hits
// the graph's markers do not vouch for (package guard), and misses whose
// check finds the graph rebuilt meanwhile, are read again from Redis.
func (g *Graph) readCounters(ctx context.Context, ids []fg.UserID) ([]counters, error) {
	out := make([]counters, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	cmds := make([]rueidis.CacheableTTL, len(ids))
	for i, id := range ids {
		cmds[i] = rueidis.CT(g.c.B().Hmget().Key(g.ks.User(id, layout.Counters)).Field(counterFields...).Cache(), guard.CacheTTL)
	}
	missed := g.guard.For(ids...) // the groups of the misses, as they were before
	var again, misses []int       // hits to read from Redis; misses, to check
	for i, r := range g.c.DoMultiCache(ctx, cmds...) {
		c, err := parseCounters(r)
		if err != nil {
			return nil, err
		}
		switch {
		case !r.IsCacheHit():
			g.misses.Add(1)
			misses = append(misses, i)
		case c.stamp < g.known.Get(ids[i]) || !g.guard.Trusted(g.ks.GroupOf(ids[i]), r):
			again = append(again, i)
			continue
		default:
			g.hits.Add(1)
		}
		c.fresh = true
		out[i] = c
	}
	if len(misses) > 0 {
		missIDs := make([]fg.UserID, len(misses))
		for j, i := range misses {
			missIDs[j] = ids[i]
		}
		rebuilt, err := g.guard.Verify(ctx, g.guard.Of(missed, missIDs...))
		if err != nil {
			return nil, err
		}
		if rebuilt {
			again = append(again, misses...)
		}
	}
	if len(again) == 0 {
		return out, nil
	}
	g.misses.Add(uint64(len(again)))
	res, err := g.guard.Read(ctx, func() rueidis.Commands {
		direct := make(rueidis.Commands, len(again))
		for j, i := range again {
			direct[j] = g.c.B().Hmget().Key(g.ks.User(ids[i], layout.Counters)).Field(counterFields...).Build()
		}
		return direct
	})
	if err != nil {
		return nil, err
	}
	for j, r := range res {
		c, err := parseCounters(r)
		if err != nil {
			return nil, err
		}
		out[again[j]] = c
	}
	return out, nil
}

func parseCounters(r rueidis.RedisResult) (counters, error) {
	vals, err := r.ToArray()
	if err != nil {
		return counters{}, err
	}
	var n [9]int64
	var state fg.State
	if len(vals) > len(n) && !vals[len(n)].IsNil() {
		word, err := vals[len(n)].ToString()
		if err != nil {
			return counters{}, err
		}
		var ok bool
		if state, ok = fg.ParseState(word); !ok {
			return counters{}, fmt.Errorf("state %q is not a state", word)
		}
	}
	for i := range min(len(vals), len(n)) {
		if vals[i].IsNil() {
			continue
		}
		s, err := vals[i].ToString()
		if err != nil {
			return counters{}, err
		}
		if n[i], err = strconv.ParseInt(s, 10, 64); err != nil {
			return counters{}, err
		}
	}
	var view lists.View
	if len(vals) > len(n)+1 {
		if view, err = lists.ParseViewOf(vals[len(n)+1:]); err != nil {
			return counters{}, err
		}
	}
	return counters{following: n[0], followers: n[1], stamp: n[2], requestsIn: n[3],
		blocks: n[4], blockedBy: n[5], mutes: n[6], requestsOut: n[7], private: n[8] == 1, state: state, view: view}, nil
}
