package effects

import (
	"context"
	"iter"

	fg "github.com/followgraph/followgraph"

	"github.com/followgraph/followgraph/redisgraph/internal/layout"
	"github.com/followgraph/followgraph/redisgraph/internal/scripts"
	"github.com/followgraph/followgraph/redisgraph/internal/wire"
	"github.com/redis/rueidis"
)

// Pairs gathers, on a Cluster, the edges that calls of lua/effects.lua
// turned on (or found on) between users one of whom is not active, by
// what each call answered of its user's state, so that SettlePairs
// brings both sides to what the states make of them. Each call there
// has one user, so a side written by a user's own state (lib.lua's set
// with pairState) cannot know the other's: the caller, which knows both
// ends, completes it. Keyed by the event's ID.
type Pairs map[string]pairNote

type pairNote struct {
	e       fg.Event
	effects iter.Seq[fg.Effect]
	step    string // layout.StepHide, or layout.StepDrop when one of them is deleted
}

// Note records e, whose effects (all or some of e's) a call applied,
// when words (the states the call answered, one per user) include one
// that is not active; *p is made then, so that the second step of every
// write between active users makes no map.
func (p *Pairs) Note(e fg.Event, effects iter.Seq[fg.Effect], words ...rueidis.RedisMessage) {
	for _, w := range words {
		word, err := w.ToString()
		st, ok := fg.ParseState(word)
		if err != nil || !ok || st.Active() {
			continue
		}
		step := layout.StepHide
		if st == fg.StateDeleted {
			step = layout.StepDrop
		}
		if *p == nil {
			*p = Pairs{}
		}
		if n, ok := (*p)[e.ID()]; !ok || n.step != layout.StepDrop {
			(*p)[e.ID()] = pairNote{e, effects, step}
		}
	}
}

// SettlePairs makes each edge of p that its event turned on (a follow, a
// block or a request: a mute is its muter's alone, and hidden at read
// time) hidden on both sides, or ended when one of its users is deleted,
// by lua/pairside.lua at the event's version: a side that holds a newer
// change is left as it is, and a side done already changes nothing.
func (x *Effects) SettlePairs(ctx context.Context, p Pairs) error {
	if len(p) == 0 {
		return nil
	}
	var calls []scripts.Call
	for _, n := range p {
		v := wire.VersionHex(n.e.Version)
		for eff := range n.effects {
			if !eff.On || eff.Kind == fg.KindMute || eff.Kind == fg.KindPrivate {
				continue
			}
			mine, ok1 := layout.SideOfKind(eff.Kind, false)
			theirs, ok2 := mine.Opposite()
			if !ok1 || !ok2 {
				continue
			}
			calls = append(calls,
				x.PairSideCall(eff.User, mine, eff.Target, n.step, v),
				x.PairSideCall(eff.Target, theirs, eff.User, n.step, v))
		}
	}
	for _, r := range x.lua.ExecMulti(ctx, calls) {
		if err := r.Error(); err != nil {
			return err
		}
	}
	return nil
}

// PairSideCall is the call of lua/pairside.lua on user's side of its edge
// with other, for step (layout.Step*) at version v.
func (x *Effects) PairSideCall(user fg.UserID, side layout.Side, other fg.UserID, step, v string) scripts.Call {
	return scripts.PairSide.Call(
		scripts.PairSideKeys{Set: x.ks.User(user, side.Set), Versions: x.ks.User(user, side.Versions),
			H: x.ks.User(user, layout.Counters), Rf: x.ks.User(user, layout.Flags)},
		scripts.PairSideArgs{Step: step, Code: side.Code, Member: wire.Member(other), Version: v})
}
