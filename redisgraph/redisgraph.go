// Package redisgraph is the follow graph engine on Redis or Redis Cluster,
// through github.com/redis/rueidis: the hot copy of the graph for
// deployments of more than one API node.
//
// Each user's keys share the user's id as hash tag, so they live in one
// slot (package keyspace). Blocks, mutes, follow requests and the private
// setting are edges of other kinds on the same keys and scripts
// (relationship.go). Follows and unfollows are Lua scripts (package
// scripts) that decide the change on the follower's side, assign its
// version from the follower's clock, and write the change event into an
// outbox stream in the same atomic step (write.go). On a standalone Redis
// the followee's side is written by the same script; on a Cluster it
// lives in another slot and is written by a second, version-conditional
// script, retried and, should that fail, completed from the outbox
// (packages effects and outbox). Reads never run a command whose cost
// grows with the size of a set beyond O(log n) plus what it returns:
// keyset paging, ZMSCORE probes of the viewer's own sets, set queries
// that walk the smaller side in batches (read.go, sets.go, package
// lists), each checked against the graph's markers (package guard).
// Counts and the first page of large follower lists are served through
// rueidis's client-side cache, kept fresh by Redis's invalidations
// (cache.go).
//
// The operations of a deployment (rebuild, reconcile, heal, jobs) are in
// packages of their own, called through ops.go. docs/design/redisgraph.md
// opens with the package map; docs/design/redis-layout.md has the keys.
package redisgraph

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/rueidis"

	"github.com/followgraph/followgraph/redisgraph/internal/effects"
	"github.com/followgraph/followgraph/redisgraph/internal/errs"
	"github.com/followgraph/followgraph/redisgraph/internal/guard"
	"github.com/followgraph/followgraph/redisgraph/internal/heal"
	"github.com/followgraph/followgraph/redisgraph/internal/jobs"
	"github.com/followgraph/followgraph/redisgraph/internal/keyspace"
	"github.com/followgraph/followgraph/redisgraph/internal/layout"
	"github.com/followgraph/followgraph/redisgraph/internal/lists"
	"github.com/followgraph/followgraph/redisgraph/internal/rebuild"
	"github.com/followgraph/followgraph/redisgraph/internal/replicas"
	"github.com/followgraph/followgraph/redisgraph/internal/scripts"
	"github.com/followgraph/followgraph/redisgraph/internal/stamps"
	"github.com/followgraph/followgraph/redisgraph/internal/topology"
	"github.com/followgraph/followgraph/redisgraph/outbox"

	fg "github.com/followgraph/followgraph"
)

var (
	_ fg.Graph           = (*Graph)(nil)
	_ fg.Applier         = (*Graph)(nil)
	_ fg.TombstonePurger = (*Graph)(nil)
)

// Defaults of the options.
const (
	DefaultPrefix         = "fg"
	DefaultOutboxLimit    = 1_000_000
	DefaultCacheThreshold = 10_000
)

// newTimeout bounds New's round trips when its context does not end
// sooner.
const newTimeout = 10 * time.Second

