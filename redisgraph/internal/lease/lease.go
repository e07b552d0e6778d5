// Package lease takes, renews and gives up leases in Redis: a key that
// holds its owner's name, with a time to live (lua/lease.lua,
// lua/release.lua). A lease shares work among nodes (the outbox streams,
// the jobs, a rebuild, a heal); none is a lock that correctness rests on.
package lease

import (
	"context"
	"strconv"
	"time"

	"github.com/followgraph/followgraph/redisgraph/internal/errs"
	"github.com/followgraph/followgraph/redisgraph/internal/scripts"
)

// Claim takes or renews, for owner and for ttl, the lease key, through r,
// and reports whether owner holds it. Its errors are what's.
func Claim(ctx context.Context, r *scripts.Runner, what, key, owner string, ttl time.Duration) (bool, error) {
	n, err := r.Exec(ctx, scripts.Lease.Call(scripts.LeaseKeys{Lease: key},
		scripts.LeaseArgs{Owner: owner, TTL: strconv.FormatInt(max(ttl.Milliseconds(), 1), 10)})).AsInt64()
	if err != nil {
		return false, errs.Wrap(what, err)
	}
	return n == 1, nil
}

// Release gives up owner's lease key, if it holds it, so that another
// node takes the work over at once.
func Release(ctx context.Context, r *scripts.Runner, what, key, owner string) error {
	if err := r.Exec(ctx, scripts.Release.Call(scripts.LeaseKeys{Lease: key}, scripts.LeaseArgs{Owner: owner})).Error(); err != nil {
		return errs.Wrap(what, err)
	}
	return nil
}
