package client

import (
	"context"

	"github.com/followgraph/followgraph"
)

// TEMPORARY until the account-states branch of this package lands.

func (c *Client) State(ctx context.Context, user followgraph.UserID) (followgraph.AccountState, error) {
	return followgraph.AccountState{}, followgraph.Errorf(followgraph.EUnavailable, "account states are not built yet")
}

func (c *Client) SetState(ctx context.Context, user followgraph.UserID, s followgraph.State) (followgraph.AccountState, error) {
	return followgraph.AccountState{}, followgraph.Errorf(followgraph.EUnavailable, "account states are not built yet")
}
