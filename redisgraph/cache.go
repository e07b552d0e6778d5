package redisgraph

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/redis/rueidis"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/redisgraph/internal/layout"
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
const (
	// cacheTTL caps how long rueidis keeps an entry that no invalidation
	// removed; invalidations, not the TTL, keep entries fresh.
	cacheTTL = time.Minute

	// knownTTL is how long a write's stamp is remembered: long past the
	// arrival of its invalidation.
	knownTTL = 2 * time.Second
)

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
	view                 chunkView
}

// counterFields are the fields of h that counters holds, in its order:
// the numbers, then the state's word, then the user's view of its chunks
// (chunks.go's groupFields).
var counterFields = append([]string{"nout", "nin", "st", "nri", "nbo", "nbi", "nmo", "nro", "p", "s"}, groupFields[:]...)

// readCounters returns the counters of each id, through the cache. Hits
// the graph's markers do not vouch for (see guard.go), and misses whose
// check finds the graph rebuilt meanwhile, are read again from Redis.
func (g *Graph) readCounters(ctx context.Context, ids []fg.UserID) ([]counters, error) {
	out := make([]counters, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	cmds := make([]rueidis.CacheableTTL, len(ids))
	for i, id := range ids {
		cmds[i] = rueidis.CT(g.c.B().Hmget().Key(g.key(id, layout.Counters)).Field(counterFields...).Cache(), cacheTTL)
	}
	missed := g.begin(nil) // the groups of the misses, as they were before
	for _, id := range ids {
		missed.add(g, g.group(slotOf(id)))
	}
	var again, misses []int // hits to read from Redis; misses, to check
	for i, r := range g.c.DoMultiCache(ctx, cmds...) {
		c, err := parseCounters(r)
		if err != nil {
			return nil, err
		}
		switch {
		case !r.IsCacheHit():
			g.misses.Add(1)
			misses = append(misses, i)
		case c.stamp < g.known.get(ids[i]) || !g.trusted(g.group(slotOf(ids[i])), r):
			again = append(again, i)
			continue
		default:
			g.hits.Add(1)
		}
		c.fresh = true
		out[i] = c
	}
	if len(misses) > 0 {
		groups := make([]int, len(misses))
		for j, i := range misses {
			groups[j] = g.group(slotOf(ids[i]))
		}
		rebuilt, err := g.verify(ctx, missed.only(groups))
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
	res, err := g.readChecked(ctx, func() rueidis.Commands {
		direct := make(rueidis.Commands, len(again))
		for j, i := range again {
			direct[j] = g.c.B().Hmget().Key(g.key(ids[i], layout.Counters)).Field(counterFields...).Build()
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
	var view chunkView
	if len(vals) > len(n)+1 {
		if view, err = parseViewOf(vals[len(n)+1:]); err != nil {
			return counters{}, err
		}
	}
	return counters{following: n[0], followers: n[1], stamp: n[2], requestsIn: n[3],
		blocks: n[4], blockedBy: n[5], mutes: n[6], requestsOut: n[7], private: n[8] == 1, state: state, view: view}, nil
}

// stamps remembers, for a little while, the change stamps this Graph's
// writes left on users, sharded by user.
type stamps struct {
	shards [64]stampShard
}

type stampShard struct {
	mu    sync.Mutex
	m     map[fg.UserID]knownStamp
	swept time.Time
	_     [16]byte
}

type knownStamp struct {
	stamp int64
	at    time.Time
}

func (s *stamps) shard(id fg.UserID) *stampShard {
	return &s.shards[uint64(id)*0x9E3779B97F4A7C15>>58]
}

// note remembers, for knownTTL from now, that id's stamp is at least
// stamp (and at least any stamp noted before).
func (s *stamps) note(id fg.UserID, stamp int64) {
	sh := s.shard(id)
	now := time.Now()
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.m == nil {
		sh.m = make(map[fg.UserID]knownStamp)
	}
	if k, ok := sh.m[id]; ok && k.stamp > stamp {
		stamp = k.stamp
	}
	sh.m[id] = knownStamp{stamp: stamp, at: now}
	if len(sh.m) > 1024 && now.Sub(sh.swept) > knownTTL {
		for id, k := range sh.m {
			if now.Sub(k.at) > knownTTL {
				delete(sh.m, id)
			}
		}
		sh.swept = now
	}
}

// touch notes that each of ids changed at a stamp not known: until
// knownTTL has passed, every cached counters hash of theirs is read again.
func (s *stamps) touch(ids ...fg.UserID) {
	for _, id := range ids {
		s.note(id, math.MaxInt64)
	}
}

// get returns the stamp noted for id within knownTTL, or 0.
func (s *stamps) get(id fg.UserID) int64 {
	sh := s.shard(id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	k, ok := sh.m[id]
	if !ok || time.Since(k.at) > knownTTL {
		return 0
	}
	return k.stamp
}
