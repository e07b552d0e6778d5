package redisgraph

import (
	"context"
	"hash/maphash"
	"strconv"
	"sync"

	"github.com/redis/rueidis"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/redisgraph/internal/errs"
	"github.com/followgraph/followgraph/redisgraph/internal/layout"
	"github.com/followgraph/followgraph/redisgraph/internal/lists"
	"github.com/followgraph/followgraph/redisgraph/internal/wire"
)

// Set queries intersect two sorted sets, one of which (the paging side)
// orders the result and gives each entry its time. They never ask Redis to
// intersect: SINTER or ZINTERCARD on two large sets would hold Redis for
// as long as the sets are large. Instead they read one side in chunks of
// lists.RangeBatch members and ask the other side about them with ZMSCORE, in
// commands of lists.ProbeBatch members.
//
//   - The exact count walks the smaller side whole, by rank, chunks
//     pipelined. It is remembered against the two users' change stamps
//     (memo below), so that the pages after the first, and the same query
//     again, do not walk again while neither user changed.
//   - The page walks the paging side from the cursor, newest first, until
//     it has one entry more than the page: about (limit+1)×|paging|/count
//     members. When the other side is smaller than that, the page comes
//     instead from walking the other side whole, probing the paging side
//     for the times, and sorting. Either way each page costs at most a
//     walk of the smaller side.
//
// Both page walks go by keyset (rangeAfter), so a page is right under
// concurrent change: no entry twice, none present the whole time skipped.
const countGroup = 16 // chunks of a count walk sent at once

// side is one sorted set of a set query: whom user follows, or (in) who
// follows user.
type side struct {
	user fg.UserID
	in   bool
}

func (s side) key() layout.Key {
	if s.in {
		return layout.In
	}
	return layout.Out
}

func (s side) size(c counters) int64 {
	if s.in {
		return c.followers
	}
	return c.following
}

// Mutuals returns the users that user follows and that follow user.
func (g *Graph) Mutuals(ctx context.Context, user fg.UserID, req fg.PageRequest) (fg.SetPage, error) {
	q, err := req.Query(fg.ListMutuals, user)
	if err != nil {
		return fg.SetPage{}, err
	}
	return g.setQuery(ctx, fg.ListMutuals, q, side{user, false}, side{user, true})
}

// CommonFollowing returns the users that both user and other follow.
func (g *Graph) CommonFollowing(ctx context.Context, user, other fg.UserID, req fg.PageRequest) (fg.SetPage, error) {
	q, err := req.Query(fg.ListCommonFollowing, user, other)
	if err != nil {
		return fg.SetPage{}, err
	}
	return g.setQuery(ctx, fg.ListCommonFollowing, q, side{user, false}, side{other, false})
}

// CommonFollowers returns the users that follow both user and other.
func (g *Graph) CommonFollowers(ctx context.Context, user, other fg.UserID, req fg.PageRequest) (fg.SetPage, error) {
	q, err := req.Query(fg.ListCommonFollowers, user, other)
	if err != nil {
		return fg.SetPage{}, err
	}
	return g.setQuery(ctx, fg.ListCommonFollowers, q, side{user, true}, side{other, true})
}

// KnownFollowers returns the users that user follows and that follow target.
func (g *Graph) KnownFollowers(ctx context.Context, user, target fg.UserID, req fg.PageRequest) (fg.SetPage, error) {
	q, err := req.Query(fg.ListKnownFollowers, user, target)
	if err != nil {
		return fg.SetPage{}, err
	}
	return g.setQuery(ctx, fg.ListKnownFollowers, q, side{user, false}, side{target, true})
}

// setQuery answers q, the intersection of p (the paging side) and o.
func (g *Graph) setQuery(ctx context.Context, op string, q fg.PageQuery, p, o side) (fg.SetPage, error) {
	sp, err := g.setPage(ctx, q, p, o)
	if err != nil {
		return fg.SetPage{}, errs.Wrap(op, err)
	}
	return sp, nil
}

