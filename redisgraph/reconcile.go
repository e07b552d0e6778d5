package redisgraph

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"
	"golang.org/x/time/rate"

	fg "github.com/followgraph/followgraph"
)

// DiffKind is what differs between Redis and the expected graph.
type DiffKind uint8

const (
	// DiffMissing: the expected graph has the edge live, Redis does not.
	DiffMissing DiffKind = iota + 1
	// DiffExtra: Redis has the edge live, the expected graph does not.
	DiffExtra
	// DiffSince: both have the edge live, at different versions (follow
	// times, or only the counter part).
	DiffSince
	// DiffTombstone: neither has the edge live, but Redis lacks the
	// expected tombstone or holds an older one, so that an older follow
	// replayed late could bring the edge back on that side.
	DiffTombstone
	// DiffCounter: a counter (nout, nin) is not the size of the set it
	// counts.
	DiffCounter
	// DiffClock: the user's clock is behind the expected version of one
	// of their edges, so a change could get a version below the edge's.
	DiffClock
	// DiffAhead: Redis holds the edge in a state newer than the expected
	// graph's and than the horizon: a change the expected graph has not
	// seen. Reported, never repaired, and not counted as a difference.
	DiffAhead
)

var diffKinds = [...]string{DiffMissing: "missing", DiffExtra: "extra", DiffSince: "since",
	DiffTombstone: "tombstone", DiffCounter: "counter", DiffClock: "clock", DiffAhead: "ahead"}

func (k DiffKind) String() string {
	if int(k) < len(diffKinds) && diffKinds[k] != "" {
		return diffKinds[k]
	}
	return fmt.Sprintf("diff(%d)", uint8(k))
}

// EdgeState is what one copy holds of an edge: the version of its last
// change (0: no record of the edge at all) and whether it is live.
type EdgeState struct {
	Version fg.Version
	Live    bool
}

func (s EdgeState) String() string {
	switch {
	case s.Version == 0:
		return "none"
	case s.Live:
		return fmt.Sprintf("following since %s (version %016x)", s.Version.Time().Format(fg.TimeFormat), uint64(s.Version))
	}
	return fmt.Sprintf("unfollowed at %s (version %016x)", s.Version.Time().Format(fg.TimeFormat), uint64(s.Version))
}

// Diff is one difference between Redis and the expected graph, on one
// side of one user's keys.
type Diff struct {
	User  fg.UserID
	Side  Side // SideFollowing for DiffClock
	Kind  DiffKind
	Other fg.UserID // the edge's other user; 0 for DiffCounter and DiffClock

	// The edge in the expected graph and in Redis (the edge kinds); for
	// DiffClock, the greatest expected version of the user's edges (on
	// their following side) and the clock.
	Expected, Found EdgeState
	// The counter the side should have once repaired, and the one Redis
	// holds (DiffCounter).
	ExpectedCount, FoundCount int64

	// Fixed is whether Reconcile repaired it: false without Fix, for
	// DiffAhead, or when Redis changed the edge again before the repair
	// (a newer change, which the repair left alone).
	Fixed bool
}

func (d Diff) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "user %d %s", d.User, d.Side)
	switch d.Kind {
	case DiffCounter:
		fmt.Fprintf(&b, ": counter: expected %d, found %d", d.ExpectedCount, d.FoundCount)
	case DiffClock:
		fmt.Fprintf(&b, ": clock: expected at least %016x, found %016x", uint64(d.Expected.Version), uint64(d.Found.Version))
	default:
		fmt.Fprintf(&b, " %d: %s: expected %s, found %s", d.Other, d.Kind, d.Expected, d.Found)
	}
	if d.Fixed {
		b.WriteString(" (fixed)")
	}
	return b.String()
}

