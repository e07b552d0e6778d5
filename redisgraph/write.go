package redisgraph

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/redisgraph/internal/layout"
)

// A second step (Cluster only) is tried secondStepAttempts times, waiting
// secondStepBackoff, then twice as long each time; if every attempt fails
// the write still succeeds and the step is left to Outbox.Settle or Repair.
const (
	secondStepAttempts = 5
	secondStepBackoff  = 2 * time.Millisecond
	secondStepTimeout  = 5 * time.Second
)

// Follow makes user follow target, or asks to when target is private; see
// followgraph.Graph. The change, its version and its event in the outbox
// are one atomic step on the follower's slot. It returns EUnavailable,
// having changed nothing, when the outbox is full or Redis cannot be
// reached (a write whose reply was lost may have been made; a retry is
// idempotent). On a Cluster, whether target is private is read before
// that step, through the client-side cache: a follow racing with target's
// SetPrivate(true) may be made as a follow, as if just before it, and
// the account states of the two are read the same way and checked again
// by the second step (a follow of a user made inactive meanwhile is
// undone: ErrTargetInactive).
func (g *Graph) Follow(ctx context.Context, user, target fg.UserID) (fg.FollowResult, error) {
	if err := fg.CheckLinkIDs(user, target); err != nil {
		return fg.FollowResult{}, err
	}
	private := ""
	if g.cluster {
		cs, err := g.readCounters(ctx, []fg.UserID{target})
		if err != nil {
			return fg.FollowResult{}, unavailable("follow", err)
		}
		if err := g.targetRefused(ctx, "follow", user, cs[0], false); err != nil {
			return fg.FollowResult{}, err
		}
		private = "0"
		if cs[0].private {
			private = "1"
		}
	}
	r, err := g.change(ctx, user, target, fg.OpFollow, private)
	if err != nil {
		return fg.FollowResult{}, err
	}
	return fg.FollowResult{Created: r.changed, Since: r.since, Requested: r.op == fg.OpRequest}, nil
}

// Unfollow makes user stop following target, or withdraws user's pending
// request to target; see followgraph.Graph and Follow.
func (g *Graph) Unfollow(ctx context.Context, user, target fg.UserID) (bool, error) {
	if err := fg.CheckIDs(user, target); err != nil {
		return false, err
	}
	if user == target {
		return false, nil
	}
	r, err := g.change(ctx, user, target, fg.OpUnfollow, "0")
	return r.changed, err
}

// changeResult is what a live change did.
type changeResult struct {
	changed        bool
	v              fg.Version // the new version, or the one already there (0: none)
	op             fg.Op      // the op of the event, or of the edge found when nothing changed
	since, expires time.Time  // of the edge when on (expires: a mute's, zero for none)
}

// change makes a follow or unfollow of user→target by lua/change.lua, or,
// when that says the change is more than the plain follow or unfollow, by
// lua/edge.lua; private is as edgeChange takes it.
func (g *Graph) change(ctx context.Context, user, target fg.UserID, op fg.Op, private string) (changeResult, error) {
	if g.gate != nil {
		if err := g.gate(ctx); err != nil {
			return changeResult{}, fmt.Errorf("redisgraph: %s: %w", op, err)
		}
	}
	before := g.epochsOf(user, target)
	args := g.liveArgs(op.String(), user, target, g.writeRate, private)
	res, err := g.exec(ctx, scriptChange, g.changeKeys(user, target), args).ToArray()
	if err != nil {
		return changeResult{}, unavailable(op.String(), err)
	}
	status, err := statusOf(res[0])
	if err != nil {
		return changeResult{}, unavailable(op.String(), err)
	}
	if status == layout.Slow {
		return g.edgeChange(ctx, op.String(), user, target, g.writeRate, private)
	}
	if err := g.refused(op.String(), user, status, res); err != nil {
		return changeResult{}, err
	}
	v, err := parseVersion(res[1])
	if err != nil {
		return changeResult{}, unavailable(op.String(), err)
	}
	r := changeResult{changed: status == layout.Changed, v: v, op: op}
	if op == fg.OpFollow {
		r.since = v.Time()
	}
	if status == layout.None {
		// The edge is already in op's state. On a Cluster, make sure its
		// other side is too.
		if g.cluster && v != 0 {
			g.secondStep(ctx, fg.NewEvent(user, target, op, v), target)
		}
		return r, nil
	}
	id, _ := res[2].ToString()
	g.noteStamps(res[3:], user, target)
	return r, g.complete(ctx, before, user, id, fg.NewEvent(user, target, op, v))
}

