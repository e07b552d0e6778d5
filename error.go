package followgraph

import (
	"errors"
	"fmt"
	"time"
)

// Error codes, as in docs/API.md. The HTTP layer maps each to a status in one table.
const (
	EInvalidID        = "invalid_id"
	EInvalidArgument  = "invalid_argument"
	EInvalidCursor    = "invalid_cursor"
	ESelfFollow       = "self_follow"
	ENotFound         = "not_found"
	EMethodNotAllowed = "method_not_allowed"
	EUnauthenticated  = "unauthenticated"
	EForbidden        = "forbidden"
	EBlocked          = "blocked"
	ENoRequest        = "no_request"
	EUserInactive     = "user_inactive"
	ETargetInactive   = "target_inactive"
	EFollowingLimit   = "following_limit"
	ETooLarge         = "too_large"
	ERateLimited      = "rate_limited"
	EUnavailable      = "unavailable"
	EInternal         = "internal"

	// EBeforeHorizon is no HTTP answer: the service gives every write its
	// version. It is the code of a change older than a holder's tombstone
	// horizon to an edge the holder keeps no record of (horizon.go), which
	// `followgraph import` refuses and the persister skips.
	EBeforeHorizon = "before_horizon"
)

// Error is a domain error: a code from the list above and a message meant
// for the caller. Errors of any other type are internal.
type Error struct {
	Code    string
	Message string
	// RetryAfter, when positive, is how long the caller should wait before
	// trying again (an ERateLimited error's; HTTP's Retry-After).
	RetryAfter time.Duration
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Errorf returns an *Error with the given code and a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// RateLimited returns the ERateLimited error of a write by user, whose
// next write may succeed after wait.
func RateLimited(user UserID, wait time.Duration) *Error {
	secs := int64((wait + time.Second - 1) / time.Second)
	return &Error{Code: ERateLimited, Message: fmt.Sprintf("too many writes by user %d: retry after %d s", user, secs), RetryAfter: wait}
}

// ErrorCode returns the code of the *Error in err's chain, "" for nil, and
// EInternal for any other error.
func ErrorCode(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return EInternal
}

// ErrorMessage returns the caller-facing message of the *Error in err's
// chain, and a generic text for an internal error of any kind, so nothing
// internal leaks.
func ErrorMessage(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) && e.Code != EInternal {
		return e.Message
	}
	return "internal error"
}

// ErrSelfFollow is returned by Follow when user equals target.
var ErrSelfFollow = &Error{Code: ESelfFollow, Message: "a user cannot follow themselves"}
