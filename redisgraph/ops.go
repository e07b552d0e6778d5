package redisgraph

import (
	"context"
	"time"

	fg "github.com/followgraph/followgraph"

	"github.com/followgraph/followgraph/redisgraph/internal/lease"
	"github.com/followgraph/followgraph/redisgraph/internal/rebuild"
	"github.com/followgraph/followgraph/redisgraph/outbox"
)

// The operations of a deployment on its graph in Redis, which recovery
// and the operator commands run: each is a call of the package that
// owns the mechanism (heal, rebuild, jobs, outbox, lease).

// Outbox returns the outbox as owner's relay moves it into the event log,
// holding each stream's lease for ttl from its last renewal (see
// outbox.Streams.For).
func (g *Graph) Outbox(owner string, ttl time.Duration) *outbox.Outbox {
	return g.outbox.For(owner, ttl)
}

// Repair settles every event in the outbox (see outbox.Streams.Repair)
// and returns how many second steps changed something: those that had
// been left undone. It is safe at any time, also while writes go on.
func (g *Graph) Repair(ctx context.Context) (int, error) { return g.outbox.Repair(ctx) }

// OutboxMissing reports how many outbox streams are missing: 0 when Redis
// holds the deployment's graph as far as it can tell; all of them for a
// Redis that never held it (or lost everything).
func (g *Graph) OutboxMissing(ctx context.Context) (missing, total int, err error) {
	return g.outbox.Missing(ctx)
}

// RunJobs runs the account-state jobs until ctx ends, changing at most
// rate edges a second (0: as fast as Redis allows), while this Graph holds
// the jobs lease; see followgraph.JobRunner and package jobs.
func (g *Graph) RunJobs(ctx context.Context, rate int) error { return g.jobs.Run(ctx, rate) }

// JobStats returns what this Graph's runner knows of the jobs: Running,
// the users in the jobs set when it last looked (0 while another node
// holds the lease), Pending, what the current job has left (State's
// Pending of the user, counted down), Changed, the edges its jobs changed.
func (g *Graph) JobStats() fg.JobStats { return g.jobs.Stats() }

// The operator commands' types: see package rebuild.
type (
	// Source is the graph Redis is expected to hold: the durable store
	// plus the event log's tail, loaded into a memgraph.Graph.
	Source = rebuild.Source
	// RebuildOptions tunes Rebuild.
	RebuildOptions = rebuild.Options
	// RebuildStats says what Rebuild did.
	RebuildStats = rebuild.Stats
	// ReconcileOptions tunes Reconcile.
	ReconcileOptions = rebuild.ReconcileOptions
	// ReconcileStats says what Reconcile found.
	ReconcileStats = rebuild.ReconcileStats
	// Diff is one difference Reconcile found.
	Diff = rebuild.Diff
	// DiffKind is what differs.
	DiffKind = rebuild.DiffKind
	// EdgeState is what one copy holds of an edge.
	EdgeState = rebuild.EdgeState
)

// The kinds of differences (see rebuild.DiffKind).
const (
	DiffMissing   = rebuild.DiffMissing
	DiffExtra     = rebuild.DiffExtra
	DiffSince     = rebuild.DiffSince
	DiffTombstone = rebuild.DiffTombstone
	DiffCounter   = rebuild.DiffCounter
	DiffClock     = rebuild.DiffClock
	DiffAhead     = rebuild.DiffAhead
	DiffFlags     = rebuild.DiffFlags
)

// DefaultBulkBatch is how many edges one call of the bulk script writes
// at most, unless RebuildOptions says otherwise (see rebuild).
const DefaultBulkBatch = rebuild.DefaultBulkBatch

// Rebuild writes every edge of src, live or tombstone, into both sides in
// Redis, with its version, and sets each user's counters to the sizes of
// their sets and each user's clock to at least every version of their
// edges: what restores Redis after a loss, from the durable store and
// the log. It is idempotent and safe while the service writes; see
// rebuild.Graph.Rebuild.
func (g *Graph) Rebuild(ctx context.Context, src Source, opts RebuildOptions) (RebuildStats, error) {
	return g.rebuild.Rebuild(ctx, src, opts)
}

