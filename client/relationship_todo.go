package client

// TODO(issue 15): the relationships, not built yet in this package. This
// file is deleted by the change that builds them.

import (
	"context"
	"time"

	fg "github.com/followgraph/followgraph"
)

func todo() error { return fg.Errorf(fg.EInternal, "client: relationships are not built yet") }

func (c *Client) Block(ctx context.Context, user, target fg.UserID) (fg.LinkResult, error) {
	return fg.LinkResult{}, todo()
}
func (c *Client) Unblock(ctx context.Context, user, target fg.UserID) (bool, error) {
	return false, todo()
}
func (c *Client) Mute(ctx context.Context, user, target fg.UserID, d time.Duration) (fg.LinkResult, error) {
	return fg.LinkResult{}, todo()
}
func (c *Client) Unmute(ctx context.Context, user, target fg.UserID) (bool, error) {
	return false, todo()
}
func (c *Client) Link(ctx context.Context, kind fg.Kind, user, target fg.UserID) (fg.Link, error) {
	return fg.Link{}, todo()
}
func (c *Client) Links(ctx context.Context, list string, user fg.UserID, req fg.PageRequest) (fg.Page, error) {
	return fg.Page{}, todo()
}
func (c *Client) Approve(ctx context.Context, user, requester fg.UserID) (fg.FollowResult, error) {
	return fg.FollowResult{}, todo()
}
func (c *Client) RemoveFollower(ctx context.Context, user, follower fg.UserID) (bool, error) {
	return false, todo()
}
func (c *Client) Settings(ctx context.Context, user fg.UserID) (fg.Settings, error) {
	return fg.Settings{}, todo()
}
func (c *Client) SetPrivate(ctx context.Context, user fg.UserID, private bool) (fg.Settings, error) {
	return fg.Settings{}, todo()
}
