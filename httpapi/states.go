package httpapi

import (
	"context"
	"io"
	"net/http"

	"github.com/followgraph/followgraph"
)

// The routes of account states (docs/API.md, "Account states"). Reading a
// state is a read; setting one is an administrator's, with scope admin:
// no user token may set a state, not even its own user's.

func (s *Server) stateRoutes() {
	s.handle("GET /v1/users/{user}/state", s.state)
	s.route("PUT /v1/users/{user}/state", s.setState, true, accessAdmin)
}

func (s *Server) state(ctx context.Context, r *http.Request, b []byte) ([]byte, error) {
	ids, err := pathIDs(r, "user")
	if err != nil {
		return b, err
	}
	a, err := s.g.State(ctx, ids[0])
	if err != nil {
		return b, err
	}
	return appendAccountState(b, a), nil
}

// setState sets the path's {user}'s account state from the body
// {"state": "deactivated"}. It takes no turn of {user}'s write rate: the
// rate bounds what a user writes, and a state is set by an administrator
// about the user (a hidden user could not write anyway).
func (s *Server) setState(ctx context.Context, r *http.Request, b []byte) ([]byte, error) {
	const op = "state"
	user, st, err := userBody(ctx, s, r, bodyState)
	if err != nil {
		return b, s.writeFailed(op, err)
	}
	a, err := s.g.SetState(ctx, user, st)
	if err != nil {
		return b, s.writeFailed(op, err)
	}
	s.metrics.write(op, "set")
	return appendAccountState(b, a), nil
}

// userBody returns the path's {user} and what parse reads of the body, in
// the server's bound on bodies read at once.
func userBody[T any](ctx context.Context, s *Server, r *http.Request, parse func(io.Reader) (T, error)) (followgraph.UserID, T, error) {
	var v T
	ids, err := pathIDs(r, "user")
	if err != nil {
		return 0, v, err
	}
	release, err := s.readingBody(ctx)
	if err != nil {
		return 0, v, err
	}
	defer release()
	v, err = parse(r.Body)
	return ids[0], v, err
}