// Reconcile compares Redis with src, the graph Redis is expected to hold,
// and reports each difference; with opts.Fix it repairs them, never
// undoing a newer change; see rebuild.Graph.Reconcile.
func (g *Graph) Reconcile(ctx context.Context, src Source, opts ReconcileOptions) (ReconcileStats, error) {
	return g.rebuild.Reconcile(ctx, src, opts)
}

// Vouched reports whether s is vouched for: it has the guard script (see
// package heal).
func (g *Graph) Vouched(ctx context.Context, s Server) (bool, error) { return g.heal.Vouched(ctx, s) }

// Checkpoint raises the checkpoint of every vouched server to seq, the
// event log's last sequence read before the call (see package heal).
func (g *Graph) Checkpoint(ctx context.Context, seq uint64) error { return g.heal.Checkpoint(ctx, seq) }

// CheckpointOf returns the checkpoint s holds, and whether it holds any.
func (g *Graph) CheckpointOf(ctx context.Context, s Server) (uint64, bool, error) {
	return g.heal.CheckpointOf(ctx, s)
}

// StreamsMissing reports how many of the outbox streams of s's slots are
// missing, of how many: all of them when s holds nothing of the graph.
func (g *Graph) StreamsMissing(ctx context.Context, s Server) (missing, total int, err error) {
	return g.heal.StreamsMissing(ctx, s)
}

// Vouch vouches for s, which holds every change whose event has a
// sequence up to seq (see package heal).
func (g *Graph) Vouch(ctx context.Context, s Server, seq uint64) error {
	return g.heal.Vouch(ctx, s, seq)
}

// VouchAll vouches for every server, as after a rebuild from a source
// that holds every change whose event has a sequence up to seq.
func (g *Graph) VouchAll(ctx context.Context, seq uint64) error { return g.heal.VouchAll(ctx, seq) }

// ClaimHeal takes or renews, for owner and for ttl, the lease of healing
// s, and reports whether owner holds it.
func (g *Graph) ClaimHeal(ctx context.Context, s Server, owner string, ttl time.Duration) (bool, error) {
	return g.heal.ClaimHeal(ctx, s, owner, ttl)
}

// ReleaseHeal gives up owner's lease of healing s, if it holds it.
func (g *Graph) ReleaseHeal(ctx context.Context, s Server, owner string) error {
	return g.heal.ReleaseHeal(ctx, s, owner)
}

// Touches reports whether e changes a side kept on s.
func (g *Graph) Touches(s Server, e fg.Event) bool { return g.heal.Touches(s, e) }

// InitOutbox creates every outbox stream that does not exist, each with
// its slot's graph marker under a new epoch, and returns how many it
// created: for a new deployment, and after Rebuild has restored a graph
// that Redis lost (see package heal).
func (g *Graph) InitOutbox(ctx context.Context) (int, error) { return g.heal.InitOutbox(ctx) }

// MarkIntact gives a graph marker to every slot whose outbox stream
// exists and whose marker does not, and returns how many it marked
// (see package heal). Serve calls it at start.
func (g *Graph) MarkIntact(ctx context.Context) (int, error) { return g.heal.MarkIntact(ctx) }

// ClaimRebuild takes or renews, for owner and for ttl, the lease of
// rebuilding the graph after Redis lost it, so that of the nodes that see
// the loss one rebuilds, and reports whether owner holds it.
func (g *Graph) ClaimRebuild(ctx context.Context, owner string, ttl time.Duration) (bool, error) {
	return lease.Claim(ctx, g.lua, "rebuild lease", g.ks.RebuildLease(), owner, ttl)
}

// ReleaseRebuild gives up owner's rebuild lease, if it holds it.
func (g *Graph) ReleaseRebuild(ctx context.Context, owner string) error {
	return lease.Release(ctx, g.lua, "rebuild lease", g.ks.RebuildLease(), owner)
}
