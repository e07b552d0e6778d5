package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/followgraph/followgraph"
)

// Block makes user block target, ending the follows and follow requests
// between them; see followgraph.Graph and Follow.
func (c *Client) Block(ctx context.Context, user, target followgraph.UserID) (followgraph.LinkResult, error) {
	return c.makeLink(ctx, followgraph.ListBlocks, user, target, nil)
}

// Unblock ends user's block of target; see followgraph.Graph and Follow.
func (c *Client) Unblock(ctx context.Context, user, target followgraph.UserID) (bool, error) {
	return c.removeLink(ctx, followgraph.ListBlocks, user, target)
}

// Mute makes user mute target for d, 0 for until unmuted; see
// followgraph.Graph and Follow. The API takes whole milliseconds: a d that
// is not is code invalid_argument, asked of no server.
func (c *Client) Mute(ctx context.Context, user, target followgraph.UserID, d time.Duration) (followgraph.LinkResult, error) {
	var body any
	switch {
	case d%time.Millisecond != 0:
		return followgraph.LinkResult{}, followgraph.Errorf(followgraph.EInvalidArgument, "mute duration %s: the API takes whole milliseconds", d)
	case d%time.Second == 0 && d != 0:
		body = muteSeconds{int64(d / time.Second)}
	case d != 0:
		body = muteMillis{int64(d / time.Millisecond)}
	}
	return c.makeLink(ctx, followgraph.ListMutes, user, target, body)
}

// Unmute ends user's mute of target; see followgraph.Graph and Follow.
func (c *Client) Unmute(ctx context.Context, user, target followgraph.UserID) (bool, error) {
	return c.removeLink(ctx, followgraph.ListMutes, user, target)
}

func (c *Client) makeLink(ctx context.Context, kind string, user, target followgraph.UserID, body any) (followgraph.LinkResult, error) {
	path := userPath(user, kind, target.String())
	var out linkJSON
	if err := c.do(ctx, http.MethodPut, path, "", body, &out); err != nil {
		return followgraph.LinkResult{}, err
	}
	l, err := out.link(kind)
	if err != nil || !l.On || l.Since.IsZero() {
		return followgraph.LinkResult{}, malformed(http.MethodPut, path, err)
	}
	return followgraph.LinkResult{Created: out.Created, Since: l.Since, Expires: l.Expires}, nil
}

func (c *Client) removeLink(ctx context.Context, kind string, user, target followgraph.UserID) (bool, error) {
	path := userPath(user, kind, target.String())
	var out linkJSON
	if err := c.do(ctx, http.MethodDelete, path, "", nil, &out); err != nil {
		return false, err
	}
	if l, err := out.link(kind); err != nil || l.On {
		return false, malformed(http.MethodDelete, path, err)
	}
	return out.Removed, nil
}

// Link reports user's block or mute of target, or user's follow request
// to target; see followgraph.Graph. A kind other than KindBlock, KindMute
// and KindRequest is code invalid_argument, asked of no server.
func (c *Client) Link(ctx context.Context, kind followgraph.Kind, user, target followgraph.UserID) (followgraph.Link, error) {
	var path, name string
	switch kind {
	case followgraph.KindBlock:
		name, path = followgraph.ListBlocks, userPath(user, followgraph.ListBlocks, target.String())
	case followgraph.KindMute:
		name, path = followgraph.ListMutes, userPath(user, followgraph.ListMutes, target.String())
	case followgraph.KindRequest:
		// The API names a request from the side of its target.
		name, path = followgraph.ListFollowRequests, userPath(target, followgraph.ListFollowRequests, user.String())
	default:
		return followgraph.Link{}, followgraph.Errorf(followgraph.EInvalidArgument, "link of kind %s: want block, mute or request", kind)
	}
	var out linkJSON
	if err := c.do(ctx, http.MethodGet, path, "", nil, &out); err != nil {
		return followgraph.Link{}, err
	}
	l, err := out.link(name)
	if err != nil || l.On == l.Since.IsZero() {
		return followgraph.Link{}, malformed(http.MethodGet, path, err)
	}
	return l, nil
}