// ReconcileOptions tunes Reconcile.
type ReconcileOptions struct {
	// Fix repairs each difference but DiffAhead.
	Fix bool
	// Rate bounds the repairs per second (0: no bound), with bursts of up
	// to a second's worth.
	Rate float64
	// Horizon is a time up to which the expected graph is known to hold
	// every change: the time it was read, less the clock skew of the API
	// nodes, once the outbox had been drained into the log. A state of an
	// edge in Redis newer than the expected graph's is a change the
	// expected graph has not seen (DiffAhead) if its version is after
	// Horizon, and wrong otherwise. The zero Horizon takes every newer
	// state for a change not yet seen: the safe choice while the service
	// writes, which leaves a wrong state that looks newer in place.
	Horizon time.Time
	// Report, if set, is called with each difference, from one goroutine
	// at a time, after its repair.
	Report func(Diff)
	// Concurrency is how many users are compared at once (default 8).
	Concurrency int
}

// ReconcileStats says what Reconcile found.
type ReconcileStats struct {
	Users int64              // users compared: those of the expected graph, and those only Redis has keys of
	Edges int64              // edges compared, counted on each side
	Diffs map[DiffKind]int64 // differences by kind, DiffAhead included
	Fixed int64              // differences repaired
}

// Differences returns how many differences were found, not counting
// DiffAhead (which are not faults).
func (s ReconcileStats) Differences() int64 {
	var n int64
	for k, c := range s.Diffs {
		if k != DiffAhead {
			n += c
		}
	}
	return n
}

// Reconcile compares Redis with src, the graph Redis is expected to hold,
// and reports each difference; with opts.Fix it repairs them. It compares
// every user of src and every user that has keys under the prefix in
// Redis (found by SCAN, on every master of a Cluster): both sides of each
// (the members and their versions, hence follow times, and tombstones),
// the counters against the sizes of their sets, and the clock against the
// versions of the user's edges.
//
// Repairs are version-aware: a repair writes src's state of the edge only
// where Redis does not hold a newer one (see ReconcileOptions.Horizon), in
// one atomic step that reads the edge again (lua/bulk.lua), so a change
// the service makes meanwhile is never undone; the counters are then set
// to the sizes of the sets, and the clock raised.
//
// Redis is read in bounded commands (ZRANGE of 1000 entries at a time by
// keyset, as the lists are read; HSCAN; one small script for the counters),
// a user at a time per worker, so the service's commands are not held up.
// While the service writes, the sides of a user are not read in one
// instant, so a change made during the read may show as a difference;
// repairs read again and leave it alone.
//
// It returns EUnavailable when Redis fails, with the stats so far.
func (g *Graph) Reconcile(ctx context.Context, src Source, opts ReconcileOptions) (ReconcileStats, error) {
	r := &reconciler{g: g, src: src, opts: opts, stats: ReconcileStats{Diffs: map[DiffKind]int64{}}}
	if r.opts.Concurrency <= 0 {
		r.opts.Concurrency = 8
	}
	if !opts.Horizon.IsZero() {
		r.horizon = fg.VersionAt(opts.Horizon.UnixMilli()+1) - 1 // the end of its millisecond
	}
	r.chunk = DefaultBulkChunk
	if opts.Rate > 0 {
		burst := max(1, int(opts.Rate))
		r.limit = rate.NewLimiter(rate.Limit(opts.Rate), burst)
		r.chunk = min(r.chunk, burst)
	}

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	users := make(chan fg.UserID, 4*r.opts.Concurrency)
	var wg sync.WaitGroup
	for range r.opts.Concurrency {
		wg.Go(func() {
			for u := range users {
				if ctx.Err() != nil {
					continue // drain
				}
				if err := r.user(ctx, u); err != nil {
					cancel(err)
				}
			}
		})
	}
	err := r.produce(ctx, users)
	close(users)
	wg.Wait()
	if err == nil {
		err = context.Cause(ctx)
	}
	r.stats.Users, r.stats.Edges = r.users.Load(), r.edges.Load()
	if err != nil {
		return r.stats, fmt.Errorf("redisgraph: reconcile: %w", err)
	}
	return r.stats, nil
}

// reconciler is one run of Reconcile.
type reconciler struct {
	g       *Graph
	src     Source
	opts    ReconcileOptions
	horizon fg.Version
	limit   *rate.Limiter // nil: no bound
	chunk   int           // edges a repair call writes at most

	users, edges atomic.Int64
	mu           sync.Mutex // guards stats.Diffs and stats.Fixed, and serializes opts.Report
	stats        ReconcileStats
}

