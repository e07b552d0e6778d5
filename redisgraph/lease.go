package redisgraph

import (
	"context"
	"strconv"
	"time"
)

// Several serve nodes run a relay each over the same outbox. So that they
// share the work instead of repeating it, a relay moves a stream only while
// it holds the stream's lease: the key <stream>:lease (same hash tag, same
// slot), holding the owner's name, with a time to live. The owner renews
// it at each pass; when a node dies its leases run out and another node
// takes the streams over. A lease is an optimization, not a lock that
// correctness rests on: a paused owner whose lease ran out may publish a
// batch another node publishes too, which the log drops as a duplicate
// (message id = event id), and trims are idempotent.
var scriptLease = newScript(`
local cur = redis.call('GET', KEYS[1])
if cur == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
if cur then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1`, false)

// claimOutbox takes or renews the lease of the outbox stream for owner,
// for ttl, and reports whether owner holds it.
func (g *Graph) claimOutbox(ctx context.Context, stream, owner string, ttl time.Duration) (bool, error) {
	n, err := g.exec(ctx, scriptLease, []string{stream + ":lease"},
		[]string{owner, strconv.FormatInt(max(ttl.Milliseconds(), 1), 10)}).AsInt64()
	if err != nil {
		return false, unavailable("outbox lease", err)
	}
	return n == 1, nil
}

// releaseOutbox gives up owner's lease of the stream, if it holds it, so
// that another node takes the stream over at once (at a clean stop).
func (g *Graph) releaseOutbox(ctx context.Context, stream, owner string) error {
	err := g.exec(ctx, scriptRelease, []string{stream + ":lease"}, []string{owner}).Error()
	if err != nil {
		return unavailable("outbox lease", err)
	}
	return nil
}

var scriptRelease = newScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`, false)

// rebuildLeaseKey is the key of the lease of a rebuild of the whole graph.
func (g *Graph) rebuildLeaseKey() string { return g.prefix + ":rebuild:lease" }

// ClaimRebuild takes or renews, for owner and for ttl, the lease of
// rebuilding the graph after Redis lost it, so that of the nodes that see
// the loss one rebuilds, and reports whether owner holds it.
func (g *Graph) ClaimRebuild(ctx context.Context, owner string, ttl time.Duration) (bool, error) {
	n, err := g.exec(ctx, scriptLease, []string{g.rebuildLeaseKey()},
		[]string{owner, strconv.FormatInt(max(ttl.Milliseconds(), 1), 10)}).AsInt64()
	if err != nil {
		return false, unavailable("rebuild lease", err)
	}
	return n == 1, nil
}

// ReleaseRebuild gives up owner's rebuild lease, if it holds it.
func (g *Graph) ReleaseRebuild(ctx context.Context, owner string) error {
	if err := g.exec(ctx, scriptRelease, []string{g.rebuildLeaseKey()}, []string{owner}).Error(); err != nil {
		return unavailable("rebuild lease", err)
	}
	return nil
}
