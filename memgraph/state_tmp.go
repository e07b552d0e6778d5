package memgraph

import (
	"context"

	fg "github.com/followgraph/followgraph"
)

// TEMPORARY until the account-states branch of this package lands.

func (g *Graph) State(ctx context.Context, user fg.UserID) (fg.AccountState, error) {
	return fg.AccountState{}, fg.Errorf(fg.EUnavailable, "account states are not built yet")
}

func (g *Graph) SetState(ctx context.Context, user fg.UserID, s fg.State) (fg.AccountState, error) {
	return fg.AccountState{}, fg.Errorf(fg.EUnavailable, "account states are not built yet")
}