// produce sends the users to compare: those of src, then those that only
// Redis has keys of.
func (r *reconciler) produce(ctx context.Context, users chan<- fg.UserID) error {
	send := func(u fg.UserID) bool {
		select {
		case users <- u:
			return true
		case <-ctx.Done():
			return false
		}
	}
	var known []fg.UserID
	for u := range r.src.Users() {
		known = append(known, u)
		if !send(u) {
			return nil
		}
	}
	slices.Sort(known)
	seen := map[fg.UserID]bool{}
	return r.g.scanUsers(ctx, func(u fg.UserID) bool {
		if _, ok := slices.BinarySearch(known, u); ok || seen[u] {
			return true
		}
		seen[u] = true
		return send(u)
	})
}

// scanUsers calls fn with the user of each key of a user under the
// prefix, on every master (a user may come several times), until fn
// returns false.
func (g *Graph) scanUsers(ctx context.Context, fn func(fg.UserID) bool) error {
	pattern := globEscape(g.prefix) + ":{*"
	head := g.prefix + ":{"
	for _, node := range g.c.Nodes() {
		role, err := node.Do(ctx, node.B().Role().Build()).ToArray()
		if err != nil || len(role) == 0 {
			return unavailable("reconcile: role", errors.Join(err, errors.New("empty ROLE reply")))
		}
		if r, _ := role[0].ToString(); r != "master" {
			continue
		}
		for cursor := uint64(0); ; {
			e, err := node.Do(ctx, node.B().Scan().Cursor(cursor).Match(pattern).Count(1000).Build()).AsScanEntry()
			if err != nil {
				return unavailable("reconcile: scan", err)
			}
			for _, key := range e.Elements {
				rest, ok := strings.CutPrefix(key, head)
				id, _, ok2 := strings.Cut(rest, "}:")
				u, err := fg.ParseUserID(id)
				if ok && ok2 && err == nil && !fn(u) {
					return nil
				}
			}
			if cursor = e.Cursor; cursor == 0 {
				break
			}
		}
	}
	return nil
}

