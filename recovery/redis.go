package recovery

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/eventlog"
	"github.com/followgraph/followgraph/memgraph"
	"github.com/followgraph/followgraph/redisgraph"
)

// Redis keeps the hot copy in Redis whole, at start (Recover) and while
// serving (Watch), against two kinds of damage:
//
//   - Redis lost the graph (its outbox streams, and with them the graph's
//     markers, are gone: redisgraph refuses writes and reads meanwhile).
//     It is rebuilt from the durable store and the log.
//   - A server came back behind what was acknowledged without losing
//     everything: a replica promoted after its master died, a server
//     restarted from an append-only file that lacks its last second. It
//     no longer has the vouched scripts (redisgraph's vouch.go), so its
//     reads and writes answer 503. It is healed: the changes after its
//     checkpoint are replayed into it from the log's applied window and
//     the log (versions make a change it has already a no-op), then it is
//     vouched for again. When the window no longer reaches back to its
//     checkpoint, the graph is rebuilt instead.
//
// Of several nodes on one Redis, the one that holds a server's heal lease
// heals it, and the one that holds the rebuild lease rebuilds; the others
// wait. KeepCheckpoints moves every vouched server's checkpoint along the
// log, so that what a heal replays is the last moments only.
type Redis struct {
	Graph  *redisgraph.Graph
	Store  Events
	Log    *eventlog.Log
	Owner  string // this node's name, for the leases
	Logger *slog.Logger
}

// Leases: how long a rebuilding or healing node's lease lasts unless
// renewed (every third of it): another node takes over the work of a
// node that died doing it.
const (
	rebuildLease = 15 * time.Second
	healLease    = 15 * time.Second
)

// lateReplays are when, after a heal, its window is replayed again: the
// last longer than a write waits for the log (eventlog's hook timeout),
// so that the event of a change the server lost, stored in the log after
// the heal read it (a write that was not acknowledged: see redisgraph's
// confirm), reaches the server too, and the store and Redis agree; the
// first soon, as such an event usually comes within a moment.
var lateReplays = []time.Duration{time.Second, 5 * time.Second, 15 * time.Second}

// applyChunk is how many events a heal applies at a time.
const applyChunk = 512

