package rebuild

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/rueidis"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/redisgraph/internal/layout"
	"github.com/followgraph/followgraph/redisgraph/internal/lists"
	"github.com/followgraph/followgraph/redisgraph/internal/scripts"
	"github.com/followgraph/followgraph/redisgraph/internal/wire"
)

// edgeRec is one copy's state of an edge of a side, by the other user.
type edgeRec struct {
	other fg.UserID
	EdgeState
	hidden bool // read in Redis as a hidden edge of the archive step: on, hidden by an account state
}

// byOther orders edgeRecs by the other user.
func byOther(a, b edgeRec) int { return cmp.Compare(a.other, b.other) }

// redisUser is what Redis holds of a user: both sides of the follows,
// the sides of the other kinds, the private setting, the flags and the
// census.
type redisUser struct {
	sides          [2][]edgeRec // layout.Following, layout.Followers; by other user
	card, counters [2]int64     // the sizes of the sets, and the counters (nout, nin)
	clock          fg.Version

	links                  [][]edgeRec // by linkSides, by other user
	linkCard, linkCounters []int64     // by linkSides
	private                EdgeState
	flags                  map[fg.UserID]int // rf: the flags with each other user
}

// readUser reads every side of u, with their versions, the flags and the
// census: first the census, the first 1000 entries of each set and a
// first HSCAN of each versions hash (and ZSCAN of the flags) in one round
// trip, then what is left of each in bounded steps.
//
// A user's lists in chunks are read chunk by chunk, for the view of its
// chunks read before; the read is made again when the view read after
// differs (a split moved entries under it: lists.WalkViews).
func (g *Graph) readUser(ctx context.Context, u fg.UserID) (redisUser, error) {
	var red redisUser
	err := g.lists.WalkViews(ctx, u, func(v lists.View) (err error) {
		red, err = g.readUserView(ctx, u, v)
		return err
	})
	return red, err
}

// readUserView is readUser for the chunks of view v.
func (g *Graph) readUserView(ctx context.Context, u fg.UserID, v lists.View) (redisUser, error) {
	red := redisUser{links: make([][]edgeRec, len(linkSides)), linkCard: make([]int64, len(linkSides)), linkCounters: make([]int64, len(linkSides))}
	pairs := [][2]layout.Key{{layout.Out, layout.OutVersions}, {layout.In, layout.InVersions}} // set, versions hash
	for _, l := range linkSides {
		pairs = append(pairs, [2]layout.Key{l.Set, l.Versions})
	}
	census := scripts.CensusKeys{H: g.ks.User(u, layout.Counters)}
	for i, s := range layout.Sides {
		census.Sets[i] = g.ks.User(u, s.Set)
	}
	censusCall := scripts.Census.Call(census, scripts.NoArgs{})
	flags := g.lists.ChunkKeys(u, v, layout.Flags)
	cmds := rueidis.Commands{g.lua.Cmd(censusCall)}
	for _, f := range flags {
		cmds = append(cmds, g.c.B().Zscan().Key(f).Cursor(0).Count(lists.RangeBatch).Build())
	}
	for _, p := range pairs {
		sets, vers := g.lists.ChunkKeys(u, v, p[0]), g.lists.ChunkKeys(u, v, p[1])
		for j := range sets {
			cmds = append(cmds,
				g.c.B().Zrange().Key(sets[j]).Min("0").Max(strconv.Itoa(lists.RangeBatch-1)).Rev().Withscores().Build(),
				g.c.B().Hscan().Key(vers[j]).Cursor(0).Count(lists.RangeBatch).Build())
		}
	}
	res := g.c.DoMulti(ctx, cmds...)
	if err := red.parseCensus(u, g.lua.Fix(ctx, censusCall, res[0])); err != nil {
		return red, err
	}
	res = res[1:]
	red.flags = map[fg.UserID]int{}
	for _, f := range flags {
		got, err := g.readFlags(ctx, f, res[0])
		if err != nil {
			return red, err
		}
		maps.Copy(red.flags, got)
		res = res[1:]
	}
	for i, p := range pairs {
		sets, vers := g.lists.ChunkKeys(u, v, p[0]), g.lists.ChunkKeys(u, v, p[1])
		var side []edgeRec
		for j := range sets {
			got, err := g.readSide(ctx, sets[j], vers[j], res[0], res[1])
			if err != nil {
				return red, err
			}
			side = append(side, got...)
			res = res[2:]
		}
		slices.SortFunc(side, byOther)
		if i < 2 {
			red.sides[i] = side
		} else {
			red.links[i-2] = side
		}
	}
	return red, nil
}