// globEscape escapes the characters special in a SCAN MATCH pattern.
func globEscape(s string) string {
	var b strings.Builder
	for _, c := range []byte(s) {
		if strings.IndexByte(`*?[]\`, c) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(c)
	}
	return b.String()
}

// edgeRec is one copy's state of an edge of a side, by the other user.
type edgeRec struct {
	other fg.UserID
	EdgeState
}

// redisUser is what Redis holds of a user: both sides and the census.
type redisUser struct {
	sides          [2][]edgeRec // SideFollowing, SideFollowers; by other user
	card, counters [2]int64
	clock          fg.Version
}

// user compares user u, repairs if asked to, and reports.
func (r *reconciler) user(ctx context.Context, u fg.UserID) error {
	red, err := r.g.readUser(ctx, u)
	if err != nil {
		return unavailable("reconcile: read", err)
	}
	r.users.Add(1)
	var diffs []Diff
	// The greatest version of u's edges in src: the clock must be at least
	// that. (Not Redis's: a legitimate change ticks the clock, so a state
	// in Redis above the clock is garbage, and may be far in the future.)
	var maxOut fg.Version
	for i, s := range []Side{SideFollowing, SideFollowers} {
		var exp []edgeRec
		for e := range s.edges(r.src, u) {
			exp = append(exp, edgeRec{s.other(e), stateOf(e)})
		}
		slices.SortFunc(exp, func(a, b edgeRec) int { return cmp.Compare(a.other, b.other) })
		got := red.sides[i]
		var repairs []repairEdge
		finalLive := int64(0)
		n := 0
		for a, b := 0, 0; a < len(exp) || b < len(got); n++ {
			var want, have edgeRec
			switch {
			case b == len(got) || a < len(exp) && exp[a].other < got[b].other:
				want = exp[a]
				have = edgeRec{other: want.other}
				a++
			case a == len(exp) || got[b].other < exp[a].other:
				have = got[b]
				want = edgeRec{other: have.other}
				b++
			default:
				want, have = exp[a], got[b]
				a++
				b++
			}
			if s == SideFollowing {
				maxOut = max(maxOut, want.Version)
			}
			kind := classify(want.EdgeState, have.EdgeState, r.horizon)
			if kind == DiffAhead {
				if have.Live {
					finalLive++
				}
			} else if want.Live {
				finalLive++
			}
			if kind == 0 {
				continue
			}
			diffs = append(diffs, Diff{User: u, Side: s, Kind: kind, Other: want.other, Expected: want.EdgeState, Found: have.EdgeState})
			if kind != DiffAhead {
				repairs = append(repairs, repairEdge{newBulkEdge(want.other, want.EdgeState), len(diffs) - 1})
			}
		}
		r.edges.Add(int64(n))
		fixSide := len(repairs) > 0
		var extra []int // counter and clock diffs, fixed by the side's last call
		if red.counters[i] != red.card[i] {
			diffs = append(diffs, Diff{User: u, Side: s, Kind: DiffCounter, ExpectedCount: finalLive, FoundCount: red.counters[i]})
			extra, fixSide = append(extra, len(diffs)-1), true
		}
		if s == SideFollowing && red.clock < maxOut {
			diffs = append(diffs, Diff{User: u, Side: s, Kind: DiffClock, Expected: EdgeState{Version: maxOut}, Found: EdgeState{Version: red.clock}})
			extra, fixSide = append(extra, len(diffs)-1), true
		}
		if r.opts.Fix && fixSide {
			if err := r.repair(ctx, u, s, repairs, extra, maxOut, diffs); err != nil {
				return err
			}
		}
	}
	r.report(diffs)
	return nil
}

// classify returns the kind of difference between want, the expected
// state of an edge, and have, Redis's, or 0 when they agree. Redis's state
// is ahead when it is newer than the expected one and than the horizon.
func classify(want, have EdgeState, horizon fg.Version) DiffKind {
	switch {
	case want.Live == have.Live && (!want.Live || want.Version == have.Version):
		if !want.Live && have.Version < want.Version {
			return DiffTombstone
		}
		return 0
	case have.Version > want.Version && have.Version > horizon:
		return DiffAhead
	case want.Live && have.Live:
		return DiffSince
	case want.Live:
		return DiffMissing
	}
	return DiffExtra
}

// repairEdge is an edge a repair writes, and the index in diffs of the
// difference it fixes.
type repairEdge struct {
	e    bulkEdge
	diff int
}

// repair writes the expected states of the edges of side s of user u that
// differ (repairs), in calls of up to r.chunk edges, each waiting for as
// many tokens; the last call also sets the counter and the clock, fixing
// diffs[extra]. It marks what it fixed.
func (r *reconciler) repair(ctx context.Context, u fg.UserID, s Side, repairs []repairEdge, extra []int, clk fg.Version, diffs []Diff) error {
	if s != SideFollowing {
		clk = 0
	}
	for first := true; first || len(repairs) > 0; first = false {
		n := min(len(repairs), r.chunk)
		call := repairs[:n]
		repairs = repairs[n:]
		last := len(repairs) == 0
		// In the order bulkArgs gives the edges, which the flags follow.
		slices.SortStableFunc(call, func(a, b repairEdge) int { return cmp.Compare(stateOrder(a.e.state), stateOrder(b.e.state)) })
		es := make([]bulkEdge, n)
		for j, it := range call {
			es[j] = it.e
		}
		tokens := n
		if last {
			tokens += len(extra)
		}
		if r.limit != nil && tokens > 0 {
			if err := r.limit.WaitN(ctx, min(tokens, r.limit.Burst())); err != nil {
				return err
			}
		}
		res, err := scriptBulk.exec(ctx, r.g.c, r.g.sideKeys(u, s), bulkArgs(s, es, versionHex(r.horizon), clk)).ToArray()
		if err == nil && len(res) < 3 {
			err = fmt.Errorf("bulk script returned %d values", len(res))
		}
		if err != nil {
			return unavailable("reconcile: repair", err)
		}
		flags, err := res[2].ToString()
		if err != nil || len(flags) != n {
			return unavailable("reconcile: repair", fmt.Errorf("bulk script returned flags %q for %d edges: %w", flags, n, err))
		}
		for j, it := range call {
			diffs[it.diff].Fixed = flags[j] == '1'
		}
		if last {
			for _, k := range extra {
				diffs[k].Fixed = true
			}
		}
	}
	return nil
}

// report counts diffs and passes them to opts.Report.
func (r *reconciler) report(diffs []Diff) {
	if len(diffs) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, d := range diffs {
		r.stats.Diffs[d.Kind]++
		if d.Fixed {
			r.stats.Fixed++
		}
		if r.opts.Report != nil {
			r.opts.Report(d)
		}
	}
}

// readUser reads both sides of u, with their versions, and the census:
// first the census, the first 1000 entries of each set and a first HSCAN
// of each versions hash in one round trip, then what is left of each in
// bounded steps.
func (g *Graph) readUser(ctx context.Context, u fg.UserID) (redisUser, error) {
	var red redisUser
	keys := [2][]string{g.sideKeys(u, SideFollowing), g.sideKeys(u, SideFollowers)} // set, versions hash, h
	censusKeys := []string{keys[0][0], keys[1][0], keys[0][2]}
	cmds := rueidis.Commands{scriptCensus.cmd(g.c, censusKeys, nil)}
	for _, k := range keys {
		cmds = append(cmds,
			g.c.B().Zrange().Key(k[0]).Min("0").Max(strconv.Itoa(rangeChunk-1)).Rev().Withscores().Build(),
			g.c.B().Hscan().Key(k[1]).Cursor(0).Count(rangeChunk).Build())
	}
	res := g.c.DoMulti(ctx, cmds...)
	census, err := scriptCensus.fix(ctx, g.c, res[0], censusKeys, nil).ToArray()
	if err == nil && len(census) < 5 {
		err = fmt.Errorf("census script returned %d values", len(census))
	}
	if err != nil {
		return red, err
	}
	for i := range 2 {
		red.card[i], _ = census[i].AsInt64()
		if s, err := census[2+i].ToString(); err == nil {
			if red.counters[i], err = strconv.ParseInt(s, 10, 64); err != nil {
				return red, fmt.Errorf("counter %q of user %d: %w", s, u, err)
			}
		}
	}
	if s, err := census[4].ToString(); err == nil {
		if red.clock, err = parseVersionString(s); err != nil {
			return red, fmt.Errorf("clock of user %d: %w", u, err)
		}
	}
	for i, k := range keys {
		live, err := parseEntries(k[0], res[1+2*i])
		if err != nil {
			return red, err
		}
		for n := len(live); n == rangeChunk; {
			last := live[len(live)-1].Key()
			more, err := g.rangeAfter(ctx, k[0], &last, rangeChunk)
			if err != nil {
				return red, err
			}
			live, n = append(live, more...), len(more)
		}
		versions := map[fg.UserID]fg.Version{}
		scan, err := res[2+2*i].AsScanEntry()
		for {
			if err != nil {
				return red, err
			}
			for j := 0; j+1 < len(scan.Elements); j += 2 {
				id, ok := memberID(scan.Elements[j])
				v, err := parseVersionString(scan.Elements[j+1])
				if !ok || err != nil {
					return red, fmt.Errorf("entry %q of %s is not an id and a version", scan.Elements[j:j+2], k[1])
				}
				versions[id] = v
			}
			if scan.Cursor == 0 {
				break
			}
			scan, err = g.c.Do(ctx, g.c.B().Hscan().Key(k[1]).Cursor(scan.Cursor).Count(rangeChunk).Build()).AsScanEntry()
		}
		side := make([]edgeRec, 0, len(live)+len(versions))
		for _, e := range live {
			v, ok := versions[e.ID]
			if ok {
				delete(versions, e.ID)
			} else {
				v = fg.VersionAt(e.Since.UnixMilli())
			}
			side = append(side, edgeRec{e.ID, EdgeState{v, true}})
		}
		for id, v := range versions {
			side = append(side, edgeRec{id, EdgeState{v, false}})
		}
		slices.SortFunc(side, func(a, b edgeRec) int { return cmp.Compare(a.other, b.other) })
		// A member read twice (the set changed between two pages) is kept once.
		red.sides[i] = slices.CompactFunc(side, func(a, b edgeRec) bool { return a.other == b.other })
	}
	return red, nil
}
