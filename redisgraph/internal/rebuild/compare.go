package rebuild

import (
	"context"
	"iter"
	"slices"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/redisgraph/internal/errs"
	"github.com/followgraph/followgraph/redisgraph/internal/layout"
)

// user compares user u, repairs if asked to, and reports.
func (r *reconciler) user(ctx context.Context, u fg.UserID) error {
	red, err := r.g.readUser(ctx, u)
	if err != nil {
		return errs.Wrap("reconcile: read", err)
	}
	r.users.Add(1)
	// The other kinds first: their versions count toward the clock, which
	// the following side's repair raises.
	l := r.compareLinks(u, &red)
	r.edges.Add(l.edges)
	if r.opts.Fix && (len(l.repairs) > 0 || len(l.extra) > 0) {
		if err := r.repairLinks(ctx, u, &l); err != nil {
			return err
		}
	}
	diffs := l.diffs
	for i, s := range followSides {
		c := r.compareSide(u, s, &red, i, l.clock)
		r.edges.Add(c.edges)
		if r.opts.Fix && (len(c.repairs) > 0 || len(c.extra) > 0) {
			if err := r.repair(ctx, u, s, &c); err != nil {
				return err
			}
		}
		diffs = append(diffs, c.diffs...)
	}
	r.report(diffs)
	return nil
}

// sideCheck is the comparison of one side of one user: its differences,
// and what repairing them takes.
type sideCheck struct {
	diffs   []Diff
	repairs []repairEdge // the edges to write, each with the index in diffs of the difference it fixes
	extra   []int        // the indexes in diffs of the counter and clock differences, which the side's last repair call fixes
	clock   fg.Version   // the version the user's clock must reach (following side; 0 on the followers side)
	edges   int64        // edges compared
}

// compareSide compares side s (the i-th of red.sides) of user u in Redis,
// red, with the expected graph: each edge, then the counter against the
// size of the set and, on the following side, the clock against the
// versions of the edges and floor (that of the edges of the other kinds).
func (r *reconciler) compareSide(u fg.UserID, s layout.Side, red *redisUser, i int, floor fg.Version) sideCheck {
	exp := expectedSide(r.src, u, s)
	c := sideCheck{}
	// The live edges the side holds once repaired: the count the counter
	// should have. A hidden edge is on, but in neither the set nor the
	// counter.
	var live int64
	for want, have := range pairs(exp, red.sides[i]) {
		c.edges++
		kind := classify(want.EdgeState, have.EdgeState, r.horizon)
		if kind == DiffTombstone && red.ends(s, want.other, want.Version) {
			kind = 0
		}
		if settled(kind, want, have).Live && !have.hidden {
			live++
		}
		if kind != 0 {
			c.edge(u, s, kind, want, have)
		}
	}
	if red.counters[i] != red.card[i] {
		c.addExtra(Diff{User: u, Side: s, Kind: DiffCounter, ExpectedCount: live, FoundCount: red.counters[i]})
	}
	if s == layout.Following {
		// The clock must be at least the greatest version of u's edges, of
		// every kind, in the expected graph. (Not Redis's: a legitimate
		// change ticks the clock, so a state in Redis above the clock is
		// garbage, and may be far in the future.)
		c.clock = max(maxVersion(exp), floor)
		if red.clock < c.clock {
			c.addExtra(Diff{User: u, Side: s, Kind: DiffClock, Expected: EdgeState{Version: c.clock}, Found: EdgeState{Version: red.clock}})
		}
	}
	return c
}

// edge notes a difference of kind in the edge between u and want.other,
// and, unless Redis is ahead, the repair that writes the expected state.
func (c *sideCheck) edge(u fg.UserID, s layout.Side, kind DiffKind, want, have edgeRec) {
	c.diffs = append(c.diffs, Diff{User: u, Side: s, Kind: kind, Other: want.other, Expected: want.EdgeState, Found: have.EdgeState})
	if kind != DiffAhead {
		c.repairs = append(c.repairs, repairEdge{newBulkEdge(want.other, want.EdgeState), len(c.diffs) - 1})
	}
}

// addExtra notes d, a counter or clock difference.
func (c *sideCheck) addExtra(d Diff) {
	c.diffs = append(c.diffs, d)
	c.extra = append(c.extra, len(c.diffs)-1)
}

// expectedSide returns u's edges on side s in src, by other user.
func expectedSide(src Source, u fg.UserID, s layout.Side) []edgeRec {
	var exp []edgeRec
	for e := range sideEdges(s, src, u) {
		exp = append(exp, edgeRec{other: otherOf(s, e), EdgeState: stateOf(e)})
	}
	slices.SortFunc(exp, byOther)
	return exp
}

// pairs merges exp and got, two sides by other user, into the pairs of
// states of each edge either has: the expected one and Redis's, the
// missing one being no record (version 0).
func pairs(exp, got []edgeRec) iter.Seq2[edgeRec, edgeRec] {
	return func(yield func(want, have edgeRec) bool) {
		a, b := 0, 0
		for a < len(exp) || b < len(got) {
			var want, have edgeRec
			switch {
			case b == len(got) || a < len(exp) && exp[a].other < got[b].other:
				want, have = exp[a], edgeRec{other: exp[a].other}
				a++
			case a == len(exp) || got[b].other < exp[a].other:
				want, have = edgeRec{other: got[b].other}, got[b]
				b++
			default:
				want, have = exp[a], got[b]
				a++
				b++
			}
			if !yield(want, have) {
				return
			}
		}
	}
}

// maxVersion returns the greatest version of es (0 when empty).
func maxVersion(es []edgeRec) fg.Version {
	var v fg.Version
	for _, e := range es {
		v = max(v, e.Version)
	}
	return v
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

// settled returns the state an edge is left in once a difference of kind
// between want and have is repaired: Redis's when it is ahead (never
// repaired), the expected one otherwise.
func settled(kind DiffKind, want, have edgeRec) EdgeState {
	if kind == DiffAhead {
		return have.EdgeState
	}
	return want.EdgeState
}
