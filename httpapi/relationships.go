package httpapi

import (
	"context"
	"net/http"

	"github.com/followgraph/followgraph"
)

// The routes of blocks, mutes, follow requests and the private setting
// (docs/API.md, "Blocks, mutes, private accounts and follow requests").
// Every write is a write by the path's {user}: its token, its write rate,
// its metrics, as for a follow.

func (s *Server) relationshipRoutes() {
	s.handle("PUT /v1/users/{user}/blocks/{target}", s.block())
	s.handle("DELETE /v1/users/{user}/blocks/{target}", s.unblock())
	s.handle("GET /v1/users/{user}/blocks/{target}", s.link(followgraph.KindBlock, blockFields))
	s.handle("GET /v1/users/{user}/blocks", s.links(followgraph.ListBlocks))
	s.handle("PUT /v1/users/{user}/mutes/{target}", s.mute)
	s.handle("DELETE /v1/users/{user}/mutes/{target}", s.unmute())
	s.handle("GET /v1/users/{user}/mutes/{target}", s.link(followgraph.KindMute, muteFields))
	s.handle("GET /v1/users/{user}/mutes", s.links(followgraph.ListMutes))
	s.handle("GET /v1/users/{user}/follow-requests", s.links(followgraph.ListFollowRequests))
	s.handle("GET /v1/users/{user}/follow-requests/{requester}", s.request)
	s.handle("PUT /v1/users/{user}/followers/{follower}", s.approve())
	s.handle("DELETE /v1/users/{user}/followers/{follower}", s.removeFollower())
	s.handle("GET /v1/users/{user}/settings", s.settings)
	s.route("PUT /v1/users/{user}/settings", s.setSettings, true, accessOwner)
}

// writeIDs returns the path's {user} and the user of wildcard other of a
// write op, refusing user equal to other with ErrSelfFollow when
// refuseSelf; a refusal is counted as a failed op.
func (s *Server) writeIDs(op string, r *http.Request, other string, refuseSelf bool) (user, target followgraph.UserID, err error) {
	ids, err := pathIDs(r, "user", other)
	if err != nil {
		return 0, 0, s.writeFailed(op, err)
	}
	if refuseSelf && ids[0] == ids[1] {
		return 0, 0, s.writeFailed(op, followgraph.ErrSelfFollow)
	}
	return ids[0], ids[1], nil
}

func (s *Server) block() apiFunc {
	return pairWrite(s, "block", "target", true, "created", made(s.g.Block), linkMade(blockFields))
}

func (s *Server) unblock() apiFunc {
	return pairWrite(s, "unblock", "target", false, "removed", removal(s.g.Unblock), linkRemoved(blockFields))
}

// made adapts a Graph method that makes an edge of another kind to
// pairWrite.
func made(f func(ctx context.Context, user, other followgraph.UserID) (followgraph.LinkResult, error)) func(context.Context, followgraph.UserID, followgraph.UserID) (followgraph.LinkResult, bool, error) {
	return func(ctx context.Context, user, other followgraph.UserID) (followgraph.LinkResult, bool, error) {
		res, err := f(ctx, user, other)
		return res, res.Created, err
	}
}

func linkMade(f linkFields) func([]byte, followgraph.UserID, followgraph.UserID, followgraph.LinkResult) []byte {
	return func(b []byte, user, target followgraph.UserID, res followgraph.LinkResult) []byte {
		return appendLinkMade(b, f, user, target, res)
	}
}

func linkRemoved(f linkFields) func([]byte, followgraph.UserID, followgraph.UserID, bool) []byte {
	return func(b []byte, user, target followgraph.UserID, removed bool) []byte {
		return appendLinkRemoved(b, f, user, target, removed)
	}
}