func (g *Graph) setPage(ctx context.Context, q fg.PageQuery, p, o side) (fg.SetPage, error) {
	cs, err := g.readCounters(ctx, []fg.UserID{p.user, o.user})
	if err != nil {
		return fg.SetPage{}, err
	}
	np, no := p.size(cs[0]), o.size(cs[1])
	if np == 0 || no == 0 || !cs[0].state.Active() || !cs[1].state.Active() { // an inactive user: as for one with no edges
		return fg.SetPage{}, nil
	}
	var keys []fg.Key // every member, when o was walked whole
	count, ok := g.memo.get(q.Scope, cs[0].stamp, cs[1].stamp)
	if !ok {
		if no < np {
			keys, err = g.collect(ctx, o, p)
			count = int64(len(keys))
		} else {
			count, err = g.count(ctx, p, o)
		}
		if err != nil {
			return fg.SetPage{}, err
		}
		if err := g.remember(ctx, q.Scope, p.user, o.user, cs[0].stamp, cs[1].stamp, count); err != nil {
			return fg.SetPage{}, err
		}
	}
	if count == 0 {
		return fg.SetPage{}, nil
	}
	if keys == nil && (int64(q.Size)+1)*np/count > no {
		if keys, err = g.collect(ctx, o, p); err != nil {
			return fg.SetPage{}, err
		}
	}
	var page fg.Page
	if keys != nil {
		page = q.PageOf(keys)
	} else if page, err = g.walk(ctx, q, p, o); err != nil {
		return fg.SetPage{}, err
	}
	return fg.SetPage{Count: count, Entries: page.Entries, Next: page.Next}, nil
}

// walk returns the page of q: p's entries after the cursor that are in o.
func (g *Graph) walk(ctx context.Context, q fg.PageQuery, p, o side) (fg.Page, error) {
	after := q.After
	chunk := min(max(2*(q.Size+1), 64), lists.RangeBatch)
	var es []fg.Entry
	for {
		got, err := g.lists.Range(ctx, p.user, p.key(), after, chunk)
		if err != nil || len(got) == 0 {
			return q.Page(es), err
		}
		scores, err := g.lists.Probe(ctx, o.user, wire.Members(got), o.key())
		if err != nil {
			return fg.Page{}, err
		}
		for i, e := range got {
			if scores[0][i] >= 0 {
				if es = append(es, e); len(es) > q.Size {
					return q.Page(es), nil
				}
			}
		}
		if len(got) < chunk {
			return q.Page(es), nil
		}
		last := got[len(got)-1].Key()
		after = &last
		chunk = min(2*chunk, lists.RangeBatch)
	}
}

// collect walks w whole and returns the keys of its members that are in
// s, with the times s gives them.
func (g *Graph) collect(ctx context.Context, w, s side) ([]fg.Key, error) {
	var (
		keys  []fg.Key
		after *fg.Key
	)
	for {
		got, err := g.lists.Range(ctx, w.user, w.key(), after, lists.RangeBatch)
		if err != nil || len(got) == 0 {
			return keys, err
		}
		scores, err := g.lists.Probe(ctx, s.user, wire.Members(got), s.key())
		if err != nil {
			return nil, err
		}
		for i, e := range got {
			if ms := scores[0][i]; ms >= 0 {
				keys = append(keys, fg.Key{Millis: ms, ID: e.ID})
			}
		}
		if len(got) < lists.RangeBatch {
			return keys, nil
		}
		last := got[len(got)-1].Key()
		after = &last
	}
}

// count returns how many members of s are in o, walking s's chunks by
// rank, and made again when s splits under the walk (package lists).
func (g *Graph) count(ctx context.Context, s, o side) (int64, error) {
	var n int64
	err := lists.Retry(func() (err error) {
		n, err = g.countView(ctx, s, o, g.lists.View(s.user))
		return err
	})
	return n, err
}