// changeKeys returns the keys lua/change.lua takes for user→target: the
// user's side, and on a standalone Redis the target's too.
func (g *Graph) changeKeys(user, target fg.UserID) []string {
	keys := []string{g.key(user, layout.Out), g.key(user, layout.OutVersions), g.key(user, layout.Counters), g.outbox(user), g.key(user, layout.Flags)}
	if !g.cluster {
		keys = append(keys, g.key(target, layout.In), g.key(target, layout.InVersions), g.key(target, layout.Counters))
	}
	return keys
}

// liveArgs returns the arguments lua/change.lua and lua/edge.lua take, up
// to the target's private flag (see edgeChange); rate is g.writeRate, or
// "0" for a change not charged to the user's rate.
func (g *Graph) liveArgs(op string, user, target fg.UserID, rate, private string) []string {
	now := max(g.now().UnixMilli(), 0)
	return []string{op, member(target), strconv.FormatInt(now, 10),
		strconv.Itoa(g.maxFollowing), strconv.Itoa(g.outboxLimit), user.String(), target.String(),
		rate, g.writeBurst, member(user), private}
}

// refused returns the error of a script's status that refused the change
// (nil for NONE and CHANGED).
func (g *Graph) refused(op string, user fg.UserID, status layout.Status, res []rueidis.RedisMessage) error {
	switch status {
	case layout.Limit:
		return fg.Errorf(fg.EFollowingLimit, "user %d already follows, or asked to follow, the maximum of %d users", user, g.maxFollowing)
	case layout.Full:
		return fmt.Errorf("redisgraph: %s: %w", op, &fg.Error{Code: fg.EUnavailable,
			Message: "the outbox is full: changes wait for the relay to catch up"})
	case layout.Lost:
		return fmt.Errorf("redisgraph: %s: %w", op, errDataLost)
	case layout.Rate:
		ms, _ := res[1].AsInt64()
		return fg.RateLimited(user, time.Duration(max(ms, 1))*time.Millisecond)
	case layout.Blocked:
		return fg.ErrBlocked
	case layout.NoRequest:
		return fg.Errorf(fg.ENoRequest, "no follow request to approve")
	case layout.UserInactive:
		return fg.ErrUserInactive
	case layout.TargetInactive:
		return fg.ErrTargetInactive
	case layout.None, layout.Changed:
		return nil
	}
	return unavailable(op, fmt.Errorf("unknown status %d", status))
}

// edgeChange makes op (see lua/edge.lua) of user with target. private is
// "1" or "0" when the caller knows whether target is private (on a
// Cluster, where the script cannot read it), "" to let the script read
// it; extra are the script's last arguments (a mute's duration, an undo's
// edge). On a Cluster the change's other side follows in a second step;
// if that step meets a block (a follow or request made while a block's
// second step was still on its way), the change is undone (undo) and
// edgeChange returns ErrBlocked.
func (g *Graph) edgeChange(ctx context.Context, op string, user, target fg.UserID, rate, private string, extra ...string) (changeResult, error) {
	before := g.epochsOf(user, target)
	keys := append(g.userKeys(make([]string, 0, 2*len(layout.UserKeys)+1), user), g.outbox(user))
	if !g.cluster && target != 0 {
		keys = g.userKeys(keys, target)
	}
	args := append(g.liveArgs(op, user, target, rate, private), "0", "", "")
	copy(args[11:], extra)
	res, err := g.exec(ctx, scriptEdge, keys, args).ToArray()
	if err != nil {
		return changeResult{}, unavailable(op, err)
	}
	status, err := statusOf(res[0])
	if err != nil {
		return changeResult{}, unavailable(op, err)
	}
	if err := g.refused(op, user, status, res); err != nil {
		return changeResult{}, err
	}
	var r changeResult
	word, err1 := res[2].ToString()
	since, err2 := res[3].AsInt64()
	expires, err3 := res[4].AsInt64()
	v, err4 := parseVersion(res[1])
	eop, ok := fg.ParseOp(word)
	if err := errors.Join(err1, err2, err3, err4); err != nil || !ok {
		return changeResult{}, unavailable(op, fmt.Errorf("reply %v: %w", res, err))
	}
	r = changeResult{changed: status == layout.Changed, v: v, op: eop}
	if since > 0 {
		r.since = fg.Millis(since)
	}
	if expires > 0 {
		r.expires = fg.Millis(expires)
	}
	e := fg.NewEvent(user, target, eop, v)
	if op == "approve" || op == "remove" || (op == "undo" && extra[2] == "i") {
		e.User, e.Target = target, user
	}
	if eop == fg.OpMute {
		e.Since, e.Expires = r.since, r.expires
	}
	if status == layout.None {
		// On a Cluster, make sure the other side has the edge's state
		// too, as change does (an undo that found nothing to undo has
		// nothing to complete).
		if g.cluster && v != 0 && hasOtherSide(e) && op != "undo" {
			g.secondStep(ctx, e, target)
		}
		return r, nil
	}
	id, _ := res[5].ToString()
	g.noteStamps(res[6:], user, target)
	return r, g.complete(ctx, before, user, id, e)
}

