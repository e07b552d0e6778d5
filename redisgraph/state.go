package redisgraph

import (
	"context"

	fg "github.com/followgraph/followgraph"
)

// checkNoState refuses an event that sets a state other than active:
// replaying it here would show a user who must be hidden, so Apply and
// Rebuild stop before writing anything of their batch.
func checkNoState(e fg.Event) error {
	if e.Op == fg.OpState && !e.State.Active() {
		return fg.Errorf(fg.EUnavailable, "redisgraph: user %d is %s, and account states are not built on Redis yet", e.User, e.State)
	}
	return nil
}

// Account states are not built in any engine yet (docs/DESIGN.md "Account
// states"): every user is active here, and a change of state is refused
// before anything changes, so that no Redis deployment hides or loses an
// edge by a job it cannot run.

// State returns user's state: active, never set.
func (g *Graph) State(ctx context.Context, user fg.UserID) (fg.AccountState, error) {
	if err := fg.CheckIDs(user); err != nil {
		return fg.AccountState{}, err
	}
	return fg.AccountState{ID: user}, nil
}

// SetState refuses every change of state with EUnavailable; setting
// active, the state every user has here, changes nothing.
func (g *Graph) SetState(ctx context.Context, user fg.UserID, s fg.State) (fg.AccountState, error) {
	if err := fg.CheckIDs(user); err != nil {
		return fg.AccountState{}, err
	}
	if err := fg.CheckState(s); err != nil {
		return fg.AccountState{}, err
	}
	if s.Active() {
		return fg.AccountState{ID: user}, nil
	}
	return fg.AccountState{}, fg.Errorf(fg.EUnavailable, "account states are not available yet: no engine runs their jobs")
}
