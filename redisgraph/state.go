package redisgraph

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/rueidis"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/redisgraph/internal/errs"
	"github.com/followgraph/followgraph/redisgraph/internal/layout"
	"github.com/followgraph/followgraph/redisgraph/internal/scripts"
	"github.com/followgraph/followgraph/redisgraph/internal/wire"
)

// Account states (docs/design/states.md). A user's state is in
// its counters hash h: s, the state's word (none: active, never set), and
// sv, the version of its last change (lua/state.lua). Writes obey it at
// once (lua/change.lua, lua/edge.lua: user_inactive, target_inactive), and
// Counts of a user who is not active answer as for no edges. The job that
// hides and restores a user's edges (package jobs) is built on the archive
// step, in two steps a batch on a Cluster.

// inactive reports whether the read op about ids must stop: one of them
// is not active (read through the cache, readCounters), so that it
// answers as for a user with no edges, or their states could not be read
// (the error, op's EUnavailable).
func (g *Graph) inactive(ctx context.Context, op string, ids ...fg.UserID) (bool, error) {
	cs, err := g.readCounters(ctx, ids)
	if err != nil {
		return true, errs.Wrap(op, err)
	}
	for _, c := range cs {
		if !c.state.Active() {
			return true, nil
		}
	}
	return false, nil
}

// targetRefused checks, on a Cluster before a write's first step, the
// state of its target (t, its counters as readCounters read them through
// the cache), which is not on the user's slot: no follow of a user who is
// not active, and, when link is set (a block or a mute), none of a
// deleted one (ErrTargetInactive), unless user is not active itself
// (ErrUserInactive, which comes first, as on memgraph: read only then,
// since the scripts check the user's state on its own slot anyway). The
// second step checks the target's again (package effects).
func (g *Graph) targetRefused(ctx context.Context, op string, user fg.UserID, t counters, link bool) error {
	if link && t.state != fg.StateDeleted || !link && t.state.Active() {
		return nil
	}
	cs, err := g.readCounters(ctx, []fg.UserID{user})
	if err != nil {
		return errs.Wrap(op, err)
	}
	if !cs[0].state.Active() {
		return fg.ErrUserInactive
	}
	return fg.ErrTargetInactive
}

// State returns user's state, with the time it was set (zero: never set).
// Pending is, while the user is in the jobs set, what its job has left:
// for a hide, the edges still counted on its side; for a restore, its
// hidden edges (nh), those with a user still hidden included, which that
// user's restore shows; for a delete, both. It is 0 once the job is
// done.
func (g *Graph) State(ctx context.Context, user fg.UserID) (fg.AccountState, error) {
	if err := fg.CheckIDs(user); err != nil {
		return fg.AccountState{}, err
	}
	res, err := g.guard.Read(ctx, func() rueidis.Commands {
		return rueidis.Commands{
			g.c.B().Hmget().Key(g.ks.User(user, layout.Counters)).Field("s", "sv", "nh", "nout", "nin", "nbo", "nbi", "nro", "nri").Build(),
			g.c.B().Zscore().Key(g.ks.Jobs(user)).Member(user.String()).Build(),
		}
	})
	if err != nil {
		return fg.AccountState{}, errs.Wrap("state", err)
	}
	vals, err := res[0].ToArray()
	if err != nil || len(vals) != 9 {
		return fg.AccountState{}, errs.Wrap("state", fmt.Errorf("reply %v: %w", vals, err))
	}
	st := fg.AccountState{ID: user}
	if word, err := vals[0].ToString(); err == nil {
		var ok bool
		if st.State, ok = fg.ParseState(word); !ok {
			return fg.AccountState{}, errs.Wrap("state", fmt.Errorf("state %q of user %d is not a state", word, user))
		}
		v, err := wire.Version(vals[1])
		if err != nil {
			return fg.AccountState{}, errs.Wrap("state", err)
		}
		st.Since = v.Time()
	}
	if _, err := res[1].AsFloat64(); err == nil {
		hidden, _ := vals[2].AsInt64()
		var shown int64
		for _, c := range vals[3:] {
			n, _ := c.AsInt64()
			shown += n
		}
		switch st.State {
		case fg.StateActive:
			st.Pending = hidden
		case fg.StateDeleted:
			st.Pending = shown + hidden
		default:
			st.Pending = shown
		}
	}
	return st, nil
}

// SetState sets user's state, and RunJobs runs its job; see
// followgraph.Graph. The change is lua/state.lua: the state, its event in
// the outbox and the user in the jobs set, in one step on the user's slot,
// then the hook, as every live change. Setting the state user has changes
// nothing; a deleted user's is final (ErrTargetInactive).
func (g *Graph) SetState(ctx context.Context, user fg.UserID, s fg.State) (fg.AccountState, error) {
	if err := fg.CheckIDs(user); err != nil {
		return fg.AccountState{}, err
	}
	if err := fg.CheckState(s); err != nil {
		return fg.AccountState{}, err
	}
	if g.gate != nil {
		if err := g.gate(ctx); err != nil {
			return fg.AccountState{}, fmt.Errorf("redisgraph: state: %w", err)
		}
	}
	before := g.ticket(user, 0)
	now := max(g.now().UnixMilli(), 0)
	call := scripts.State.Call(scripts.StateKeys{H: g.ks.User(user, layout.Counters), Outbox: g.ks.Outbox(user), Jobs: g.ks.Jobs(user)},
		scripts.StateArgs{State: s.String(), Now: strconv.FormatInt(now, 10), OutboxLimit: strconv.Itoa(g.outboxLimit), User: user.String(),
			Region: strconv.Itoa(g.region)})
	res, err := g.lua.Exec(ctx, call).ToArray()
	if err != nil {
		return fg.AccountState{}, errs.Wrap("state", err)
	}
	status, err := wire.Status(res[0])
	if err != nil {
		return fg.AccountState{}, errs.Wrap("state", err)
	}
	if err := g.refused("state", user, status, res); err != nil {
		return fg.AccountState{}, err
	}
	if status == layout.Changed {
		v, err := wire.Version(res[1])
		if err != nil {
			return fg.AccountState{}, errs.Wrap("state", err)
		}
		id, _ := res[2].ToString()
		g.known.NoteReplies(res[3:], user)
		g.jobs.Wake()
		if err := g.complete(ctx, before, user, id, fg.NewStateEvent(user, s, v)); err != nil {
			return fg.AccountState{}, err
		}
	}
	return g.State(ctx, user)
}