// Graph is the Redis engine. It is safe for concurrent use; any number of
// Graphs, in any number of processes, may share one Redis under one prefix.
//
// A change is visible to every read that starts after it returned, on the
// follower's side (Following, IsFollowing, the follower's counts and
// relations). On a standalone Redis the followee's side changes in the same
// atomic step. On a Cluster it changes in a second step, before the write
// returns unless that step failed every retry; then settling the change's
// outbox event (Outbox.Settle, as the relay does, or Repair) completes it.
type Graph struct {
	c            rueidis.Client
	ks           keyspace.Space // the keys, under the prefix (WithPrefix)
	now          func() time.Time
	maxFollowing int
	region       int // the region of the versions issued (WithRegion); 0: none
	outboxLimit  int
	writeRate    string // per user and second, decimal; "0": no limit
	writeBurst   string
	cacheMin     int64                       // followers from which the first page of followers is cached
	hook         fg.Hook                     // nil: none
	gate         func(context.Context) error // nil: none
	onUnvouched  func(slot uint16)           // nil: none
	onLoss       func()                      // nil: none
	onRefused    func(fg.Refusal)            // nil: none (WithRefused)
	lua          *scripts.Runner             // the scripts, as this Graph runs them
	maxKey       int                         // the most entries a key of a user holds (WithMaxKeyMembers)
	lists        *lists.Lists                // the lists, read in their chunks
	fx           *effects.Effects            // the effects of events: Apply, second steps
	scope        string                      // what the vouched scripts vouch for; "": the prefix

	known  stamps.Stamps // the latest stamps this Graph wrote, for the cache
	memo   memo          // counts of set queries
	hits   atomic.Uint64
	misses atomic.Uint64

	deferred prometheus.Counter    // second steps left to the outbox
	reg      prometheus.Registerer // nil: the metrics are not registered
	guard    *guard.Guard          // what reads know of the graph's markers
	replicas *replicas.Set         // nil: every read goes to the masters
	drops    *outbox.Dropper       // the deletes of settled outbox entries
	outbox   *outbox.Streams       // the outbox streams
	jobs     *jobs.Jobs            // the account-state jobs this Graph runs
	rebuild  *rebuild.Graph        // the graph as a rebuild writes it and a reconcile reads it
	heal     *heal.Healer          // the vouching for servers, the checkpoints and the graph's markers

	// The tests' faults, which only their own Options set; New's callers
	// cannot: secondStep runs before each attempt of a second step (an
	// error fails the attempt), job in the jobs' batches (jobs.Faults).
	faults struct {
		secondStep func(fg.Event) error
		job        jobs.Faults
	}

	purge purgePass // the pass of PurgeTombstones under way
}

// Option configures a Graph.
type Option func(*Graph)

// WithPrefix sets the prefix of every key (default "fg"), so that several
// deployments can share a Redis. It must not contain '{' or '}'.
func WithPrefix(p string) Option { return func(g *Graph) { g.ks = keyspace.New(p, false) } }

// WithClock sets the clock that gives follow times (default time.Now).
func WithClock(now func() time.Time) Option { return func(g *Graph) { g.now = now } }

// WithRegion makes the Graph issue only versions of region r, from 1 to
// followgraph.MaxRegion (see followgraph.NextVersion), so that no other
// region of the deployment issues the same; 0, the default, is a
// deployment without regions; New refuses any other r. The Graphs on one
// Redis give the same r, and two regions different ones.
func WithRegion(r int) Option { return func(g *Graph) { g.region = r } }

// WithWriteRate limits each user's follows and unfollows to perSecond,
// with bursts of burst (0: no limit), across every Graph on the same
// Redis: the token bucket is kept in the user's counters and taken by the
// write's own script, atomically, in its one round trip. A write over the
// rate changes nothing and returns ERateLimited with the time until a
// token is there. Every write is charged, one that changes nothing too.
// The buckets are counted by the writers' clocks, never backwards: nodes
// whose clocks differ by d may let through d's worth of tokens more.
func WithWriteRate(perSecond float64, burst int) Option {
	return func(g *Graph) {
		if perSecond > 0 {
			g.writeRate = strconv.FormatFloat(perSecond, 'g', -1, 64)
			g.writeBurst = strconv.Itoa(max(burst, 1))
		}
	}
}

// WithMaxFollowing caps how many users one user may follow (0: no cap).
func WithMaxFollowing(n int) Option { return func(g *Graph) { g.maxFollowing = n } }

