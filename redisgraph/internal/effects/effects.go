// Package effects writes the effects of events (followgraph.Event.Effects)
// on users' sides, each only over an older version of its edge
// (lua/effects.lua): Apply's replays of the log, the second step of a
// live change on a Cluster (the other user's side, in another slot:
// retried, and left to the outbox when every attempt fails), the settling
// of the outbox's events, and the pairs of users one of whom is not
// active, whose edges are hidden or ended on both sides (Pairs).
package effects

import (
	"context"
	"errors"
	"iter"
	"slices"
	"strconv"
	"time"

	fg "github.com/followgraph/followgraph"

	"github.com/followgraph/followgraph/redisgraph/internal/errs"
	"github.com/followgraph/followgraph/redisgraph/internal/keyspace"
	"github.com/followgraph/followgraph/redisgraph/internal/layout"
	"github.com/followgraph/followgraph/redisgraph/internal/scripts"
	"github.com/followgraph/followgraph/redisgraph/internal/stamps"
	"github.com/followgraph/followgraph/redisgraph/internal/wire"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/rueidis"
)

// A second step (Cluster only) is tried Attempts times, waiting
// secondStepBackoff, then twice as long each time; if every attempt fails
// the write still succeeds and the step is left to Outbox.Settle or Repair.
const (
	Attempts          = 5
	secondStepBackoff = 2 * time.Millisecond
	secondStepTimeout = 5 * time.Second
)

// HasOtherSide reports whether e changes edges on the side of its target
// too (mutes, settings and states do not).
func HasOtherSide(e fg.Event) bool {
	k := e.Op.Kind()
	return k != fg.KindMute && k != fg.KindPrivate && k != fg.KindState
}

// secondStep applies e on the side of user side (Cluster only), retrying
// with backoff, and reports whether it is done, and why it was refused, if
// it was: ErrBlocked, one of the two blocks the other, or
// ErrTargetInactive, side is the target of a follow or request and not
// active (see lua/effects.lua). When it is done and side is not active,
// the other side of the edges e turned on is settled as side's state
// makes them (settlePairs): hidden, or ended for a deleted side. After the
// last attempt fails it counts the step as deferred and leaves it to the
// outbox (Outbox.Settle, Repair). It goes on when ctx is cancelled: the
// first step is done, and the caller hanging up must not leave the second
// undone.
func (x *Effects) SecondStep(ctx context.Context, e fg.Event, side fg.UserID) (done bool, refused error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), secondStepTimeout)
	defer cancel()
	wait := secondStepBackoff
	for attempt := 1; ; attempt++ {
		refused, err := x.secondStepOnce(ctx, e, side)
		if err == nil {
			return true, refused
		}
		if attempt == Attempts {
			x.deferred.Inc()
			return false, nil
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			x.deferred.Inc()
			return false, nil
		}
		wait *= 2
	}
}

func (x *Effects) secondStepOnce(ctx context.Context, e fg.Event, side fg.UserID) (refused, err error) {
	if x.fault != nil {
		if err := x.fault(e); err != nil {
			return nil, err
		}
	}
	check := layout.RefuseBlocks
	if e.Op == fg.OpFollow || e.Op == fg.OpRequest {
		check = layout.RefuseInactive
	}
	res, err := x.lua.Exec(ctx, x.Call(e, e.Effects, check, side)).ToArray()
	if err != nil {
		return nil, err
	}
	switch n, _ := wire.Status(res[0]); n {
	case layout.Blocked:
		return fg.ErrBlocked, nil
	case layout.TargetInactive:
		return fg.ErrTargetInactive, nil
	}
	x.stamps.NoteReplies(res[1:2], side)
	var p Pairs
	p.Note(e, e.Effects, Words(res, 1)...)
	return nil, x.SettlePairs(ctx, p)
}

// effectsCall returns the call of lua/effects.lua that applies effects (e's
// Effects, or some of them) of e on the sides of users (one or two of e's
// users), refusing what check says (layout.Refuse). A call that refuses
// nothing (Apply's) is made by the script that is not vouched
// (scripts.Effects); one that may refuse, a second step's, by the vouched
// one (scripts.Second).
func (x *Effects) Call(e fg.Event, effects iter.Seq[fg.Effect], check layout.Refuse, users ...fg.UserID) scripts.Call {
	call, _ := x.call(e, effects, check, wire.VersionHex(0), users...)
	return call
}

