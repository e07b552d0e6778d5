package redisgraph

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"strings"

	"github.com/redis/rueidis"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/redisgraph/internal/layout"
)

// archiveBatch is how many edges one call of the archive script hides:
// with u's side written once per batch, 16 keeps nearly every call of a
// user with millions of followers near a millisecond
// (docs/BENCHMARKS.md "Redis: a job over a user with 2M followers").
const archiveBatch = 16

// showBatch is archiveBatch for a show or a drop, whose members come by
// HSCAN in the hash's order, not the set's, so that each call's
// counterparts are scattered over memory: at 16 a call, 3.6 and 6.7% of
// the calls of a restore of 2M followers took over a millisecond, at 8
// 0.05 and 0.12% (docs/BENCHMARKS.md "Redis: a job over a user with 2M
// followers"). A variable only for BenchmarkJob, which compares sizes.
var showBatch = 8

// clusterBatch is the batch of a hide, a show and a drop on a Cluster,
// where the counterparts' sides are each a call of their own
// (lua/pairside.lua, a few commands on one user's keys) and the user's
// side one call for the batch: the size bounds no script's work on
// scattered keys there, only the user's side, and each batch costs three
// round trips, so it is larger (docs/BENCHMARKS.md "Redis Cluster: a
// job"). A variable only for BenchmarkJobCluster, which compares sizes.
var clusterBatch = 64

// batches returns the sizes of a hide's batch and a show's (or drop's).
func (g *Graph) batches() (hide, show int) {
	if g.cluster {
		return clusterBatch, clusterBatch
	}
	return archiveBatch, showBatch
}

// archiveSide is one side of a user's edges, as the archive script takes
// it, with the counterparts' side opposite.
type archiveSide struct {
	mine, theirs layout.Side
}

// archiveSides are the sides an account-state job hides: follows,
// blocks and requests, each way, the edges into the user first. (A mute
// is on the muter's side only; the mutes of a hidden user by others need
// a muted-by set first: docs/design/states.md.)
var archiveSides = func() []archiveSide {
	var out []archiveSide
	for _, k := range fg.Kinds {
		if !k.Edge || !k.TwoSided {
			continue
		}
		in, _ := layout.SideOfKind(k.Kind, true)
		o, _ := layout.SideOfKind(k.Kind, false)
		out = append(out, archiveSide{in, o}, archiveSide{o, in})
	}
	return out
}()

// The steps of the archive script (lua/archive.lua).
const (
	archiveHide = layout.StepHide
	archiveShow = layout.StepShow
	archiveDrop = layout.StepDrop
)

// errStateChanged is archive's error when the user's state no longer asks
// for its step: the job of the new state takes over.
var errStateChanged = errors.New("redisgraph: the user's state changed during its job")

// archive runs step (archiveHide, archiveShow, archiveDrop) on every edge
// of user of archiveSides, in batches of archiveBatch, and returns how
// many it changed. It is the step the account-state job is built on
// (docs/design/states.md); on a Cluster, whose two sides of an
// edge live in two slots, each batch is two steps (archiveCounterparts).
// Run again, it finds nothing left to do. When the user's state no longer
// asks for step, it stops with errStateChanged.
func (g *Graph) archive(ctx context.Context, user fg.UserID, step string) (int64, error) {
	return g.archivePaced(ctx, user, step, nil)
}