// WithHook sets the hook that receives every change before the write
// returns (see followgraph.Hook). It runs after the change is made in
// Redis (both sides, on a Cluster once the second step is done or
// deferred), so reads may see the change while it runs, and a failed hook
// does not undo it: the write returns an error of code EUnavailable ("may
// take effect") wrapping the hook's, whatever the hook's code, and the
// change's event stays in the outbox for the relay. When the hook returns
// nil, the change's outbox entry is deleted in the background (on a
// Cluster, once its second step is done), so that the relay does not
// publish the event again; the outbox then holds only what a crash, a
// failed hook, or a delete given up (Redis slow, or the Graph closed: see
// Close) left. Serve publishes the event to the log there, so that an
// acknowledged change is in the log even if Redis then loses its data.
func WithHook(h fg.Hook) Option { return func(g *Graph) { g.hook = h } }

// WithWriteGate sets a function called before each follow or unfollow
// changes anything: when it returns an error, the write returns it having
// changed nothing. Serve checks there that the event log can take the
// write's event, so that while the log is known to be down a write is
// refused outright rather than made in Redis and answered with an unknown
// outcome (the hook's failure).
func WithWriteGate(gate func(ctx context.Context) error) Option {
	return func(g *Graph) { g.gate = gate }
}

// DefaultMaxKeyMembers is WithMaxKeyMembers's default.
const DefaultMaxKeyMembers = layout.DefaultMaxKeyMembers

// WithMaxKeyMembers bounds the entries of every key of a user's lists
// (default DefaultMaxKeyMembers): a list that reaches seven eighths
// of it in a key is split into more chunks (docs/design/redis-layout.md).
// It must be at least 2; every node of a deployment should give the same.
func WithMaxKeyMembers(n int) Option { return func(g *Graph) { g.maxKey = n } }

// WithOutboxLimit bounds each outbox stream (default DefaultOutboxLimit
// events): a write that would go beyond it fails with EUnavailable and
// changes nothing, rather than dropping events not yet relayed.
func WithOutboxLimit(n int) Option { return func(g *Graph) { g.outboxLimit = n } }

// WithCacheThreshold sets the number of followers from which the first
// page of a user's followers is served through the client-side cache
// (default DefaultCacheThreshold; 0 never caches pages). Counts are always
// served through it.
func WithCacheThreshold(n int) Option { return func(g *Graph) { g.cacheMin = int64(n) } }

// WithRegisterer registers the Graph's metrics on reg (default: not
// registered):
//
//	followgraph_redis_second_steps_deferred_total  second steps (Cluster
//	    only) that failed every retry since the Graph was made, left to the
//	    outbox (Outbox.Settle, as the relay does, or Repair)
//
// New fails if reg already holds them (another Graph's, say).
func WithRegisterer(reg prometheus.Registerer) Option { return func(g *Graph) { g.reg = reg } }

