package httpapi

import (
	"net/http"
	"strings"

	"github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/auth"
)

// WithAuth makes the server answer only requests that a authenticates, as
// docs/API.md ("Authentication") says: every request under /v1/ needs a
// bearer token (401 unauthenticated without a valid one, with a
// WWW-Authenticate header), and the token must allow what the route does
// (403 forbidden): a read needs a user token or scope read, a write a
// service token with scope write or the user token of the path's {user},
// a user's settings that user's token or scope admin, setting an account
// state and /metrics scope admin (admin allows everything). /healthz and
// /readyz stay open. A refused request changes nothing and is logged at
// debug level, without its token. Without WithAuth every request is let
// through.
//
// A request that the server refuses before it routes it (a path not in
// canonical form, a body declared over the limit) is answered 404 or 413
// whatever its token: such an answer reveals and changes nothing.
func WithAuth(a *auth.Authenticator) Option { return func(s *Server) { s.auth = a } }

// access is what a route asks of the principal of a request when the
// server authenticates.
type access uint8

const (
	accessOpen  access = iota // nothing: health and readiness
	accessRead                // auth.Principal.CanRead
	accessWrite               // auth.Principal.CanWrite as the path's {user}
	accessAdmin               // auth.Principal.IsAdmin
	accessOwner               // the user token of the path's {user}, or auth.Principal.IsAdmin
)

// accessOf returns what an API route asks: a read for GET, a write for any
// other method. A route that reads with another method (a POST with a
// body of ids) is routed with handleRead.
func accessOf(pattern string) access {
	if strings.HasPrefix(pattern, http.MethodGet+" ") {
		return accessRead
	}
	return accessWrite
}

// handleRead routes pattern, an API route that only reads though its
// method is not GET, to f.
func (s *Server) handleRead(pattern string, f apiFunc) { s.route(pattern, f, true, accessRead) }

// Refusals of a principal that may not do what it asks.
var (
	errMayNotRead  = &followgraph.Error{Code: followgraph.EForbidden, Message: "this token may not read: it needs scope read"}
	errMayNotWrite = &followgraph.Error{Code: followgraph.EForbidden, Message: "this token may not write as this user: it needs scope write, or to be the user token of the path's user"}
	errNotAdmin    = &followgraph.Error{Code: followgraph.EForbidden, Message: "this needs a token with scope admin"}
	errNotOwner    = &followgraph.Error{Code: followgraph.EForbidden, Message: "this needs the user token of the path's user, or a token with scope admin"}
)

// authorize returns nil when the Authorization header of r holds a token
// that may do what need says, else an unauthenticated or forbidden error.
func (s *Server) authorize(r *http.Request, need access) error {
	p, err := s.auth.Authenticate(authorization(r))
	if err != nil {
		return err
	}
	switch need {
	case accessRead:
		if !p.CanRead() {
			return errMayNotRead
		}
	case accessWrite:
		user, _ := followgraph.ParseUserID(r.PathValue("user")) // 0, which no user token is, when the path has no valid {user}
		if !p.CanWrite(user) {
			return errMayNotWrite
		}
	case accessAdmin:
		if !p.IsAdmin() {
			return errNotAdmin
		}
	case accessOwner:
		user, _ := followgraph.ParseUserID(r.PathValue("user"))
		if !p.IsAdmin() && (p.User == 0 || p.User != user) {
			return errNotOwner
		}
	}
	return nil
}

// authorization returns the Authorization header of r; several are joined
// with commas, which no single bearer token has, so they are refused.
func authorization(r *http.Request) string {
	switch v := r.Header["Authorization"]; len(v) {
	case 0:
		return ""
	case 1:
		return v[0]
	default:
		return strings.Join(v, ", ")
	}
}
