// Package errs is redisgraph's errors: the domain errors (followgraph.Error)
// of Redis failures and of the states of the graph in Redis that a read or
// a write meets, and the wrapping of Redis's errors into them.
package errs

import (
	"fmt"

	"github.com/redis/rueidis"

	fg "github.com/followgraph/followgraph"
)

// Unavailable is the domain error of every failure to reach Redis.
var Unavailable = &fg.Error{Code: fg.EUnavailable, Message: "the graph store (Redis) is unavailable"}

// GraphLost is the error of a read of a slot whose graph marker is gone.
var GraphLost = &fg.Error{Code: fg.EUnavailable,
	Message: "Redis has lost the graph: reads and writes wait until it is rebuilt (a node does it by itself, or `followgraph rebuild`)"}

// GraphChanging is the error of a read that found the graph rebuilt, or
// a list split, under it too many times in a row.
var GraphChanging = &fg.Error{Code: fg.EUnavailable, Message: "the graph in Redis is being rebuilt; retry"}

// Unvouched is the error of a read or write on a server that is not
// vouched for (not yet healed after a failover or a restart).
var Unvouched = &fg.Error{Code: fg.EUnavailable,
	Message: "a Redis server is being checked after a failover or a restart: retry shortly"}

// DataLost is the error of a write whose outbox stream is gone.
var DataLost = &fg.Error{Code: fg.EUnavailable,
	Message: "Redis has lost the graph (its outbox stream is gone): writes wait for `followgraph rebuild`"}

// Replaced is the error of a change made whose server was replaced or
// healed before it was acknowledged.
var Replaced = &fg.Error{Code: fg.EUnavailable,
	Message: "the write is made but a Redis server failed over meanwhile: it may take effect; retry (writes are idempotent)"}

// Unacknowledged is the error of a change made whose hook failed: it is
// in Redis and in its outbox, and the relay will move its event to the
// log, but it was not acknowledged.
var Unacknowledged = &fg.Error{Code: fg.EUnavailable,
	Message: "the write is made but the event log did not acknowledge it: it may take effect; retry (writes are idempotent)"}

// Wrap wraps a Redis or connection error err of operation op: its code
// is EUnavailable, and err stays in the chain. An err that is already a
// domain error (GraphLost, say) keeps its own code and message, and
// Redis's NOSCRIPT of a vouched script is Unvouched.
func Wrap(op string, err error) error {
	if IsNoScript(err) {
		return fmt.Errorf("redisgraph: %s: %w", op, Unvouched)
	}
	if fg.ErrorCode(err) != fg.EInternal {
		return fmt.Errorf("redisgraph: %s: %w", op, err)
	}
	return fmt.Errorf("redisgraph: %s: %w: %w", op, Unavailable, err)
}

// IsNoScript reports whether err is Redis's NOSCRIPT.
func IsNoScript(err error) bool {
	e, ok := rueidis.IsRedisErr(err)
	return ok && e.IsNoScript()
}