// hasOtherSide reports whether e changes edges on the side of its target
// too (mutes, settings and states do not).
func hasOtherSide(e fg.Event) bool {
	k := e.Op.Kind()
	return k != fg.KindMute && k != fg.KindPrivate && k != fg.KindState
}

// complete completes a change made on first's side, whose event e is entry
// id of first's outbox stream: on a Cluster the second step on the other
// user's side (undoing the change if that step meets a block: then it
// returns ErrBlocked, or ErrTargetInactive if the target of a follow or
// request is not active there), then the hook and the delete of the
// outbox entry. before holds the epochs of the change's slots as they were
// before the change was sent (epochsOf).
func (g *Graph) complete(ctx context.Context, before checkedRead, first fg.UserID, id string, e fg.Event) error {
	other := e.Target
	if other == first {
		other = e.User
	}
	settled := true
	var refused error
	if g.cluster && hasOtherSide(e) {
		settled, refused = g.secondStep(ctx, e, other)
	}
	if !settled || !g.cluster || !hasOtherSide(e) {
		before = before.only([]int{g.group(slotOf(first))})
	}
	if err := g.acknowledge(ctx, before, first, id, e, settled); err != nil {
		return err
	}
	if refused == nil {
		return nil
	}
	if err := g.undo(ctx, e, first); err != nil {
		return err
	}
	return refused
}

// acknowledge passes e to the hook and, once it took it and the change is
// settled, drops its outbox entry id of first's stream. Before it returns
// nil it checks that the servers the change was made on are still those
// whose epochs before holds (confirm).
func (g *Graph) acknowledge(ctx context.Context, before checkedRead, first fg.UserID, id string, e fg.Event, settled bool) error {
	if g.hook == nil {
		return nil
	}
	if err := g.hook(ctx, e); err != nil {
		return fmt.Errorf("redisgraph: %s: %w: %w", e.Op, errUnacknowledged, err)
	}
	if err := g.confirm(ctx, before); err != nil {
		return fmt.Errorf("redisgraph: %s: %w", e.Op, err)
	}
	if settled && id != "" {
		g.dropFromOutbox(first, id)
	}
	return nil
}

// undo ends, on the side of first, the follow or request that e turned on
// at e.Version, if it is still so: e's second step met a block on the
// other side (see edgeChange). The undo is a change of its own, with its
// event (an unfollow or unrequest at a newer version), second step and
// hook, so the log and the durable store converge on it too.
func (g *Graph) undo(ctx context.Context, e fg.Event, first fg.UserID) error {
	other, dir := e.Target, "o"
	if first != e.User {
		other, dir = e.User, "i"
	}
	kind := "f"
	if e.Op == fg.OpRequest {
		kind = "r"
	}
	if _, err := g.edgeChange(ctx, "undo", first, other, "0", "0", kind, versionHex(e.Version), dir); err != nil {
		return fmt.Errorf("redisgraph: undoing %s %s: %w", e.Op, e.ID(), err)
	}
	return nil
}

// epochsOf returns the epochs, as this Graph knows them now, of the slots
// of a change of user with target (target's too on a Cluster, for the
// second step; 0: none), for confirm.
func (g *Graph) epochsOf(user, target fg.UserID) checkedRead {
	var cr checkedRead
	cr.add(g, g.group(slotOf(user)))
	if g.cluster && target != 0 {
		cr.add(g, g.group(slotOf(target)))
	}
	return cr
}

// errReplaced is the error of a change made whose server was replaced or
// healed before it was acknowledged.
var errReplaced = &fg.Error{Code: fg.EUnavailable,
	Message: "the write is made but a Redis server failed over meanwhile: it may take effect; retry (writes are idempotent)"}