// New returns a Graph on client. After use the caller closes the Graph,
// then the client. It loads the scripts into every node and reads the
// graph's markers, so it fails with EUnavailable when Redis cannot be
// reached before ctx ends, or within newTimeout. It needs Redis 7 or
// later. Whether the graph is laid out for a Cluster follows
// client.Mode().
func New(ctx context.Context, client rueidis.Client, opts ...Option) (*Graph, error) {
	g := &Graph{
		c:           client,
		ks:          keyspace.New(DefaultPrefix, false),
		now:         time.Now,
		outboxLimit: DefaultOutboxLimit,
		writeRate:   "0",
		writeBurst:  "0",
		cacheMin:    DefaultCacheThreshold,
		maxKey:      layout.DefaultMaxKeyMembers,
		deferred: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "followgraph_redis_second_steps_deferred_total",
			Help: "Second steps of changes on a Redis Cluster (the followee's side) that failed every retry, left to the outbox.",
		}),
	}
	for _, o := range opts {
		o(g)
	}
	switch {
	case g.ks.Prefix() == "" || strings.ContainsAny(g.ks.Prefix(), "{}"):
		return nil, fmt.Errorf("redisgraph: prefix %q: it must be non-empty, without '{' or '}'", g.ks.Prefix())
	case g.outboxLimit < 1:
		return nil, fmt.Errorf("redisgraph: outbox limit %d: it must be at least 1", g.outboxLimit)
	case g.maxFollowing < 0:
		return nil, fmt.Errorf("redisgraph: following limit %d: it must be 0 (none) or more", g.maxFollowing)
	case g.maxKey < 2:
		return nil, fmt.Errorf("redisgraph: most members of a key %d: it must be at least 2", g.maxKey)
	case g.cacheMin < 0:
		return nil, fmt.Errorf("redisgraph: cache threshold %d: it must be 0 (never) or more", g.cacheMin)
	case g.region < 0 || g.region > fg.MaxRegion:
		return nil, fmt.Errorf("redisgraph: region %d: it must be 0 (none) to %d", g.region, fg.MaxRegion)
	}
	g.ks = keyspace.New(g.ks.Prefix(), client.Mode() == rueidis.ClientModeCluster)
	switch {
	case g.replicas != nil && g.replicas.ForCluster() && !g.ks.Cluster():
		return nil, errors.New("redisgraph: a Cluster's replicas to read from, but the Redis is not a Cluster: name a standalone Redis's replicas instead")
	case g.replicas != nil && !g.replicas.ForCluster() && g.ks.Cluster():
		return nil, errors.New("redisgraph: a standalone Redis's replicas to read from, but the Redis is a Cluster: read from the Cluster's replicas instead")
	}
	if g.scope == "" {
		g.scope = g.ks.Prefix()
	}
	g.lua = scripts.NewRunner(client, g.scope, g.maxKey, g.onUnvouched)
	g.guard = guard.New(client, g.ks, g.lua, guard.Hooks{Lost: g.onLoss, Unvouched: g.onUnvouched, NewEpoch: g.memo.clear})
	g.lists = lists.New(client, g.ks, g.guard, g.lua)
	g.fx = effects.New(g.ks, g.lua, &g.known, g.deferred, g.undo, g.faults.secondStep, g.onRefused)
	g.outbox = outbox.New(client, g.ks, g.lua, g.fx)
	g.drops = outbox.NewDropper(client)
	g.heal = heal.New(client, g.ks, g.lua, g.guard, g.memo.clear)
	g.rebuild = rebuild.New(client, g.ks, g.lua, g.lists, g.fx, g.maxKey)
	g.jobs = jobs.New(client, g.ks, g.lua, g.lists, g.fx, &g.known, g.State, g.faults.job)
	ctx, cancel := cancelAfter(ctx, newTimeout)
	defer cancel()
	if err := g.lua.Load(ctx); err != nil {
		return nil, errs.Wrap("loading scripts", err)
	}
	if err := g.guard.Learn(ctx); err != nil {
		return nil, err
	}
	if err := g.heal.CheckLayout(ctx); err != nil {
		return nil, err
	}
	if g.reg != nil {
		if err := g.reg.Register(g.deferred); err != nil {
			return nil, fmt.Errorf("redisgraph: registering the metrics: %w", err)
		}
	}
	if g.replicas != nil {
		if err := g.replicas.Start(client, g.ks, g.guard, g.reg); err != nil {
			return nil, fmt.Errorf("redisgraph: registering the metrics: %w", err)
		}
		g.guard.UseReplicas(g.replicas)
	}
	return g, nil
}

// Close stops the Graph's work in the background, the deletes of the
// outbox entries of acknowledged writes (see WithHook), and waits for it
// to end: at once, or, while the client dials a Redis that does not
// answer, within the client's dial timeout (rueidis's Dialer.Timeout).
// The entries not yet deleted stay in the outbox, for the relay to
// publish again (the log drops them as duplicates) and trim. Close does
// not close the client: call it before closing the client. The Graph
// stays usable; its writes after Close leave their entries to the relay.
// Close may be called more than once.
func (g *Graph) Close() {
	g.drops.Close()
	if g.replicas != nil {
		g.replicas.Close()
	}
}

