package rebuild

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/redisgraph/internal/errs"
	"github.com/followgraph/followgraph/redisgraph/internal/layout"
	"github.com/followgraph/followgraph/redisgraph/internal/scripts"
	"github.com/followgraph/followgraph/redisgraph/internal/wire"
)

// linkSides are the sides of the other kinds (layout.Sides with a flag),
// in the layout's order.
var linkSides = func() []layout.Side {
	var out []layout.Side
	for _, s := range layout.Sides {
		if s.Flag != 0 {
			out = append(out, s)
		}
	}
	return out
}()

// linkIndex returns the index in linkSides of the side of kind, into the
// user (in) or out of it.
func linkIndex(kind fg.Kind, in bool) int {
	for i, l := range linkSides {
		if l.Kind == kind && l.In == in {
			return i
		}
	}
	panic("redisgraph: no link side of kind " + kind.String())
}

// The indexes in linkSides of the block sides.
var linkBlocks, linkBlockedBy = linkIndex(fg.KindBlock, false), linkIndex(fg.KindBlock, true)

// inLinks returns the blocks and requests of src by the user they are to:
// what the incoming sides (bi, ri) of each user are expected to hold.
// Source gives the edges of the other kinds by the user they are from
// only; they are far fewer than follows.
func inLinks(src Source) map[fg.UserID][]fg.Event {
	in := map[fg.UserID][]fg.Event{}
	for u := range src.Users() {
		for e := range src.LinkEvents(u) {
			if k := e.Op.Kind(); k == fg.KindBlock || k == fg.KindRequest {
				in[e.Target] = append(in[e.Target], e)
			}
		}
	}
	return in
}

// linkCheck is the comparison of the other kinds of one user: its
// differences, and what repairing them takes.
type linkCheck struct {
	diffs   []Diff
	repairs []linkRepair
	flags   []fg.UserID // the other users whose flags differ
	extra   []int       // the indexes in diffs of the counter and flags differences, which the last repair call fixes
	clock   fg.Version  // the greatest expected version of the user's edges of these kinds
	edges   int64
}

// linkRepair is an edge (or the private setting) a repair writes: the
// expected state, from the event of its last change (zero: no record),
// and the index in diffs of the difference it fixes.
type linkRepair struct {
	code  string
	other fg.UserID
	want  EdgeState
	ev    fg.Event
	diff  int
}

// compareLinks compares the other kinds of user u in Redis, red, with the
// expected graph: each edge of each side and the private setting, each
// side's counter against the size of its set, and the flags set against
// the edges.
func (r *reconciler) compareLinks(u fg.UserID, red *redisUser) linkCheck {
	var c linkCheck
	exp := make([][]edgeRec, len(linkSides))
	events := map[fg.UserID]fg.Event{} // u's mutes, for their since and expiry
	var private fg.Event
	add := func(e fg.Event, in bool) {
		for i, l := range linkSides {
			if l.Kind == e.Op.Kind() && l.In == in {
				other := e.Target
				if in {
					other = e.User
				}
				exp[i] = append(exp[i], edgeRec{other: other, EdgeState: stateOf(e)})
			}
		}
		c.clock = max(c.clock, e.Version)
	}
	for e := range r.src.LinkEvents(u) {
		switch e.Op.Kind() {
		case fg.KindPrivate:
			private = e
			c.clock = max(c.clock, e.Version)
			continue
		case fg.KindMute:
			events[e.Target] = e
		}
		add(e, false)
	}
	for _, e := range r.in[u] {
		add(e, true)
	}

	want := map[fg.UserID]int{} // the flags once repaired
	for i, l := range linkSides {
		slices.SortFunc(exp[i], byOther)
		var live int64
		for w, h := range pairs(exp[i], red.links[i]) {
			c.edges++
			kind := classify(w.EdgeState, h.EdgeState, r.horizon)
			if kind == DiffTombstone && red.ends(l, w.other, w.Version) {
				kind = 0
			}
			if settled(kind, w, h).Live && !h.hidden { // a hidden edge is in neither the set, the counter nor the flags
				live++
				want[w.other] |= 1 << i
			}
			if kind != 0 {
				c.edge(Diff{User: u, Side: l, Kind: kind, Other: w.other, Expected: w.EdgeState, Found: h.EdgeState},
					linkRepair{code: l.Code, other: w.other, want: w.EdgeState, ev: events[w.other]})
			}
		}
		if red.linkCounters[i] != red.linkCard[i] {
			c.addExtra(Diff{User: u, Side: l, Kind: DiffCounter, ExpectedCount: live, FoundCount: red.linkCounters[i]})
		}
	}
	if kind := classify(stateOf(private), red.private, r.horizon); kind != 0 {
		c.edge(Diff{User: u, Side: layout.Private, Kind: kind, Expected: stateOf(private), Found: red.private},
			linkRepair{code: "p", want: stateOf(private)})
	}

	for other := range red.flags {
		if _, ok := want[other]; !ok {
			want[other] = 0
		}
	}
	for other, f := range want {
		if red.flags[other] != f {
			c.flags = append(c.flags, other)
			c.addExtra(Diff{User: u, Side: layout.Following, Kind: DiffFlags, Other: other, ExpectedCount: int64(f), FoundCount: int64(red.flags[other])})
		}
	}
	return c
}