// errUnacknowledged is the error of a change made whose hook failed: it is
// in Redis and in its outbox, and the relay will move its event to the log,
// but it was not acknowledged.
var errUnacknowledged = &fg.Error{Code: fg.EUnavailable,
	Message: "the write is made but the event log did not acknowledge it: it may take effect; retry (writes are idempotent)"}

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
func (g *Graph) secondStep(ctx context.Context, e fg.Event, side fg.UserID) (done bool, refused error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), secondStepTimeout)
	defer cancel()
	wait := secondStepBackoff
	for attempt := 1; ; attempt++ {
		refused, err := g.secondStepOnce(ctx, e, side)
		if err == nil {
			return true, refused
		}
		if attempt == secondStepAttempts {
			g.deferred.Inc()
			return false, nil
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			g.deferred.Inc()
			return false, nil
		}
		wait *= 2
	}
}

func (g *Graph) secondStepOnce(ctx context.Context, e fg.Event, side fg.UserID) (refused, err error) {
	if g.secondStepFault != nil {
		if err := g.secondStepFault(e); err != nil {
			return nil, err
		}
	}
	check := layout.RefuseBlocks
	if e.Op == fg.OpFollow || e.Op == fg.OpRequest {
		check = layout.RefuseInactive
	}
	call := g.effectsCall(e, e.Effects, check, side)
	res, err := g.exec(ctx, scriptSecond, call.Keys, call.Args).ToArray()
	if err != nil {
		return nil, err
	}
	switch n, _ := statusOf(res[0]); n {
	case layout.Blocked:
		return fg.ErrBlocked, nil
	case layout.TargetInactive:
		return fg.ErrTargetInactive, nil
	}
	g.noteStamps(res[1:], side)
	var p statePairs
	p.note(e, e.Effects, res[2:]...)
	return nil, g.settlePairs(ctx, p)
}

// effectsCall returns the call of lua/effects.lua that applies effects (e's
// Effects, or some of them) of e on the sides of users (one or two of e's
// users), refusing what check says (layout.Refuse).
func (g *Graph) effectsCall(e fg.Event, effects iter.Seq[fg.Effect], check layout.Refuse, users ...fg.UserID) rueidis.LuaExec {
	var c rueidis.LuaExec
	c.Args = []string{versionHex(e.Version), string(check), millis(e.Since), millis(e.Expires), layout.Letters[e.Op.Kind()], ""}
	for i, u := range users {
		c.Keys = g.userKeys(c.Keys, u)
		n := len(c.Args)
		for eff := range effects {
			code := layout.Letters[eff.Kind]
			switch {
			case eff.Kind == fg.KindPrivate:
				if u != eff.User {
					continue
				}
			case u == eff.User:
				code += "o"
			case u == eff.Target && eff.Kind != fg.KindMute:
				code += "i"
			default:
				continue
			}
			other := ""
			if eff.Kind != fg.KindPrivate {
				other = member(eff.User)
				if u == eff.User {
					other = member(eff.Target)
				}
			}
			on := "0"
			if eff.On {
				on = "1"
			}
			c.Args = append(c.Args, code, other, on)
		}
		if i == 0 {
			c.Args[5] = strconv.Itoa((len(c.Args) - n) / 3)
		}
	}
	return c
}

// eventUsers returns the users whose sides e changes.
func eventUsers(e fg.Event) []fg.UserID {
	if hasOtherSide(e) {
		return []fg.UserID{e.User, e.Target}
	}
	return []fg.UserID{e.User}
}

// noteStamps notes the stamps a write script returned, one for each of ids
// (fewer when the script returned fewer).
func (g *Graph) noteStamps(stamps []rueidis.RedisMessage, ids ...fg.UserID) {
	for i, m := range stamps[:min(len(stamps), len(ids))] {
		if n, err := m.AsInt64(); err == nil {
			g.known.note(ids[i], n)
		}
	}
}