// parseCensus reads the reply of scripts.Census for user u into red.
func (red *redisUser) parseCensus(u fg.UserID, r rueidis.RedisResult) error {
	census, err := r.ToArray()
	if err == nil && len(census) != 3+2*len(layout.Sides) {
		err = fmt.Errorf("census script returned %d values", len(census))
	}
	if err != nil {
		return err
	}
	counter := func(m rueidis.RedisMessage) (int64, error) {
		s, err := m.ToString()
		if err != nil {
			return 0, nil // no such field
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("counter %q of user %d: %w", s, u, err)
		}
		return n, nil
	}
	for i := range layout.Sides {
		card, _ := census[3+2*i].AsInt64()
		n, err := counter(census[4+2*i])
		if err != nil {
			return err
		}
		side := layout.Sides[i]
		for j, f := range followSides {
			if f == side {
				red.card[j], red.counters[j] = card, n
			}
		}
		for j, l := range linkSides {
			if l == side {
				red.linkCard[j], red.linkCounters[j] = card, n
			}
		}
	}
	if s, err := census[0].ToString(); err == nil {
		if red.clock, err = wire.ParseVersion(s); err != nil {
			return fmt.Errorf("clock of user %d: %w", u, err)
		}
	}
	if s, err := census[2].ToString(); err == nil {
		if red.private.Version, err = wire.ParseVersion(s); err != nil {
			return fmt.Errorf("private setting of user %d: %w", u, err)
		}
		p, _ := census[1].ToString()
		red.private.Live = p == "1"
	}
	return nil
}

// readFlags reads the flags set key whole by ZSCAN, from the reply of its
// first step.
func (g *Graph) readFlags(ctx context.Context, key string, first rueidis.RedisResult) (map[fg.UserID]int, error) {
	next := func(cursor uint64) rueidis.Completed {
		return g.c.B().Zscan().Key(key).Cursor(cursor).Count(lists.RangeBatch).Build()
	}
	return scanAll(ctx, g, key, "flags", first, next, strconv.Atoi)
}

// readSide reads one side whole, by other user: the live members of the
// sorted set set, each with the version of versions (its follow time when
// versions has none), and the tombstones of versions. first and scan are
// the replies of the first ZRANGE of set and the first HSCAN of versions;
// the rest is read in steps of lists.RangeBatch.
func (g *Graph) readSide(ctx context.Context, set, versions string, first, scan rueidis.RedisResult) ([]edgeRec, error) {
	live, err := wire.Entries(set, first)
	if err != nil {
		return nil, err
	}
	for n := len(live); n == lists.RangeBatch; {
		last := live[len(live)-1].Key()
		more, err := g.lists.RangeKey(ctx, set, &last, lists.RangeBatch)
		if err != nil {
			return nil, err
		}
		live, n = append(live, more...), len(more)
	}
	vs, err := g.readVersions(ctx, versions, scan)
	if err != nil {
		return nil, err
	}
	side := make([]edgeRec, 0, len(live)+len(vs))
	for _, e := range live {
		v, ok := vs[e.ID]
		if ok {
			delete(vs, e.ID)
		} else {
			v = fg.VersionAt(e.Since.UnixMilli())
		}
		side = append(side, edgeRec{other: e.ID, EdgeState: EdgeState{v, true}})
	}
	for id, v := range vs {
		// A hidden edge of the archive step (package jobs) is an edge on
		// as stored, hidden by an account state: what a source that walks
		// stored edges (memgraph's) gives for it.
		hidden := v&hiddenBit != 0
		side = append(side, edgeRec{other: id, EdgeState: EdgeState{v &^ hiddenBit, hidden}, hidden: hidden})
	}
	slices.SortFunc(side, byOther)
	// A member read twice (the set changed between two pages) is kept once.
	return slices.CompactFunc(side, func(a, b edgeRec) bool { return a.other == b.other }), nil
}

// readVersions reads the versions hash key whole by HSCAN, from the reply
// of its first step. A version stored hidden (lua/archive.lua: 'h' and
// the version) has hiddenBit set.
func (g *Graph) readVersions(ctx context.Context, key string, first rueidis.RedisResult) (map[fg.UserID]fg.Version, error) {
	next := func(cursor uint64) rueidis.Completed {
		return g.c.B().Hscan().Key(key).Cursor(cursor).Count(lists.RangeBatch).Build()
	}
	return scanAll(ctx, g, key, "a version", first, next, func(s string) (fg.Version, error) {
		if hidden, ok := strings.CutPrefix(s, "h"); ok {
			v, err := wire.ParseVersion(hidden)
			return v | hiddenBit, err
		}
		return wire.ParseVersion(s)
	})
}

// hiddenBit flags a version readVersions read as hidden: versions use 63
// bits (followgraph.Version).
const hiddenBit = fg.Version(1) << 63

// scanAll reads key whole by the scan whose first step replied first and
// whose next steps next builds: each entry a member and a value, which
// parse reads (what names the value in the error of a bad entry).
func scanAll[V any](ctx context.Context, g *Graph, key, what string, first rueidis.RedisResult,
	next func(cursor uint64) rueidis.Completed, parse func(string) (V, error)) (map[fg.UserID]V, error) {
	values := map[fg.UserID]V{}
	scan, err := first.AsScanEntry()
	for {
		if err != nil {
			return nil, err
		}
		for j := 0; j+1 < len(scan.Elements); j += 2 {
			id, ok := wire.MemberID(scan.Elements[j])
			v, err := parse(scan.Elements[j+1])
			if !ok || err != nil {
				return nil, fmt.Errorf("entry %q of %s is not an id and %s", scan.Elements[j:j+2], key, what)
			}
			values[id] = v
		}
		if scan.Cursor == 0 {
			return values, nil
		}
		scan, err = g.c.Do(ctx, next(scan.Cursor)).AsScanEntry()
	}
}