// cancelAfter returns a context that is cancelled when ctx ends or d has
// passed, and has no deadline. rueidis ends a command's wait at a
// deadline through the connection's deadline alone, and then no sooner
// when the context is cancelled; a context without one it waits on in a
// way that ends when the context does.
func cancelAfter(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	c, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, cancel)
	timer := time.AfterFunc(d, cancel)
	return c, func() {
		stop()
		timer.Stop()
		cancel()
	}
}

// Cluster reports whether the graph is laid out for a Redis Cluster: the
// two sides of a change written in two steps.
func (g *Graph) Cluster() bool { return g.ks.Cluster() }

// CacheStats returns how many reads served through the client-side cache
// were answered from it (hits) and how many went to Redis (misses).
func (g *Graph) CacheStats() (hits, misses uint64) { return g.hits.Load(), g.misses.Load() }

// WithOnLoss sets a function called when a read finds that Redis has lost
// the graph (a slot's marker is gone; see package guard): the node that
// sees it can rebuild the graph. It is called for every such read, from
// the reading goroutine: it must return at once.
func WithOnLoss(f func()) Option { return func(g *Graph) { g.onLoss = f } }

// WithReplicaClients makes reads go to the replicas of a standalone Redis
// through clients (see package replicas); the clients must reach replicas
// of the Graph's Redis, and are closed by their caller after the Graph.
func WithReplicaClients(clients ...rueidis.Client) Option {
	return func(g *Graph) { g.replicas = replicas.Fixed(clients...) }
}

// WithClusterReplicas makes reads go to the replicas of the masters of a
// Cluster (see package replicas), found in CLUSTER SLOTS and reached
// through clients dial makes (a client of the one node at addr, caching
// nothing). Close closes them.
func WithClusterReplicas(dial func(addr string) (rueidis.Client, error)) Option {
	return func(g *Graph) { g.replicas = replicas.Dialled(dial) }
}

// Server is a Redis server holding part of the graph: a standalone Redis,
// or a master of a Cluster with the slots it serves.
type Server = topology.Server

// Servers returns the servers that hold the graph: the standalone Redis,
// or the masters of the Cluster as CLUSTER SLOTS lists them.
func (g *Graph) Servers(ctx context.Context) ([]Server, error) {
	return topology.Servers(ctx, g.c, g.ks.Cluster())
}

// ServerOf returns the server of slot.
func (g *Graph) ServerOf(ctx context.Context, slot uint16) (Server, error) {
	return topology.ServerOf(ctx, g.c, g.ks.Cluster(), slot)
}

// ticket returns the guard's ticket of a change of user with target:
// target's slot group too on a Cluster (for the second step; 0: none).
func (g *Graph) ticket(user, target fg.UserID) guard.Ticket {
	if g.ks.Cluster() && target != 0 {
		return g.guard.For(user, target)
	}
	return g.guard.For(user)
}

// WithOnUnvouched sets a function called with the slot of each read or
// write that met a server not vouched for: the node that sees it heals
// the server. It is called from the goroutine that met it and must return
// at once.
func WithOnUnvouched(f func(slot uint16)) Option { return func(g *Graph) { g.onUnvouched = f } }

// WithRefused sets what Apply calls, once it has written its batch, with
// each change it refused for being older than the tombstone horizon
// (followgraph.Refusal; see PurgeTombstones); the batch's other changes
// are applied. None by default.
func WithRefused(f func(fg.Refusal)) Option { return func(g *Graph) { g.onRefused = f } }

// WithVouchScope names the data the vouched scripts vouch for (default:
// the prefix): the Graphs of one deployment share it, and deployments
// sharing a Redis must not. Graphs on one Redis that share a scope share
// the vouched scripts (some 150 KB of Redis's memory a scope).
func WithVouchScope(name string) Option { return func(g *Graph) { g.scope = name } }