// link returns the edge that an answer about one edge describes, of the
// kind of list (ListBlocks, ListMutes or ListFollowRequests, the segment
// of its path), or an error when it does not say whether the edge is on.
func (out linkJSON) link(list string) (followgraph.Link, error) {
	on := map[string]*bool{followgraph.ListBlocks: out.Blocking, followgraph.ListMutes: out.Muting, followgraph.ListFollowRequests: out.Requested}[list]
	since, err1 := parseNullTime(out.Since)
	expires, err2 := parseNullTime(out.ExpiresAt)
	if err := errors.Join(err1, err2); err != nil {
		return followgraph.Link{}, err
	}
	if on == nil {
		return followgraph.Link{}, fmt.Errorf("the answer does not say whether the edge of %s is on", list)
	}
	return followgraph.Link{On: *on, Since: since, Expires: expires}, nil
}

// Links returns a page of the list named list (followgraph.ListBlocks,
// ListMutes or ListFollowRequests) of user; see followgraph.Graph. Another
// name is code invalid_argument, asked of no server.
func (c *Client) Links(ctx context.Context, list string, user followgraph.UserID, req followgraph.PageRequest) (followgraph.Page, error) {
	switch list {
	case followgraph.ListBlocks, followgraph.ListMutes, followgraph.ListFollowRequests:
	default:
		return followgraph.Page{}, followgraph.Errorf(followgraph.EInvalidArgument, "no list %q: want %s, %s or %s",
			list, followgraph.ListBlocks, followgraph.ListMutes, followgraph.ListFollowRequests)
	}
	// The lists' names are their paths' last segments.
	p, err := c.list(ctx, userPath(user, list), ListRequest{Limit: req.Limit, Cursor: req.Cursor})
	if err != nil {
		return followgraph.Page{}, err
	}
	return p.page(), nil
}

// Approve approves requester's follow request to user; see
// followgraph.Graph (no such request is code no_request) and Follow.
func (c *Client) Approve(ctx context.Context, user, requester followgraph.UserID) (followgraph.FollowResult, error) {
	path := userPath(user, "followers", requester.String())
	var out approveJSON
	if err := c.do(ctx, http.MethodPut, path, "", nil, &out); err != nil {
		return followgraph.FollowResult{}, err
	}
	since, err := parseTime(out.Since)
	if err != nil || !out.Following {
		return followgraph.FollowResult{}, malformed(http.MethodPut, path, err)
	}
	return followgraph.FollowResult{Created: out.Created, Since: since}, nil
}

// RemoveFollower ends follower's follow of user, or rejects its follow
// request; see followgraph.Graph and Follow.
func (c *Client) RemoveFollower(ctx context.Context, user, follower followgraph.UserID) (bool, error) {
	var out removeFollowerJSON
	if err := c.do(ctx, http.MethodDelete, userPath(user, "followers", follower.String()), "", nil, &out); err != nil {
		return false, err
	}
	return out.Removed, nil
}

// Settings returns user's settings; see followgraph.Graph.
func (c *Client) Settings(ctx context.Context, user followgraph.UserID) (followgraph.Settings, error) {
	return c.settings(ctx, http.MethodGet, user, nil)
}

// SetPrivate sets whether user's account is private; see
// followgraph.Graph and Follow. With authentication it takes user's own
// token or a service token with scope admin.
func (c *Client) SetPrivate(ctx context.Context, user followgraph.UserID, private bool) (followgraph.Settings, error) {
	return c.settings(ctx, http.MethodPut, user, settingsRequest{Private: private})
}

func (c *Client) settings(ctx context.Context, method string, user followgraph.UserID, body any) (followgraph.Settings, error) {
	path := userPath(user, "settings")
	var out settingsJSON
	if err := c.do(ctx, method, path, "", body, &out); err != nil {
		return followgraph.Settings{}, err
	}
	id, err := followgraph.ParseUserID(out.ID)
	if err != nil {
		return followgraph.Settings{}, malformed(method, path, err)
	}
	return followgraph.Settings{ID: id, Private: out.Private}, nil
}