// Recover makes sure Redis holds the graph and every server is vouched
// for before the node takes requests: it marks a graph written before
// markers existed, rebuilds a lost one (a new deployment is the same case
// with an empty store), and heals the servers not vouched for, or waits
// for the nodes that do.
func (r *Redis) Recover(ctx context.Context) error {
	missing, _, err := r.Graph.OutboxMissing(ctx)
	if err != nil {
		return err
	}
	if missing == 0 {
		if n, err := r.Graph.MarkIntact(ctx); err != nil {
			return err
		} else if n > 0 {
			r.Logger.Info("marked the graph in Redis as whole (written before markers)", "slots", n)
		}
	}
	for {
		waiting, err := r.pass(ctx)
		if err != nil || waiting == 0 {
			return err
		}
		select { // another node rebuilds or heals: wait for it
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// Watch keeps Redis whole while the node serves, until ctx ends: when
// lost says a read saw the graph lost, when unvouched says a read or
// write met a server not vouched for, and every interval in case none
// did. Errors are logged and the work tried again at the next turn.
func (r *Redis) Watch(ctx context.Context, lost, unvouched <-chan struct{}, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-lost:
		case <-unvouched:
		case <-t.C:
		}
		if _, err := r.pass(ctx); err != nil && ctx.Err() == nil {
			r.Logger.Error("keeping the graph in Redis whole failed; trying again", "err", err)
		}
	}
}

// pass rebuilds the graph if Redis lost it, else heals each server not
// vouched for, and returns how many of those jobs another node holds.
func (r *Redis) pass(ctx context.Context) (waiting int, err error) {
	missing, total, err := r.Graph.OutboxMissing(ctx)
	if err != nil {
		return 0, err
	}
	if missing > 0 {
		r.Logger.Log(ctx, lossLevel(missing, total), "Redis does not hold the graph (outbox streams missing): reads and writes answer 503 until it is rebuilt",
			"streams_missing", missing, "of", total)
		done, err := r.rebuild(ctx)
		if err != nil || !done {
			return 1, err
		}
	}
	srvs, err := r.Graph.Servers(ctx)
	if err != nil {
		return 0, err
	}
	for _, s := range srvs {
		ok, err := r.Graph.Vouched(ctx, s)
		if err != nil {
			return 0, err
		}
		if ok {
			continue
		}
		done, err := r.heal(ctx, s)
		if err != nil {
			return 0, err
		}
		if !done {
			waiting++
		}
	}
	return waiting, nil
}

// lossLevel is the level of the line that says Redis does not hold the
// graph: a warning when part of it is missing; Debug when all is (a new
// deployment, or a total loss), which the line of the node that rebuilds
// tells apart (rebuild).
func lossLevel(missing, total int) slog.Level {
	if missing == total {
		return slog.LevelDebug
	}
	return slog.LevelWarn
}

// heal heals s if this node gets its lease, and reports whether s is
// vouched for when it returns (healed here, or by another node).
func (r *Redis) heal(ctx context.Context, s redisgraph.Server) (bool, error) {
	ok, err := r.Graph.ClaimHeal(ctx, s, r.Owner, healLease)
	if err != nil || !ok {
		return false, err
	}
	ctx, release := r.keepLease(ctx, func(ctx context.Context) { r.Graph.ClaimHeal(ctx, s, r.Owner, healLease) },
		func(ctx context.Context) { r.Graph.ReleaseHeal(ctx, s, r.Owner) })
	defer release()
	if ok, err := r.Graph.Vouched(ctx, s); err != nil || ok {
		return ok, err // healed by the node that held the lease before
	}
	start := time.Now()
	since, had, err := r.Graph.CheckpointOf(ctx, s)
	if err != nil {
		return false, err
	}
	level := slog.LevelWarn
	if !had {
		level = slog.LevelInfo // never vouched for: a new deployment
	}
	r.Logger.Log(ctx, level, "a Redis server is not vouched for (restarted, failed over or new): replaying the changes after its checkpoint; its reads and writes answer 503 meanwhile",
		"server", s.String(), "checkpoint", since)
	applied, upTo, complete, err := r.replay(ctx, s, since, time.Time{})
	if err != nil {
		return false, err
	}
	if !complete {
		r.Logger.Warn("the log's applied window no longer reaches back to the server's checkpoint: rebuilding the graph instead",
			"server", s.String(), "checkpoint", since, "window", eventlog.AppliedWindow.String())
		done, err := r.rebuild(ctx)
		return done, err
	}
	if err := r.Graph.Vouch(ctx, s, upTo); err != nil {
		return false, err
	}
	r.Logger.Log(ctx, level, "the Redis server is vouched for again", "server", s.String(), "events_replayed", applied,
		"checkpoint", upTo, "took", time.Since(start).Round(time.Millisecond).String())
	go r.replayLate(context.WithoutCancel(ctx), s, upTo, time.Now().Add(clockSkew))
	return true, nil
}

// replay applies the events of the log after since that change a side on
// s (and, unless before is zero, were decided before it), and returns how
// many it applied, the sequence it read up to, and whether the log held
// every event after since (Log.Since).
func (r *Redis) replay(ctx context.Context, s redisgraph.Server, since uint64, before time.Time) (applied int, upTo uint64, complete bool, err error) {
	batch := make([]fg.Event, 0, applyChunk)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if err := r.Graph.Apply(ctx, batch); err != nil {
			return fmt.Errorf("recovery: heal %s: %w", s, err)
		}
		applied += len(batch)
		batch = batch[:0]
		return nil
	}
	upTo, complete, err = r.Log.Since(ctx, since, func(m eventlog.Message) error {
		if !r.Graph.Touches(s, m.Event) || !before.IsZero() && !m.Event.Version.Time().Before(before) {
			return nil
		}
		if batch = append(batch, m.Event); len(batch) == applyChunk {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	return applied, upTo, complete, err
}

// clockSkew bounds how far the clocks of the nodes may differ: a late
// replay takes the events decided before the heal, by their versions'
// times (the deciding node's clock), with this much to spare.
const clockSkew = time.Second

// replayLate replays the window of a heal again, at each of lateReplays
// after it, the events decided before healed (the changes made since are
// the healed server's own).
func (r *Redis) replayLate(ctx context.Context, s redisgraph.Server, since uint64, healed time.Time) {
	start := time.Now()
	for _, at := range lateReplays {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Until(start.Add(at))):
		}
		if n, _, _, err := r.replay(ctx, s, since, healed); err != nil {
			r.Logger.Warn("replaying a heal's window again failed", "server", s.String(), "err", err)
		} else {
			r.Logger.Debug("replayed a heal's window again", "server", s.String(), "events", n)
		}
	}
}

// keepLease renews a lease (renew) every third of its time while the work
// runs, and returns the work's context and what ends it and gives the
// lease up.
func (r *Redis) keepLease(ctx context.Context, renew, release func(context.Context)) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		t := time.NewTicker(rebuildLease / 3)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				renew(ctx)
			}
		}
	}()
	return ctx, func() {
		cancel()
		<-renewed
		done, stop := context.WithTimeout(context.Background(), time.Second)
		release(done)
		stop()
	}
}

