package redisgraph

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	fg "github.com/followgraph/followgraph"
)

// A second step (Cluster only) is tried secondStepAttempts times, waiting
// secondStepBackoff, then twice as long each time; if every attempt fails
// the write still succeeds and the step is left to Outbox.Settle or Repair.
const (
	secondStepAttempts = 5
	secondStepBackoff  = 2 * time.Millisecond
	secondStepTimeout  = 5 * time.Second
)

// The status lua/change.lua returns first, as its locals name them.
const (
	// changeNone (NONE): nothing to change, the edge is already in the
	// op's state; the reply also holds the edge's version.
	changeNone = 0
	// changeMade (CHANGED): the edge changed; the reply also holds the new
	// version, the event's outbox entry id and the change stamps.
	changeMade = 1
	// changeLimit (LIMIT): refused, the follower follows the maximum.
	changeLimit = -1
	// changeOutboxFull (FULL): refused, the outbox stream is at its bound.
	changeOutboxFull = -2
	// changeDataLost (LOST): refused, the outbox stream does not exist, so
	// Redis has lost its data (init.go).
	changeDataLost = -3
	// changeRateLimited (RATE): refused, the follower is over its write
	// rate (WithWriteRate); the reply also holds the ms until a token is
	// there.
	changeRateLimited = -4
)

// Follow makes user follow target; see followgraph.Graph. The change, its
// version and its event in the outbox are one atomic step on the
// follower's slot. It returns EUnavailable, having changed nothing, when
// the outbox is full or Redis cannot be reached (a write whose reply was
// lost may have been made; a retry is idempotent).
func (g *Graph) Follow(ctx context.Context, user, target fg.UserID) (fg.FollowResult, error) {
	if err := fg.CheckIDs(user, target); err != nil {
		return fg.FollowResult{}, err
	}
	if user == target {
		return fg.FollowResult{}, fg.ErrSelfFollow
	}
	changed, v, err := g.change(ctx, user, target, fg.OpFollow)
	if err != nil {
		return fg.FollowResult{}, err
	}
	return fg.FollowResult{Created: changed, Since: v.Time()}, nil
}

// Unfollow makes user stop following target; see followgraph.Graph and
// Follow.
func (g *Graph) Unfollow(ctx context.Context, user, target fg.UserID) (bool, error) {
	if err := fg.CheckIDs(user, target); err != nil {
		return false, err
	}
	if user == target {
		return false, nil
	}
	changed, _, err := g.change(ctx, user, target, fg.OpUnfollow)
	return changed, err
}

// change makes op on user→target unless it would change nothing (see
// lua/change.lua). It returns whether it changed the edge, and the edge's
// version: the new one, or the one already there.
//
// On a Cluster the followee's side follows in a second step. When there
// was nothing to change, the second step is still run with the edge's
// version, so that a write repeated after a failed second step completes it.
func (g *Graph) change(ctx context.Context, user, target fg.UserID, op fg.Op) (bool, fg.Version, error) {
	if g.gate != nil {
		if err := g.gate(ctx); err != nil {
			return false, 0, fmt.Errorf("redisgraph: %s: %w", op, err)
		}
	}
	now := max(g.now().UnixMilli(), 0)
	keys := []string{g.key(user, kindOut), g.key(user, kindOutVer), g.key(user, kindCounters), g.outbox(user)}
	args := []string{op.String(), member(target), strconv.FormatInt(now, 10),
		strconv.Itoa(g.maxFollowing), strconv.Itoa(g.outboxLimit), user.String(), target.String(),
		g.writeRate, g.writeBurst}
	if !g.cluster {
		keys = append(keys, g.key(target, kindIn), g.key(target, kindInVer), g.key(target, kindCounters))
		args = append(args, member(user))
	}
	res, err := scriptChange.exec(ctx, g.c, keys, args).ToArray()
	if err != nil {
		return false, 0, unavailable(op.String(), err)
	}
	status, err := res[0].AsInt64()
	if err != nil {
		return false, 0, unavailable(op.String(), err)
	}
	switch status {
	case changeLimit:
		return false, 0, fg.Errorf(fg.EFollowingLimit, "user %d already follows the maximum of %d users", user, g.maxFollowing)
	case changeOutboxFull:
		return false, 0, fmt.Errorf("redisgraph: %s: %w", op, &fg.Error{Code: fg.EUnavailable,
			Message: "the outbox is full: changes wait for the relay to catch up"})
	case changeDataLost:
		return false, 0, fmt.Errorf("redisgraph: %s: %w", op, errDataLost)
	case changeRateLimited:
		ms, _ := res[1].AsInt64()
		return false, 0, fg.RateLimited(user, time.Duration(max(ms, 1))*time.Millisecond)
	}
	v, err := parseVersion(res[1])
	if err != nil {
		return false, 0, unavailable(op.String(), err)
	}
	if status == changeNone {
		// The edge is already in op's state. On a Cluster, make sure its
		// other side is too.
		if g.cluster && v != 0 {
			g.secondStep(ctx, fg.NewEvent(user, target, op, v))
		}
		return false, v, nil
	}
	id, _ := res[2].ToString()
	g.noteStamps(res[3:], user, target)
	e := fg.NewEvent(user, target, op, v)
	settled := true
	if g.cluster {
		settled = g.secondStep(ctx, e)
	}
	if g.hook != nil {
		if err := g.hook(ctx, e); err != nil {
			return false, 0, fmt.Errorf("redisgraph: %s: %w: %w", op, errUnacknowledged, err)
		}
		if settled && id != "" {
			g.dropFromOutbox(user, id)
		}
	}
	return true, v, nil
}

