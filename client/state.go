package client

import (
	"context"
	"net/http"
	"time"

	"github.com/followgraph/followgraph"
)

// stateJSON is the body of GET and PUT /v1/users/{user}/state.
type stateJSON struct {
	ID      string  `json:"id"`
	State   string  `json:"state"`
	Since   *string `json:"since"`
	Pending int64   `json:"pending"`
}

type stateRequest struct {
	State string `json:"state"`
}

// State returns user's account state; see followgraph.Graph.
func (c *Client) State(ctx context.Context, user followgraph.UserID) (followgraph.AccountState, error) {
	return c.state(ctx, http.MethodGet, user, nil)
}

// SetState sets user's account state; see followgraph.Graph. With
// authentication it takes a service token with scope admin.
func (c *Client) SetState(ctx context.Context, user followgraph.UserID, s followgraph.State) (followgraph.AccountState, error) {
	if err := followgraph.CheckState(s); err != nil {
		return followgraph.AccountState{}, err
	}
	return c.state(ctx, http.MethodPut, user, stateRequest{State: s.String()})
}

func (c *Client) state(ctx context.Context, method string, user followgraph.UserID, body any) (followgraph.AccountState, error) {
	path := userPath(user, "state")
	var out stateJSON
	if err := c.do(ctx, method, path, "", body, &out); err != nil {
		return followgraph.AccountState{}, err
	}
	id, err := followgraph.ParseUserID(out.ID)
	if err != nil {
		return followgraph.AccountState{}, malformed(method, path, err)
	}
	st, ok := followgraph.ParseState(out.State)
	if !ok {
		return followgraph.AccountState{}, malformed(method, path, followgraph.Errorf(followgraph.EInvalidArgument, "unknown state %q", out.State))
	}
	a := followgraph.AccountState{ID: id, State: st, Pending: out.Pending}
	if out.Since != nil {
		if a.Since, err = time.Parse(time.RFC3339Nano, *out.Since); err != nil {
			return followgraph.AccountState{}, malformed(method, path, err)
		}
	}
	return a, nil
}