// rebuild rebuilds the graph if this node gets the lease, vouches for the
// servers not vouched for, and reports whether it did.
func (r *Redis) rebuild(ctx context.Context) (bool, error) {
	ok, err := r.Graph.ClaimRebuild(ctx, r.Owner, rebuildLease)
	if err != nil || !ok {
		return false, err
	}
	ctx, release := r.keepLease(ctx, func(ctx context.Context) { r.Graph.ClaimRebuild(ctx, r.Owner, rebuildLease) },
		func(ctx context.Context) { r.Graph.ReleaseRebuild(ctx, r.Owner) })
	defer release()
	start := time.Now()
	// Every event up to seq is in the store or in the log's tail as Load
	// reads them, which is what vouching for the servers with seq needs.
	seq, err := r.Log.LastSeq(ctx)
	if err != nil {
		return false, err
	}
	src := memgraph.New()
	if err := Load(ctx, src, r.Store, r.Log); err != nil {
		return false, err
	}
	// A Redis without the graph over a store and log that hold one lost
	// it (a warning); over empty ones it is a new deployment.
	if st := src.Stats(); st.Edges > 0 || st.Users > 0 {
		r.Logger.Warn("rebuilding the graph in Redis from the durable store and the log: reads and writes answer 503 until it is done",
			"edges", st.Edges, "users", st.Users)
	} else {
		r.Logger.Info("a new deployment: Redis holds no graph under this prefix, and the durable store and the log hold none; setting Redis up")
	}
	rs, err := r.Graph.Rebuild(ctx, src, redisgraph.RebuildOptions{})
	if err != nil {
		return false, fmt.Errorf("recovery: rebuild: %w", err)
	}
	if _, err := r.Graph.InitOutbox(ctx); err != nil {
		return false, fmt.Errorf("recovery: rebuild: %w", err)
	}
	// The store's tombstones below its horizon are gone, and so absent
	// from Redis now: Redis refuses below it what they would have stopped.
	if h, err := src.TombstoneHorizon(ctx); err != nil || h > 0 {
		if err == nil {
			err = r.Graph.RaiseTombstoneHorizon(ctx, h)
		}
		if err != nil {
			return false, fmt.Errorf("recovery: rebuild: %w", err)
		}
	}
	srvs, err := r.Graph.Servers(ctx)
	if err != nil {
		return false, fmt.Errorf("recovery: rebuild: %w", err)
	}
	for _, s := range srvs {
		if ok, err := r.Graph.Vouched(ctx, s); err != nil {
			return false, fmt.Errorf("recovery: rebuild: %w", err)
		} else if !ok {
			if err := r.Graph.Vouch(ctx, s, seq); err != nil {
				return false, fmt.Errorf("recovery: rebuild: %w", err)
			}
		}
	}
	if rs.Refused > 0 {
		r.Logger.Warn("the rebuild refused live edges older than Redis's tombstone horizon, of which Redis keeps no record: "+
			"the store and log are older than Redis's purge (a restored backup?), and these edges were ended since", "sides_refused", rs.Refused)
	}
	r.Logger.Info("Redis holds the graph", "sides_written", rs.Written, "took", time.Since(start).Round(time.Millisecond).String())
	return true, nil
}

// KeepCheckpoints raises every vouched server's checkpoint to the log's
// settled sequence (eventlog.Log.Settled) every interval, until ctx ends
// (redisgraph.Checkpoint).
// A failure is tried again at the next tick.
func (r *Redis) KeepCheckpoints(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		seq, err := r.Log.Settled(ctx)
		if err == nil {
			err = r.Graph.Checkpoint(ctx, seq)
		}
		if err != nil && ctx.Err() == nil {
			r.Logger.Debug("raising the Redis checkpoints failed; trying again", "err", err)
		}
	}
}
