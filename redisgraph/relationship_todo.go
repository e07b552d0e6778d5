package redisgraph

// TODO(issue 15): the relationships, not built yet in this package. This
// file is deleted by the change that builds them.

import (
	"context"
	"time"

	fg "github.com/followgraph/followgraph"
)

func todo() error { return fg.Errorf(fg.EInternal, "redisgraph: relationships are not built yet") }

func (g *Graph) Block(ctx context.Context, user, target fg.UserID) (fg.LinkResult, error) {
	return fg.LinkResult{}, todo()
}
func (g *Graph) Unblock(ctx context.Context, user, target fg.UserID) (bool, error) {
	return false, todo()
}
func (g *Graph) Mute(ctx context.Context, user, target fg.UserID, d time.Duration) (fg.LinkResult, error) {
	return fg.LinkResult{}, todo()
}
func (g *Graph) Unmute(ctx context.Context, user, target fg.UserID) (bool, error) {
	return false, todo()
}
func (g *Graph) Link(ctx context.Context, kind fg.Kind, user, target fg.UserID) (fg.Link, error) {
	return fg.Link{}, todo()
}
func (g *Graph) Links(ctx context.Context, list string, user fg.UserID, req fg.PageRequest) (fg.Page, error) {
	return fg.Page{}, todo()
}
func (g *Graph) Approve(ctx context.Context, user, requester fg.UserID) (fg.FollowResult, error) {
	return fg.FollowResult{}, todo()
}
func (g *Graph) RemoveFollower(ctx context.Context, user, follower fg.UserID) (bool, error) {
	return false, todo()
}
func (g *Graph) Settings(ctx context.Context, user fg.UserID) (fg.Settings, error) {
	return fg.Settings{}, todo()
}
func (g *Graph) SetPrivate(ctx context.Context, user fg.UserID, private bool) (fg.Settings, error) {
	return fg.Settings{}, todo()
}