// edge notes d, a difference in an edge, and, unless Redis is ahead, the
// repair that writes the expected state.
func (c *linkCheck) edge(d Diff, rep linkRepair) {
	c.diffs = append(c.diffs, d)
	if d.Kind != DiffAhead {
		rep.diff = len(c.diffs) - 1
		c.repairs = append(c.repairs, rep)
	}
}

// addExtra notes d, a counter or flags difference.
func (c *linkCheck) addExtra(d Diff) {
	c.diffs = append(c.diffs, d)
	c.extra = append(c.extra, len(c.diffs)-1)
}

// ends reports whether Redis holds, on user's side s, an edge with other
// that keeps any change of the edge of side s with other at a version up
// to v from turning it on, as lua/effects.lua applies changes: a block
// between the two, either way, on or off (an unblock keeps the block's
// version as its tombstone), of a version at least v; for a request, also
// the follow of its direction. Such an edge stands for the tombstone at v
// that the expected graph holds and Redis need not write (lib.lua's
// needed).
func (red *redisUser) ends(s layout.Side, other fg.UserID, v fg.Version) bool {
	at := func(es []edgeRec) fg.Version {
		if i, ok := slices.BinarySearchFunc(es, other, func(e edgeRec, o fg.UserID) int { return byOther(e, edgeRec{other: o}) }); ok {
			return es[i].Version
		}
		return 0
	}
	newest := max(at(red.links[linkBlocks]), at(red.links[linkBlockedBy]))
	switch s {
	case layout.Requests:
		newest = max(newest, at(red.sides[0]))
	case layout.RequestsIn:
		newest = max(newest, at(red.sides[1]))
	}
	return newest >= v
}

// repairLinks writes the expected states of the edges of the other kinds
// of user u that differ (c.repairs), in calls of up to r.batch edges; the
// last call also sets the flags of c.flags and the counters, fixing
// c.extra. It marks in c.diffs what it fixed. (The clock is the following
// side's repair's to raise.)
func (r *reconciler) repairLinks(ctx context.Context, u fg.UserID, c *linkCheck) error {
	return r.inBatches(ctx, len(c.repairs), len(c.extra), func(lo, hi int, last bool) error {
		call := c.repairs[lo:hi]
		args := scripts.LinksArgs{Horizon: wire.VersionHex(r.horizon), N: strconv.Itoa(len(call))}
		for _, rep := range call {
			other, state, v, since, expires := "", layout.EdgeNone, "", "0", "0"
			if rep.code != layout.PrivateCode {
				other = wire.Member(rep.other)
			}
			if rep.want.Version != 0 {
				state, v = "0", wire.VersionHex(rep.want.Version)
				if rep.want.Live {
					state = "1"
				}
			}
			if rep.code == "mo" && rep.want.Live {
				since, expires = wire.Millis(rep.ev.Since), wire.Millis(rep.ev.Expires)
			}
			args.Edges = append(args.Edges, rep.code, other, state, v, since, expires)
		}
		if last {
			for _, o := range c.flags {
				args.Edges = append(args.Edges, wire.Member(o))
			}
		}
		res, err := r.g.lua.Exec(ctx, scripts.Links.Call(scripts.LinksKeys{User: r.g.ks.UserKeys(u)}, args)).ToArray()
		if err == nil && len(res) < 2 {
			err = fmt.Errorf("links script returned %d values", len(res))
		}
		var flags string
		if err == nil {
			flags, err = res[1].ToString()
		}
		if err == nil && len(flags) != len(call) {
			err = fmt.Errorf("links script returned flags %q for %d edges", flags, len(call))
		}
		if err != nil {
			return errs.Wrap("reconcile: repair", err)
		}
		for j, rep := range call {
			c.diffs[rep.diff].Fixed = flags[j] == '1'
		}
		if last {
			for _, k := range c.extra {
				c.diffs[k].Fixed = true
			}
		}
		return nil
	})
}
