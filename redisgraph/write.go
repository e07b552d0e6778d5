package redisgraph

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/redisgraph/internal/effects"
	"github.com/followgraph/followgraph/redisgraph/internal/errs"
	"github.com/followgraph/followgraph/redisgraph/internal/guard"
	"github.com/followgraph/followgraph/redisgraph/internal/layout"
	"github.com/followgraph/followgraph/redisgraph/internal/scripts"
	"github.com/followgraph/followgraph/redisgraph/internal/wire"
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
	if g.ks.Cluster() {
		cs, err := g.readCounters(ctx, []fg.UserID{target})
		if err != nil {
			return fg.FollowResult{}, errs.Wrap("follow", err)
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
	before := g.ticket(user, target)
	args := g.liveArgs(op.String(), user, target, g.writeRate, private)
	res, err := g.lua.Exec(ctx, scripts.Change.Call(g.changeKeys(user, target), args)).ToArray()
	if err != nil {
		return changeResult{}, errs.Wrap(op.String(), err)
	}
	status, err := wire.Status(res[0])
	if err != nil {
		return changeResult{}, errs.Wrap(op.String(), err)
	}
	if status == layout.Slow {
		return g.edgeChange(ctx, op.String(), user, target, g.writeRate, private, scripts.EdgeArgs{})
	}
	if err := g.refused(op.String(), user, status, res); err != nil {
		return changeResult{}, err
	}
	v, err := wire.Version(res[1])
	if err != nil {
		return changeResult{}, errs.Wrap(op.String(), err)
	}
	r := changeResult{changed: status == layout.Changed, v: v, op: op}
	if op == fg.OpFollow {
		r.since = v.Time()
	}
	if status == layout.None {
		// The edge is already in op's state. On a Cluster, make sure its
		// other side is too.
		if g.ks.Cluster() && v != 0 {
			g.fx.SecondStep(ctx, fg.NewEvent(user, target, op, v), target)
		}
		return r, nil
	}
	id, _ := res[2].ToString()
	g.known.NoteReplies(res[3:], user, target)
	return r, g.complete(ctx, before, user, id, fg.NewEvent(user, target, op, v))
}

// changeKeys returns the keys lua/change.lua takes for user→target: the
// user's side, and on a standalone Redis the target's too.
func (g *Graph) changeKeys(user, target fg.UserID) scripts.ChangeKeys {
	keys := scripts.ChangeKeys{Out: g.ks.User(user, layout.Out), Ov: g.ks.User(user, layout.OutVersions), H: g.ks.User(user, layout.Counters),
		Outbox: g.ks.Outbox(user), Rf: g.ks.User(user, layout.Flags)}
	if !g.ks.Cluster() {
		keys.Tin, keys.Tiv, keys.Th = g.ks.User(target, layout.In), g.ks.User(target, layout.InVersions), g.ks.User(target, layout.Counters)
	}
	return keys
}

// liveArgs returns the arguments lua/change.lua takes, which lua/edge.lua
// takes first; rate is g.writeRate, or "0" for a change not charged to
// the user's rate, and private as edgeChange takes it.
func (g *Graph) liveArgs(op string, user, target fg.UserID, rate, private string) scripts.ChangeArgs {
	now := max(g.now().UnixMilli(), 0)
	return scripts.ChangeArgs{Op: op, Member: wire.Member(target), Now: strconv.FormatInt(now, 10),
		MaxFollowing: strconv.Itoa(g.maxFollowing), OutboxLimit: strconv.Itoa(g.outboxLimit), User: user.String(), Target: target.String(),
		Rate: rate, Burst: g.writeBurst, UserMember: wire.Member(user), Private: private, Region: strconv.Itoa(g.region)}
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
		return fmt.Errorf("redisgraph: %s: %w", op, errs.DataLost)
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
	return errs.Wrap(op, fmt.Errorf("unknown status %d", status))
}

// edgeChange makes op (see lua/edge.lua) of user with target. private is
// "1" or "0" when the caller knows whether target is private (on a
// Cluster, where the script cannot read it), "" to let the script read
// it; x holds the script's last arguments (a mute's duration, an undo's
// edge), the others of x are ignored. On a Cluster the change's other side follows in a second step;
// if that step meets a block (a follow or request made while a block's
// second step was still on its way), the change is undone (undo) and
// edgeChange returns ErrBlocked.
func (g *Graph) edgeChange(ctx context.Context, op string, user, target fg.UserID, rate, private string, x scripts.EdgeArgs) (changeResult, error) {
	before := g.ticket(user, target)
	keys := scripts.EdgeKeys{User: g.ks.UserKeys(user), Outbox: g.ks.Outbox(user)}
	if !g.ks.Cluster() && target != 0 {
		keys.Target = g.ks.UserKeys(target)
	}
	x.ChangeArgs = g.liveArgs(op, user, target, rate, private)
	if x.Mute == "" {
		x.Mute = "0"
	}
	res, err := g.lua.Exec(ctx, scripts.Edge.Call(keys, x)).ToArray()
	if err != nil {
		return changeResult{}, errs.Wrap(op, err)
	}
	status, err := wire.Status(res[0])
	if err != nil {
		return changeResult{}, errs.Wrap(op, err)
	}
	if err := g.refused(op, user, status, res); err != nil {
		return changeResult{}, err
	}
	var r changeResult
	word, err1 := res[2].ToString()
	since, err2 := res[3].AsInt64()
	expires, err3 := res[4].AsInt64()
	v, err4 := wire.Version(res[1])
	eop, ok := fg.ParseOp(word)
	if err := errors.Join(err1, err2, err3, err4); err != nil || !ok {
		return changeResult{}, errs.Wrap(op, fmt.Errorf("reply %v: %w", res, err))
	}
	r = changeResult{changed: status == layout.Changed, v: v, op: eop}
	if since > 0 {
		r.since = fg.Millis(since)
	}
	if expires > 0 {
		r.expires = fg.Millis(expires)
	}
	e := fg.NewEvent(user, target, eop, v)
	if op == layout.OpApprove || op == layout.OpRemove || (op == layout.OpUndo && x.UndoDir == layout.DirIn) {
		e.User, e.Target = target, user
	}
	if eop == fg.OpMute {
		e.Since, e.Expires = r.since, r.expires
	}
	if status == layout.None {
		// On a Cluster, make sure the other side has the edge's state
		// too, as change does (an undo that found nothing to undo has
		// nothing to complete).
		if g.ks.Cluster() && v != 0 && effects.HasOtherSide(e) && op != "undo" {
			g.fx.SecondStep(ctx, e, target)
		}
		return r, nil
	}
	id, _ := res[5].ToString()
	g.known.NoteReplies(res[6:], user, target)
	return r, g.complete(ctx, before, user, id, e)
}

// complete completes a change made on first's side, whose event e is entry
// id of first's outbox stream: on a Cluster the second step on the other
// user's side (undoing the change if that step meets a block: then it
// returns ErrBlocked, or ErrTargetInactive if the target of a follow or
// request is not active there), then the hook and the delete of the
// outbox entry. before holds the epochs of the change's slots as they were
// before the change was sent (epochsOf).
func (g *Graph) complete(ctx context.Context, before guard.Ticket, first fg.UserID, id string, e fg.Event) error {
	other := e.Target
	if other == first {
		other = e.User
	}
	settled := true
	var refused error
	if g.ks.Cluster() && effects.HasOtherSide(e) {
		settled, refused = g.fx.SecondStep(ctx, e, other)
	}
	if !settled || !g.ks.Cluster() || !effects.HasOtherSide(e) {
		before = g.guard.Of(before, first)
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
func (g *Graph) acknowledge(ctx context.Context, before guard.Ticket, first fg.UserID, id string, e fg.Event, settled bool) error {
	if g.hook == nil {
		return nil
	}
	if err := g.hook(ctx, e); err != nil {
		return fmt.Errorf("redisgraph: %s: %w: %w", e.Op, errs.Unacknowledged, err)
	}
	if err := g.guard.Confirm(ctx, before); err != nil {
		return fmt.Errorf("redisgraph: %s: %w", e.Op, err)
	}
	if settled && id != "" {
		g.drops.Drop(g.ks.Outbox(first), id)
	}
	return nil
}

// undo ends, on the side of first, the follow or request that e turned on
// at e.Version, if it is still so: e's second step met a block on the
// other side (see edgeChange). The undo is a change of its own, with its
// event (an unfollow or unrequest at a newer version), second step and
// hook, so the log and the durable store converge on it too.
func (g *Graph) undo(ctx context.Context, e fg.Event, first fg.UserID) error {
	x := scripts.EdgeArgs{UndoKind: layout.Letters[e.Op.Kind()], UndoVersion: wire.VersionHex(e.Version), UndoDir: layout.DirOut}
	other := e.Target
	if first != e.User {
		other, x.UndoDir = e.User, layout.DirIn
	}
	if _, err := g.edgeChange(ctx, layout.OpUndo, first, other, "0", "0", x); err != nil {
		return fmt.Errorf("redisgraph: undoing %s %s: %w", e.Op, e.ID(), err)
	}
	return nil
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
	h, err := g.TombstoneHorizon(ctx)
	if err != nil {
		return errs.Wrap("apply", err)
	}
	return g.fx.Apply(ctx, events, wire.VersionHex(h))
}