// mute reads the optional body {"duration_seconds": N} before it takes a
// turn of user's write rate, so that a bad body costs none.
func (s *Server) mute(ctx context.Context, r *http.Request, b []byte) ([]byte, error) {
	const op = "mute"
	user, target, err := s.writeIDs(op, r, "target", true)
	if err != nil {
		return b, err
	}
	release, err := s.readingBody(ctx)
	if err != nil {
		return b, s.writeFailed(op, err)
	}
	d, err := bodyMute(r.Body)
	release()
	if err != nil {
		return b, s.writeFailed(op, err)
	}
	if err := s.allowWrite(user); err != nil {
		return b, s.writeFailed(op, err)
	}
	res, err := s.g.Mute(ctx, user, target, d)
	if err != nil {
		return b, s.writeFailed(op, err)
	}
	s.metrics.write(op, outcome(res.Created, "created"))
	return appendLinkMade(b, muteFields, user, target, res), nil
}

func (s *Server) unmute() apiFunc {
	return pairWrite(s, "unmute", "target", false, "removed", removal(s.g.Unmute), linkRemoved(muteFields))
}

// approve approves the pending follow request of the path's {follower}
// to {user}; a user's request to itself is self_follow, as a follow is.
func (s *Server) approve() apiFunc {
	return pairWrite(s, "approve", "follower", true, "created",
		func(ctx context.Context, user, follower followgraph.UserID) (followgraph.FollowResult, bool, error) {
			res, err := s.g.Approve(ctx, user, follower)
			return res, res.Created, err
		}, appendApprove)
}

func (s *Server) removeFollower() apiFunc {
	return pairWrite(s, "remove_follower", "follower", false, "removed", removal(s.g.RemoveFollower), appendRemoveFollower)
}

// link answers the state of the edge of kind from the path's {user} to
// {target}.
func (s *Server) link(kind followgraph.Kind, f linkFields) apiFunc {
	return func(ctx context.Context, r *http.Request, b []byte) ([]byte, error) {
		ids, err := pathIDs(r, "user", "target")
		if err != nil {
			return b, err
		}
		l, err := s.g.Link(ctx, kind, ids[0], ids[1])
		if err != nil {
			return b, err
		}
		return appendLink(b, f, ids[0], ids[1], l), nil
	}
}

// request answers whether the path's {requester} has a pending follow
// request to {user}.
func (s *Server) request(ctx context.Context, r *http.Request, b []byte) ([]byte, error) {
	ids, err := pathIDs(r, "user", "requester")
	if err != nil {
		return b, err
	}
	l, err := s.g.Link(ctx, followgraph.KindRequest, ids[1], ids[0])
	if err != nil {
		return b, err
	}
	return appendLink(b, requestFields, ids[0], ids[1], l), nil
}

// links answers a page of the list named list of the path's {user}.
func (s *Server) links(list string) apiFunc {
	return func(ctx context.Context, r *http.Request, b []byte) ([]byte, error) {
		ids, err := pathIDs(r, "user")
		if err != nil {
			return b, err
		}
		q, err := query(r)
		if err != nil {
			return b, err
		}
		req, err := pageRequest(q)
		if err != nil {
			return b, err
		}
		p, err := s.g.Links(ctx, list, ids[0], req)
		if err != nil {
			return b, err
		}
		return appendList(b, p, nil), nil
	}
}

func (s *Server) settings(ctx context.Context, r *http.Request, b []byte) ([]byte, error) {
	ids, err := pathIDs(r, "user")
	if err != nil {
		return b, err
	}
	st, err := s.g.Settings(ctx, ids[0])
	if err != nil {
		return b, err
	}
	return appendSettings(b, st), nil
}

// setSettings sets the path's {user}'s settings from the body
// {"private": true}, read before it takes a turn of the write rate.
func (s *Server) setSettings(ctx context.Context, r *http.Request, b []byte) ([]byte, error) {
	const op = "settings"
	user, private, err := userBody(ctx, s, r, bodySettings)
	if err != nil {
		return b, s.writeFailed(op, err)
	}
	if err := s.allowWrite(user); err != nil {
		return b, s.writeFailed(op, err)
	}
	st, err := s.g.SetPrivate(ctx, user, private)
	if err != nil {
		return b, s.writeFailed(op, err)
	}
	s.metrics.write(op, "set")
	return appendSettings(b, st), nil
}