// countView is count for the chunks of view v of s, or lists.ErrViewChanged.
func (g *Graph) countView(ctx context.Context, s, o side, v lists.View) (int64, error) {
	var n int64
	for _, sk := range g.lists.ChunkKeys(s.user, v, s.key()) {
		for start := 0; ; start += countGroup * lists.RangeBatch {
			res, changed, err := g.lists.ReadViews(ctx, []fg.UserID{s.user}, []lists.View{v}, func() rueidis.Commands {
				ranges := make(rueidis.Commands, countGroup)
				for j := range ranges {
					from := start + j*lists.RangeBatch
					ranges[j] = g.c.B().Zrange().Key(sk).Min(strconv.Itoa(from)).Max(strconv.Itoa(from + lists.RangeBatch - 1)).Build()
				}
				return ranges
			})
			switch {
			case err != nil:
				return 0, err
			case changed:
				return 0, lists.ErrViewChanged
			}
			var ms []string
			full := true
			for _, r := range res {
				got, err := r.AsStrSlice()
				if err != nil {
					return 0, err
				}
				ms = append(ms, got...)
				full = len(got) == lists.RangeBatch
			}
			if len(ms) > 0 {
				scores, err := g.lists.Probe(ctx, o.user, ms, o.key())
				if err != nil {
					return 0, err
				}
				for _, sc := range scores[0] {
					if sc >= 0 {
						n++
					}
				}
			}
			if !full {
				break
			}
		}
	}
	return n, nil
}

// remember keeps count as the answer of the set query scope while users a
// and b have stamps sa and sb, if they still have them after the walk:
// a count taken while either changed is not kept.
func (g *Graph) remember(ctx context.Context, scope string, a, b fg.UserID, sa, sb, count int64) error {
	res, err := g.guard.Read(ctx, func() rueidis.Commands {
		return rueidis.Commands{g.c.B().Hget().Key(g.ks.User(a, layout.Counters)).Field("st").Build(),
			g.c.B().Hget().Key(g.ks.User(b, layout.Counters)).Field("st").Build()}
	})
	if err != nil {
		return err
	}
	var now [2]int64
	for i, r := range res {
		n, err := r.AsInt64()
		if err != nil && !rueidis.IsRedisNil(err) {
			return err
		}
		now[i] = n
	}
	if now == [2]int64{sa, sb} {
		g.memo.put(scope, sa, sb, count)
	}
	return nil
}

// memo holds the counts of set queries, each with the stamps of the two
// users it was counted at. A count is valid while neither user changed:
// each change of a user's sets increments the user's stamp. Each shard
// holds up to memoShardSize queries and is emptied when full.
type memo struct {
	seed   maphash.Seed
	once   sync.Once
	shards [64]memoShard
}

const memoShardSize = 4096

type memoShard struct {
	mu sync.Mutex
	m  map[string]memoEntry
	_  [16]byte
}

type memoEntry struct{ sa, sb, count int64 }

func (m *memo) shard(scope string) *memoShard {
	m.once.Do(func() { m.seed = maphash.MakeSeed() })
	return &m.shards[maphash.String(m.seed, scope)>>58]
}

func (m *memo) get(scope string, sa, sb int64) (int64, bool) {
	sh := m.shard(scope)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e, ok := sh.m[scope]
	if !ok || e.sa != sa || e.sb != sb {
		return 0, false
	}
	return e.count, true
}

// clear forgets every count: after a rebuild, stamps start again and
// could meet those of counts taken before.
func (m *memo) clear() {
	for i := range m.shards {
		sh := &m.shards[i]
		sh.mu.Lock()
		sh.m = nil
		sh.mu.Unlock()
	}
}

func (m *memo) put(scope string, sa, sb, count int64) {
	sh := m.shard(scope)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.m == nil || len(sh.m) >= memoShardSize {
		sh.m = make(map[string]memoEntry)
	}
	sh.m[scope] = memoEntry{sa, sb, count}
}