// archivePaced is archive calling after (when not nil) with the count of
// each batch changed once it is done; an error of after stops it.
func (g *Graph) archivePaced(ctx context.Context, user fg.UserID, step string, after func(int64) error) (int64, error) {
	var total int64
	for _, side := range archiveSides {
		call := func(ms []string) error {
			n, err := g.archiveBatch(ctx, user, side, step, ms)
			total += n
			if err == nil && after != nil {
				err = after(n)
			}
			return err
		}
		if err := g.walkViews(ctx, user, func(v chunkView) error {
			hide, show := g.batches()
			if step == archiveHide {
				for _, z := range g.chunkKeys(user, v, side.mine.Set) {
					if err := g.eachFirst(ctx, z, hide, call); err != nil {
						return err
					}
				}
				return nil
			}
			for _, vh := range g.chunkKeys(user, v, side.mine.Versions) {
				if err := g.eachHidden(ctx, vh, show, call); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			return total, err
		}
	}
	return total, nil
}

// eachFirst calls f with the first members of z, n at a time, until z
// is empty: f hides them, so each call reads the next ones.
func (g *Graph) eachFirst(ctx context.Context, z string, n int, f func([]string) error) error {
	for {
		ms, err := g.c.Do(ctx, g.c.B().Zrange().Key(z).Min("0").Max(strconv.Itoa(n-1)).Build()).AsStrSlice()
		if err != nil || len(ms) == 0 {
			return err
		}
		if err := f(ms); err != nil {
			return err
		}
	}
}

// eachHidden calls f with the members of the versions hash vh whose
// version is stored hidden ('h' and the version), n at a time, scanning
// vh once.
func (g *Graph) eachHidden(ctx context.Context, vh string, n int, f func([]string) error) error {
	var cursor uint64
	var batch []string
	for {
		scan, err := g.c.Do(ctx, g.c.B().Hscan().Key(vh).Cursor(cursor).Count(int64(n)).Build()).AsScanEntry()
		if err != nil {
			return err
		}
		for j := 0; j+1 < len(scan.Elements); j += 2 {
			if !strings.HasPrefix(scan.Elements[j+1], "h") {
				continue
			}
			if batch = append(batch, scan.Elements[j]); len(batch) == n {
				if err := f(batch); err != nil {
					return err
				}
				batch = batch[:0]
			}
		}
		if cursor = scan.Cursor; cursor == 0 {
			break
		}
	}
	if len(batch) > 0 {
		return f(batch)
	}
	return nil
}

// archiveBatch runs the archive script once, on the edges of user's side
// with the counterparts whose members are ms.
//
// The users of the batch are touched (cache.go's stamps): the script
// changes their counters without returning their stamps, and no read of
// this Graph may answer a cached hash from before it. Touched before the
// script is sent, since a read may see its effect in Redis before its
// reply arrives here (State's Pending reaching 0, say), and again after,
// for knownTTL from then.
func (g *Graph) archiveBatch(ctx context.Context, user fg.UserID, side archiveSide, step string, ms []string) (int64, error) {
	touch := func() {
		g.known.touch(user)
		for _, m := range ms {
			if c, ok := memberID(m); ok {
				g.known.touch(c)
			}
		}
	}
	touch()
	defer touch()
	n, err := g.archiveScript(ctx, user, side, step, ms)
	if g.archiveReplied != nil {
		g.archiveReplied(user, ms)
	}
	return n, err
}

// archiveScript is archiveBatch's call of the archive script (on a
// Cluster, after archiveCounterparts).
func (g *Graph) archiveScript(ctx context.Context, user fg.UserID, side archiveSide, step string, ms []string) (int64, error) {
	keys := make([]string, 0, 4+4*len(ms))
	keys = append(keys, g.key(user, side.mine.Set), g.key(user, side.mine.Versions), g.key(user, layout.Counters), g.key(user, layout.Flags))
	args := make([]string, 0, 4+2*len(ms))
	args = append(args, step, side.mine.Code, side.theirs.Code, member(user))
	if g.cluster {
		answers, err := g.archiveCounterparts(ctx, user, side, step, ms)
		if err != nil {
			return 0, err
		}
		if g.jobStepFault != nil {
			if err := g.jobStepFault(user); err != nil {
				return 0, err
			}
		}
		args = append(append(args, ms...), answers...)
		n, err := g.exec(ctx, scriptArchive, keys, args).AsInt64()
		if err != nil {
			return 0, unavailable("job", err)
		}
		return n, nil
	}
	for _, m := range ms {
		c, ok := memberID(m)
		if !ok {
			return 0, fg.Errorf(fg.EInternal, "redisgraph: member %q of %s is not a user id", m, g.key(user, side.mine.Set))
		}
		keys = append(keys, g.key(c, side.theirs.Set), g.key(c, side.theirs.Versions), g.key(c, layout.Counters), g.key(c, layout.Flags))
		args = append(args, m)
	}
	n, err := g.exec(ctx, scriptArchive, keys, args).AsInt64()
	if err == nil && n < 0 {
		return 0, errStateChanged
	}
	return n, err
}

// archiveCounterparts is the first step of a batch of a job on a Cluster:
// each counterpart's side of its edge with user, by lua/pairside.lua on
// the counterpart's slot, pipelined. It returns the answer of each of ms,
// in their order, for lua/archive.lua to write user's side by ("0" for a
// member whose edge user's side no longer holds as the step needs: that
// call skips it too). It reads user's state first, and stops with
// errStateChanged when it no longer asks for step; a state changed after
// that read is met by the next batch, since the second step completes
// what this one did whatever the state (lua/archive.lua).
func (g *Graph) archiveCounterparts(ctx context.Context, user fg.UserID, side archiveSide, step string, ms []string) ([]string, error) {
	// The state, and what user's side holds of each member, read by the
	// chunks of user's view, checked (chunks.go).
	var verPlan, setPlan []memberGroup
	res, _, err := g.readChunked(ctx, []fg.UserID{user}, func(vs []chunkView) rueidis.Commands {
		cmds := rueidis.Commands{g.c.B().Hget().Key(g.key(user, layout.Counters)).Field("s").Build()}
		verPlan, setPlan = g.byChunk(user, vs[0], side.mine.Versions, ms, len(ms)), nil
		for _, grp := range verPlan {
			cmds = append(cmds, g.c.B().Hmget().Key(grp.key).Field(grp.members(ms)...).Build())
		}
		if step == archiveHide {
			setPlan = g.byChunk(user, vs[0], side.mine.Set, ms, len(ms))
			for _, grp := range setPlan {
				cmds = append(cmds, g.c.B().Zmscore().Key(grp.key).Member(grp.members(ms)...).Build())
			}
		}
		return cmds
	})
	if err != nil {
		return nil, unavailable("job", err)
	}
	word, err := res[0].ToString()
	if rueidis.IsRedisNil(err) {
		word, err = fg.StateActive.String(), nil
	}
	vers, scores := make([]rueidis.RedisMessage, len(ms)), make([]rueidis.RedisMessage, len(ms))
	res = res[1:]
	for _, plan := range []struct {
		groups []memberGroup
		into   []rueidis.RedisMessage
	}{{verPlan, vers}, {setPlan, scores}} {
		for _, grp := range plan.groups {
			vals, err2 := res[0].ToArray()
			if err2 == nil && len(vals) != len(grp.at) {
				err2 = fmt.Errorf("%d values for %d members", len(vals), len(grp.at))
			}
			err = errors.Join(err, err2)
			for i, j := range grp.at {
				if i < len(vals) {
					plan.into[j] = vals[i]
				}
			}
			res = res[1:]
		}
	}
	if err != nil {
		return nil, unavailable("job", err)
	}
	active := word == fg.StateActive.String()
	if (step == archiveShow) != active || step == archiveDrop && word != fg.StateDeleted.String() {
		return nil, errStateChanged
	}
	answers := make([]string, len(ms))
	var calls []rueidis.LuaExec
	var at []int // the index in ms of each call's member
	called := make(map[string]bool, len(ms))
	for i, m := range ms {
		answers[i] = strconv.Itoa(int(layout.PairNewer))
		v, _ := vers[i].ToString()
		if step == archiveHide {
			score, err := scores[i].AsFloat64()
			if err != nil {
				continue // no longer on user's side
			}
			if v == "" {
				v = versionHex(fg.VersionAt(int64(score)))
			}
		} else if hidden, ok := strings.CutPrefix(v, "h"); ok {
			v = hidden
		} else {
			continue // no longer hidden
		}
		c, ok := memberID(m)
		if !ok {
			return nil, fg.Errorf(fg.EInternal, "redisgraph: member %q of %s is not a user id", m, g.key(user, side.mine.Set))
		}
		if called[m] {
			continue // named twice by HSCAN: the script reads the first's answer
		}
		called[m] = true
		calls = append(calls, g.pairSideCall(c, side.theirs, user, step, v))
		at = append(at, i)
	}
	for j, r := range g.execMulti(ctx, scriptPairSide, calls) {
		n, err := r.AsInt64()
		if err != nil {
			return nil, unavailable("job", err)
		}
		answers[at[j]] = strconv.FormatInt(n, 10)
	}
	return answers, nil
}

// statePairs gathers, on a Cluster, the edges that calls of lua/effects.lua
// turned on (or found on) between users one of whom is not active, by
// what each call answered of its user's state, so that settlePairs
// brings both sides to what the states make of them. Each call there
// has one user, so a side written by a user's own state (lib.lua's set
// with pairState) cannot know the other's: the caller, which knows both
// ends, completes it. Keyed by the event's ID.
type statePairs map[string]pairNote

type pairNote struct {
	e       fg.Event
	effects iter.Seq[fg.Effect]
	step    string // archiveHide, or archiveDrop when one of them is deleted
}

// note records e, whose effects (all or some of e's) a call applied,
// when words (the states the call answered, one per user) include one
// that is not active; *p is made then, so that the second step of every
// write between active users makes no map.
func (p *statePairs) note(e fg.Event, effects iter.Seq[fg.Effect], words ...rueidis.RedisMessage) {
	for _, w := range words {
		word, err := w.ToString()
		st, ok := fg.ParseState(word)
		if err != nil || !ok || st.Active() {
			continue
		}
		step := archiveHide
		if st == fg.StateDeleted {
			step = archiveDrop
		}
		if *p == nil {
			*p = statePairs{}
		}
		if n, ok := (*p)[e.ID()]; !ok || n.step != archiveDrop {
			(*p)[e.ID()] = pairNote{e, effects, step}
		}
	}
}

// settlePairs makes each edge of p that its event turned on (a follow, a
// block or a request: a mute is its muter's alone, and hidden at read
// time) hidden on both sides, or ended when one of its users is deleted,
// by lua/pairside.lua at the event's version: a side that holds a newer
// change is left as it is, and a side done already changes nothing.
func (g *Graph) settlePairs(ctx context.Context, p statePairs) error {
	if len(p) == 0 {
		return nil
	}
	var calls []rueidis.LuaExec
	for _, n := range p {
		v := versionHex(n.e.Version)
		for eff := range n.effects {
			if !eff.On || eff.Kind == fg.KindMute || eff.Kind == fg.KindPrivate {
				continue
			}
			side, ok := sideOf(eff.Kind)
			if !ok {
				continue
			}
			calls = append(calls,
				g.pairSideCall(eff.User, side.mine, eff.Target, n.step, v),
				g.pairSideCall(eff.Target, side.theirs, eff.User, n.step, v))
		}
	}
	for _, r := range g.execMulti(ctx, scriptPairSide, calls) {
		if err := r.Error(); err != nil {
			return err
		}
	}
	return nil
}

// sideOf returns the archive side of kind's edges out of their user.
func sideOf(k fg.Kind) (archiveSide, bool) {
	for _, s := range archiveSides {
		if s.mine.Kind == k && !s.mine.In {
			return s, true
		}
	}
	return archiveSide{}, false
}

// pairSideCall is the call of lua/pairside.lua on user's side code
// (sorted set kind z, versions hash kind vh) of its edge with other, for
// step at version v.
func (g *Graph) pairSideCall(user fg.UserID, side layout.Side, other fg.UserID, step, v string) rueidis.LuaExec {
	return rueidis.LuaExec{
		Keys: []string{g.key(user, side.Set), g.key(user, side.Versions), g.key(user, layout.Counters), g.key(user, layout.Flags)},
		Args: []string{step, side.Code, member(other), v},
	}
}
