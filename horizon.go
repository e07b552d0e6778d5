package followgraph

import (
	"context"
	"fmt"
)

// TombstonePurger is implemented by the holders of tombstones that can
// remove them: the durable stores and memgraph. A tombstone (an edge that
// is off, kept with the version that turned it off) is what stops an older
// "on" arriving late from bringing the edge back, so one may go only once
// no change older than it can still arrive; the caller of PurgeTombstones
// vouches for that (docs/design/horizon.md says how serve knows).
//
// Each holder keeps a tombstone horizon: every tombstone with a version
// below it may be gone. It only grows, and a holder never applies as new a
// change below it to an edge between two users of which it keeps no
// record (neither on nor off): such a change is refused (a Refusal),
// since the edge's tombstone, newer than the change, may have been
// removed. A user's settings (private, state) are not edges: their
// records are never removed, and changes to them never refused.
type TombstonePurger interface {
	// TombstoneHorizon returns the holder's tombstone horizon: 0 for a
	// holder that never removed a tombstone.
	TombstoneHorizon(ctx context.Context) (Version, error)

	// PurgeTombstones removes at most limit tombstones of edges between
	// two users with a version below below, oldest first where the
	// holder has an order, and raises the tombstone horizon to just above
	// the newest it removes, no later than it removes it (in the same
	// transaction, for a store). It never removes an edge that is on,
	// nor a hidden one (the edge of a user who is not active, kept to be
	// restored). It returns how many it removed, and more: some may be
	// left below below, for the next call. Each call is one bounded step
	// (one transaction of a store, one lock stripe at a time in
	// memgraph), so a caller purges in steps with pauses between them,
	// and the holder's other work goes on meanwhile.
	PurgeTombstones(ctx context.Context, below Version, limit int) (removed int, more bool, err error)

	// RaiseTombstoneHorizon raises the tombstone horizon to h (a lower h
	// leaves it as it is) and removes nothing: for a holder filled from
	// another whose horizon is h (memgraph loaded from the durable
	// store), which lacks what that one removed.
	RaiseTombstoneHorizon(ctx context.Context, h Version) error
}

// Refusal is a change a holder did not apply: one edge an event sets (an
// Effect), older than the holder's tombstone horizon, of which the holder
// keeps no record. Its tombstone, newer than the change, may have been
// removed, so applying it as new could bring back an edge that a later
// change ended. It is an error of code EBeforeHorizon.
type Refusal struct {
	Effect
	Version Version // the change's
	Horizon Version // the holder's tombstone horizon
}

// Error returns the refusal as a message naming the edge, the change's
// time and the horizon's.
func (r Refusal) Error() string { return r.Err().Error() }

// Unwrap returns the refusal's *Error, so that ErrorCode finds its code.
func (r Refusal) Unwrap() error { return r.Err() }

// Err returns the EBeforeHorizon error of the refusal.
func (r Refusal) Err() *Error {
	what := fmt.Sprintf("%d→%d", r.User, r.Target)
	if !r.Kind.Info().Edge {
		what = fmt.Sprintf("user %d", r.User)
	}
	return Errorf(EBeforeHorizon, "the %s of %s at %s is older than the tombstone horizon %s, and no record of that edge is kept: "+
		"a later change of it may have been forgotten with its tombstone, so this one is not applied",
		OpOf(r.Kind, r.On), what, r.Version.Time().Format(TimeFormat), r.Horizon.Time().Format(TimeFormat))
}
