package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/auth"
)

// statusOf is the one table from error codes to HTTP statuses. A code
// that is not in it is a bug, answered as internal.
var statusOf = map[string]int{
	followgraph.EInvalidID:        http.StatusBadRequest,
	followgraph.EInvalidArgument:  http.StatusBadRequest,
	followgraph.EInvalidCursor:    http.StatusBadRequest,
	followgraph.ESelfFollow:       http.StatusBadRequest,
	followgraph.ENotFound:         http.StatusNotFound,
	followgraph.EMethodNotAllowed: http.StatusMethodNotAllowed,
	followgraph.EUnauthenticated:  http.StatusUnauthorized,
	followgraph.EForbidden:        http.StatusForbidden,
	followgraph.EBlocked:          http.StatusForbidden,
	followgraph.EUserInactive:     http.StatusForbidden,
	followgraph.ENoRequest:        http.StatusNotFound,
	followgraph.ETargetInactive:   http.StatusConflict,
	followgraph.EFollowingLimit:   http.StatusConflict,
	followgraph.ETooLarge:         http.StatusRequestEntityTooLarge,
	followgraph.ERateLimited:      http.StatusTooManyRequests,
	followgraph.EUnavailable:      http.StatusServiceUnavailable,
	followgraph.EInternal:         http.StatusInternalServerError,
}

// statusCode returns the status and code under which err is answered.
func statusCode(err error) (int, string) {
	code := followgraph.ErrorCode(err)
	status, ok := statusOf[code]
	if !ok {
		return http.StatusInternalServerError, followgraph.EInternal
	}
	return status, code
}

const (
	internalMessage = "internal error"
	tooLargeMessage = "the request body is over the limit of 1 MiB"
)

// writeError answers err. An internal error (one that is not a
// *followgraph.Error, or has a code not in statusOf) is answered with a
// message that says nothing internal, and logged; so is an unavailable
// backend, at warning level (unless the cause was logged already: a
// loggedError); a request refused for its token at debug level.
func (s *Server) writeError(ctx context.Context, w http.ResponseWriter, r *http.Request, err error) {
	status, code := statusCode(err)
	msg := followgraph.ErrorMessage(err)
	switch ctxErr := ctx.Err(); {
	case errors.Is(ctxErr, context.DeadlineExceeded) && (errors.Is(err, ctxErr) || code == followgraph.EUnavailable):
		// The request's deadline passed: a backend is slow or gone.
		status, code = http.StatusServiceUnavailable, followgraph.EUnavailable
		timeout := s.limits.RequestTimeout
		if sw, ok := w.(*statusWriter); ok {
			timeout = sw.timeout
		}
		msg = fmt.Sprintf("the request did not finish within its deadline of %s: a backend is slow or unreachable; retry later", timeout)
		s.log.Warn("httpapi: request deadline passed", "method", r.Method, "route", r.Pattern, "err", err)
	case ctxErr != nil && errors.Is(err, ctxErr):
		// The client went away: nobody reads the answer, and nothing is
		// wrong with the server.
		status, code, msg = http.StatusServiceUnavailable, followgraph.EUnavailable, "the request was canceled"
	case code == followgraph.EInternal:
		msg = internalMessage
		s.log.Error("httpapi: internal error", "method", r.Method, "route", r.Pattern, "err", err)
	case code == followgraph.EUnavailable && errors.As(err, new(loggedError)):
		// Its cause is logged where it arose, once.
	case code == followgraph.EUnavailable:
		s.log.Warn("httpapi: backend unavailable", "method", r.Method, "route", r.Pattern, "err", err)
	case code == followgraph.EUnauthenticated || code == followgraph.EForbidden:
		// The errors of package auth and authorize never hold a token.
		s.log.Debug("httpapi: request refused", "method", r.Method, "route", r.Pattern, "code", code, "err", err)
	}
	if code == followgraph.EUnauthenticated {
		w.Header().Set("WWW-Authenticate", auth.Challenge(err))
	}
	var fe *followgraph.Error
	if errors.As(err, &fe) && fe.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.FormatInt(int64((fe.RetryAfter+time.Second-1)/time.Second), 10))
	}
	writeError(w, status, code, msg)
}

func writeError(w http.ResponseWriter, status int, code, message string) {
	writeBody(w, status, appendError(nil, code, message))
}

var jsonContentType = []string{"application/json"}

// writeBody answers the JSON body b, adding its final newline, with the
// given status.
func writeBody(w http.ResponseWriter, status int, b []byte) {
	b = append(b, '\n')
	h := w.Header()
	h["Content-Type"] = jsonContentType
	h["Content-Length"] = []string{strconv.Itoa(len(b))}
	w.WriteHeader(status)
	w.Write(b)
}

// loggedError is an error whose cause was logged where it arose (a
// backend's readiness, on a change): writeError answers it without a line
// of its own, so that a probe polling /readyz does not log each answer.
type loggedError struct{ error }

func (e loggedError) Unwrap() error { return e.error }