// errUnacknowledged is the error of a change made whose hook failed: it is
// in Redis and in its outbox, and the relay will move its event to the log,
// but it was not acknowledged.
var errUnacknowledged = &fg.Error{Code: fg.EUnavailable,
	Message: "the write is made but the event log did not acknowledge it: it may take effect; retry (writes are idempotent)"}

// secondStep applies e on the followee's side (Cluster only), retrying
// with backoff, and reports whether it is done; after the last attempt
// fails it counts the step as deferred and leaves it to the outbox
// (Outbox.Settle, Repair). It goes on
// when ctx is cancelled: the first step is done, and the caller hanging up
// must not leave the second undone.
func (g *Graph) secondStep(ctx context.Context, e fg.Event) (done bool) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), secondStepTimeout)
	defer cancel()
	wait := secondStepBackoff
	for attempt := 1; ; attempt++ {
		err := g.secondStepOnce(ctx, e)
		if err == nil {
			return true
		}
		if attempt == secondStepAttempts {
			g.deferred.Inc()
			return false
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			g.deferred.Inc()
			return false
		}
		wait *= 2
	}
}

func (g *Graph) secondStepOnce(ctx context.Context, e fg.Event) error {
	if g.secondStepFault != nil {
		if err := g.secondStepFault(e); err != nil {
			return err
		}
	}
	res, err := scriptSecond.exec(ctx, g.c, g.secondKeys(e.Target), secondArgs(e)).ToArray()
	if err != nil {
		return err
	}
	g.noteStamps(res[1:], e.Target)
	return nil
}

func (g *Graph) secondKeys(target fg.UserID) []string {
	return []string{g.key(target, kindIn), g.key(target, kindInVer), g.key(target, kindCounters)}
}

func secondArgs(e fg.Event) []string {
	return []string{member(e.User), versionHex(e.Version), e.Op.String()}
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

// Apply makes each event's change unless its edge already has a change of
// an equal or higher version; see followgraph.Applier. It writes no outbox
// events and is not subject to the following limit. The events are
// validated first; an invalid one fails the batch before anything is
// written. The changes are pipelined; when Redis fails midway, some may
// have been made (Apply is idempotent: retry the batch). On a Cluster each
// event is applied to the follower's side, then to the followee's.
func (g *Graph) Apply(ctx context.Context, events []fg.Event) error {
	for _, e := range events {
		if err := e.Validate(); err != nil {
			return err
		}
	}
	if len(events) == 0 {
		return nil
	}
	calls := make([]rueidis.LuaExec, len(events))
	for i, e := range events {
		calls[i] = rueidis.LuaExec{
			Keys: []string{g.key(e.User, kindOut), g.key(e.User, kindOutVer), g.key(e.User, kindCounters)},
			Args: []string{member(e.Target), versionHex(e.Version), e.Op.String()},
		}
		if !g.cluster {
			calls[i].Keys = append(calls[i].Keys, g.secondKeys(e.Target)...)
			calls[i].Args = append(calls[i].Args, member(e.User))
		}
	}
	for i, r := range scriptApply.execMulti(ctx, g.c, calls) {
		res, err := r.ToArray()
		if err != nil {
			return unavailable("apply", err)
		}
		g.noteStamps(res, events[i].User, events[i].Target)
	}
	if !g.cluster {
		return nil
	}
	if _, err := g.applySecondSteps(ctx, events); err != nil {
		return unavailable("apply", err)
	}
	return nil
}

// applySecondSteps applies the followee's side of each event, pipelined,
// and returns how many changed anything.
func (g *Graph) applySecondSteps(ctx context.Context, events []fg.Event) (int, error) {
	calls := make([]rueidis.LuaExec, len(events))
	for i, e := range events {
		calls[i] = rueidis.LuaExec{Keys: g.secondKeys(e.Target), Args: secondArgs(e)}
	}
	changed := 0
	var errs []error
	for i, r := range scriptSecond.execMulti(ctx, g.c, calls) {
		res, err := r.ToArray()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if n, _ := res[0].AsInt64(); n == 1 {
			changed++
		}
		g.noteStamps(res[1:], events[i].Target)
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