// Apply makes each effect of each event (followgraph.Event.Effects) unless
// its edge already has a change of an equal or higher version; see
// followgraph.Applier. It writes no outbox events, is not subject to the
// following limit and checks no block (the log holds what was decided).
// The events are validated first; an invalid one fails the batch before
// anything is written. The changes are pipelined; when Redis fails
// midway, some may have been made (Apply is idempotent: retry the batch).
// On a standalone Redis both users' sides of an event change in one
// step; on a Cluster each event is applied to the user's side, then to
// the target's.
func (g *Graph) Apply(ctx context.Context, events []fg.Event) error {
	for _, e := range events {
		if err := e.Validate(); err != nil {
			return err
		}
	}
	if len(events) == 0 {
		return nil
	}
	var calls, states []rueidis.LuaExec
	var owners [][]fg.UserID // the users of each call, for their stamps
	var stateOwners []fg.UserID
	var of []fg.Event // the event of each call
	for _, e := range events {
		if e.Op == fg.OpState {
			states = append(states, rueidis.LuaExec{Keys: []string{g.key(e.User, layout.Counters), g.jobsKey(e.User)},
				Args: []string{e.State.String(), versionHex(e.Version), e.User.String()}})
			stateOwners = append(stateOwners, e.User)
			continue
		}
		users := eventUsers(e)
		if !g.cluster {
			calls, owners = append(calls, g.effectsCall(e, e.Effects, layout.RefuseNothing, users...)), append(owners, users)
			continue
		}
		for _, u := range users {
			calls, owners = append(calls, g.effectsCall(e, e.Effects, layout.RefuseNothing, u)), append(owners, []fg.UserID{u})
			of = append(of, e)
		}
	}
	var p statePairs
	for i, r := range g.execMulti(ctx, scriptEffects, calls) {
		res, err := r.ToArray()
		if err != nil {
			return unavailable("apply", err)
		}
		g.noteStamps(res[1:], owners[i]...)
		if g.cluster {
			p.note(of[i], of[i].Effects, res[2:]...)
		}
	}
	if err := g.settlePairs(ctx, p); err != nil {
		return unavailable("apply", err)
	}
	if len(states) == 0 {
		return nil
	}
	for i, r := range g.execMulti(ctx, scriptApplyState, states) {
		res, err := r.ToArray()
		if err != nil {
			return unavailable("apply", err)
		}
		g.noteStamps(res[1:], stateOwners[i])
	}
	return nil
}

// applySecondSteps settles events taken from the outbox: it applies the
// effects of each again on both users' sides (Cluster only), pipelined;
// the side a change was made on has it already, and changes nothing. It
// returns how many changed anything. A follow or request whose side meets
// a block is undone on the other side (see edgeChange); an edge turned on
// with a user who is not active is settled on both sides (settlePairs),
// since the first step may have been made before that user's state
// changed and its job went by.
func (g *Graph) applySecondSteps(ctx context.Context, events []fg.Event) (int, error) {
	var calls []rueidis.LuaExec
	type owner struct {
		e    fg.Event
		side fg.UserID
	}
	var owners []owner
	for _, e := range events {
		if e.Op == fg.OpState {
			continue // a state is on its user's side only
		}
		for _, u := range eventUsers(e) {
			calls = append(calls, g.effectsCall(e, e.Effects, layout.RefuseBlocks, u))
			owners = append(owners, owner{e, u})
		}
	}
	changed := 0
	var errs []error
	var p statePairs
	for i, r := range g.execMulti(ctx, scriptSecond, calls) {
		res, err := r.ToArray()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		o := owners[i]
		switch n, _ := statusOf(res[0]); n {
		case layout.Changed:
			changed++
		case layout.Blocked:
			first := o.e.User
			if first == o.side {
				first = o.e.Target
			}
			if err := g.undo(ctx, o.e, first); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		g.noteStamps(res[1:], o.side)
		p.note(o.e, o.e.Effects, res[2:]...)
	}
	if err := g.settlePairs(ctx, p); err != nil {
		errs = append(errs, err)
	}
	return changed, errors.Join(errs...)
}

// versionHex writes v as the scripts do: 16 lowercase hex digits.
func versionHex(v fg.Version) string { return string(appendVersionHex(nil, v)) }

// appendVersionHex appends v as versionHex writes it.
func appendVersionHex(b []byte, v fg.Version) []byte {
	const digits = "0123456789abcdef"
	var h [16]byte
	for i := 15; i >= 0; i-- {
		h[i] = digits[v&15]
		v >>= 4
	}
	return append(b, h[:]...)
}

func parseVersion(m rueidis.RedisMessage) (fg.Version, error) {
	s, err := m.ToString()
	if err != nil {
		return 0, err
	}
	return parseVersionString(s)
}

// parseVersionString reads a version written by versionHex.
func parseVersionString(s string) (fg.Version, error) {
	n, err := strconv.ParseUint(s, 16, 64)
	if err != nil || len(s) != 16 {
		return 0, fmt.Errorf("version %q is not 16 hex digits", s)
	}
	return fg.Version(n), nil
}

// statusOf reads the status a write script returned first.
func statusOf(m rueidis.RedisMessage) (layout.Status, error) {
	n, err := m.AsInt64()
	return layout.Status(n), err
}