// call returns Call's call, with the deployment's tombstone horizon
// horizon (16 hex digits), and the effects it sends, in their order.
func (x *Effects) call(e fg.Event, effects iter.Seq[fg.Effect], check layout.Refuse, horizon string, users ...fg.UserID) (scripts.Call, []fg.Effect) {
	var keys scripts.EffectsKeys
	var sent []fg.Effect
	args := scripts.EffectsArgs{Version: wire.VersionHex(e.Version), Refuse: string(check), MuteSince: wire.Millis(e.Since),
		MuteExpires: wire.Millis(e.Expires), Kind: layout.Letters[e.Op.Kind()], TombstoneHorizon: horizon}
	for i, u := range users {
		if i == 0 {
			keys.User = x.ks.UserKeys(u)
		} else {
			keys.Other = x.ks.UserKeys(u)
		}
		n := len(args.Effects)
		for eff := range effects {
			code := layout.Letters[eff.Kind]
			switch {
			case eff.Kind == fg.KindPrivate:
				if u != eff.User {
					continue
				}
			case u == eff.User:
				code += layout.DirOut
			case u == eff.Target && eff.Kind != fg.KindMute:
				code += layout.DirIn
			default:
				continue
			}
			other := ""
			if eff.Kind != fg.KindPrivate {
				other = wire.Member(eff.User)
				if u == eff.User {
					other = wire.Member(eff.Target)
				}
			}
			on := "0"
			if eff.On {
				on = "1"
			}
			args.Effects = append(args.Effects, code, other, on)
			sent = append(sent, eff)
		}
		if i == 0 {
			args.FirstEffects = strconv.Itoa((len(args.Effects) - n) / 3)
		}
	}
	if check == layout.RefuseNothing {
		return scripts.Effects.Call(keys, args), sent
	}
	return scripts.Second.Call(keys, args), sent
}

// Words returns the account states in a reply of lua/effects.lua to a
// call for n users.
func Words(res []rueidis.RedisMessage, n int) []rueidis.RedisMessage {
	return res[1+n : min(len(res), 1+2*n)]
}

// refusals returns the refusals in a reply of lua/effects.lua to a call
// for n users of the effects sent of e (each effect once).
func refusals(e fg.Event, res []rueidis.RedisMessage, n int, sent []fg.Effect) []fg.Refusal {
	var out []fg.Refusal
	for i := 1 + 2*n; i+1 < len(res); i += 2 {
		j, err1 := res[i].AsInt64()
		h, err2 := res[i+1].ToString()
		v, err3 := wire.ParseVersion(h)
		if err1 != nil || err2 != nil || err3 != nil || j < 0 || int(j) >= len(sent) {
			continue
		}
		r := fg.Refusal{Effect: sent[j], Version: e.Version, Horizon: v}
		if !slices.ContainsFunc(out, func(o fg.Refusal) bool { return o.Effect == r.Effect }) {
			out = append(out, r)
		}
	}
	return out
}

// Users returns the users whose sides e changes.
func Users(e fg.Event) []fg.UserID {
	if HasOtherSide(e) {
		return []fg.UserID{e.User, e.Target}
	}
	return []fg.UserID{e.User}
}

// applySecondSteps settles events taken from the outbox: it applies the
// effects of each again on both users' sides (Cluster only), pipelined;
// the side a change was made on has it already, and changes nothing. It
// returns how many changed anything. A follow or request whose side meets
// a block is undone on the other side (see edgeChange); an edge turned on
// with a user who is not active is settled on both sides (settlePairs),
// since the first step may have been made before that user's state
// changed and its job went by.
func (x *Effects) Settle(ctx context.Context, events []fg.Event) (int, error) {
	var calls []scripts.Call
	type owner struct {
		e    fg.Event
		side fg.UserID
	}
	var owners []owner
	for _, e := range events {
		if e.Op == fg.OpState {
			continue // a state is on its user's side only
		}
		for _, u := range Users(e) {
			calls = append(calls, x.Call(e, e.Effects, layout.RefuseBlocks, u))
			owners = append(owners, owner{e, u})
		}
	}
	changed := 0
	var fails []error
	var p Pairs
	for i, r := range x.lua.ExecMulti(ctx, calls) {
		res, err := r.ToArray()
		if err != nil {
			fails = append(fails, err)
			continue
		}
		o := owners[i]
		switch n, _ := wire.Status(res[0]); n {
		case layout.Changed:
			changed++
		case layout.Blocked:
			first := o.e.User
			if first == o.side {
				first = o.e.Target
			}
			if err := x.undo(ctx, o.e, first); err != nil {
				fails = append(fails, err)
			}
			continue
		}
		x.stamps.NoteReplies(res[1:2], o.side)
		p.Note(o.e, o.e.Effects, Words(res, 1)...)
	}
	if err := x.SettlePairs(ctx, p); err != nil {
		fails = append(fails, err)
	}
	return changed, errors.Join(fails...)
}

// Effects writes the effects of events on users' sides, on the graph of
// ks through lua, noting the stamps the writes leave in stamps.
type Effects struct {
	ks       keyspace.Space
	lua      *scripts.Runner
	stamps   *stamps.Stamps
	deferred prometheus.Counter                                           // second steps left to the outbox
	undo     func(ctx context.Context, e fg.Event, first fg.UserID) error // ends what e turned on on first's side
	fault    func(fg.Event) error                                         // nil; a test's: runs before each attempt of a second step
	refused  func(fg.Refusal)                                             // nil; what Apply refuses (followgraph.Refusal)
}

// New returns the writer of effects on the graph of ks. undo ends, as a
// live change of its own, the follow or request that an event turned on
// on the side of first, when the event's second step met a block (see
// the engine's undo); deferred counts the second steps left to the
// outbox; fault, if not nil, runs before each attempt of a second step
// and fails it with its error (the tests'); refused, if not nil, is
// called by Apply with each change it refuses for being older than a
// tombstone horizon.
func New(ks keyspace.Space, lua *scripts.Runner, st *stamps.Stamps, deferred prometheus.Counter,
	undo func(ctx context.Context, e fg.Event, first fg.UserID) error, fault func(fg.Event) error, refused func(fg.Refusal)) *Effects {
	return &Effects{ks: ks, lua: lua, stamps: st, deferred: deferred, undo: undo, fault: fault, refused: refused}
}

// Apply writes each effect of each event, valid, unless its edge already
// has a change of an equal or higher version (see the engine's Apply), and
// each state change, pipelined: on a standalone Redis both users' sides
// of an event in one call, on a Cluster each side in a call of its own,
// the pairs with a user who is not active settled after. An edge turned
// on, of which a side keeps no record, by a change older than the
// deployment's tombstone horizon (horizon, 16 hex digits) or the user's
// is refused there (lua/effects.lua), and passed to the refused of New
// once the batch is written.
func (x *Effects) Apply(ctx context.Context, events []fg.Event, horizon string) error {
	var calls, states []scripts.Call
	var owners [][]fg.UserID // the users of each call, for their stamps
	var stateOwners []fg.UserID
	var of []fg.Event      // the event of each call
	var sent [][]fg.Effect // the effects each call sent
	for _, e := range events {
		if e.Op == fg.OpState {
			states = append(states, scripts.ApplyState.Call(scripts.ApplyStateKeys{H: x.ks.User(e.User, layout.Counters), Jobs: x.ks.Jobs(e.User)},
				scripts.ApplyStateArgs{State: e.State.String(), Version: wire.VersionHex(e.Version), User: e.User.String()}))
			stateOwners = append(stateOwners, e.User)
			continue
		}
		users := Users(e)
		if !x.ks.Cluster() {
			call, effs := x.call(e, e.Effects, layout.RefuseNothing, horizon, users...)
			calls, owners, of, sent = append(calls, call), append(owners, users), append(of, e), append(sent, effs)
			continue
		}
		for _, u := range users {
			call, effs := x.call(e, e.Effects, layout.RefuseNothing, horizon, u)
			calls, owners, of, sent = append(calls, call), append(owners, []fg.UserID{u}), append(of, e), append(sent, effs)
		}
	}
	var p Pairs
	var refused []fg.Refusal
	for i, r := range x.lua.ExecMulti(ctx, calls) {
		res, err := r.ToArray()
		if err != nil {
			return errs.Wrap("apply", err)
		}
		n := len(owners[i])
		x.stamps.NoteReplies(res[1:1+n], owners[i]...)
		rs := refusals(of[i], res, n, sent[i])
		for _, r := range rs {
			if !slices.ContainsFunc(refused, func(o fg.Refusal) bool { return o.Effect == r.Effect && o.Version == r.Version }) {
				refused = append(refused, r)
			}
		}
		if x.ks.Cluster() {
			// The pairs of what was written: a refused edge is not hidden.
			e := of[i]
			p.Note(e, func(yield func(fg.Effect) bool) {
				for eff := range e.Effects {
					if !slices.ContainsFunc(rs, func(r fg.Refusal) bool { return r.Effect == eff }) && !yield(eff) {
						return
					}
				}
			}, Words(res, n)...)
		}
	}
	if err := x.SettlePairs(ctx, p); err != nil {
		return errs.Wrap("apply", err)
	}
	if x.refused != nil {
		for _, r := range refused {
			x.refused(r)
		}
	}
	if len(states) == 0 {
		return nil
	}
	for i, r := range x.lua.ExecMulti(ctx, states) {
		res, err := r.ToArray()
		if err != nil {
			return errs.Wrap("apply", err)
		}
		x.stamps.NoteReplies(res[1:], stateOwners[i])
	}
	return nil
}
