package recovery

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/followgraph/followgraph/eventlog"
	"github.com/followgraph/followgraph/memgraph"
	"github.com/followgraph/followgraph/redisgraph"
)

// Redis keeps the hot copy in Redis whole: at start (Recover) and while
// serving (Watch), when Redis has lost the graph (its outbox streams, and
// with them the graph's markers, are gone: redisgraph refuses writes and
// reads meanwhile), it rebuilds it from the durable store and the log,
// then marks it whole again. Of several nodes on one Redis, the one that
// holds the rebuild lease rebuilds; the others wait for the markers.
type Redis struct {
	Graph  *redisgraph.Graph
	Store  Events
	Log    *eventlog.Log
	Owner  string // this node's name, for the lease
	Logger *slog.Logger
}

// rebuildLease is how long a rebuilding node's lease lasts unless renewed
// (every third of it): another node takes over the rebuild of a node that
// died doing it.
const rebuildLease = 15 * time.Second

// Recover makes sure Redis holds the graph before the node takes
// requests: it marks a graph written before markers existed, and rebuilds
// a lost one (a new deployment is the same case with an empty store).
func (r *Redis) Recover(ctx context.Context) error {
	for {
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
			return nil
		}
		done, err := r.rebuild(ctx)
		if err != nil || done {
			return err
		}
		// Another node rebuilds: wait for it.
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// Watch rebuilds the graph whenever Redis has lost it, until ctx ends:
// when lost says a read saw the loss, and every interval in case no read
// did. Rebuild errors are logged and retried at the next turn.
func (r *Redis) Watch(ctx context.Context, lost <-chan struct{}, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-lost:
		case <-t.C:
		}
		missing, total, err := r.Graph.OutboxMissing(ctx)
		if err != nil || missing == 0 {
			continue
		}
		r.Logger.Warn("Redis has lost the graph (outbox streams missing): reads and writes answer 503 until it is rebuilt",
			"streams_missing", missing, "of", total)
		if _, err := r.rebuild(ctx); err != nil && ctx.Err() == nil {
			r.Logger.Error("rebuilding the graph in Redis failed; trying again", "err", err)
		}
	}
}

// rebuild rebuilds the graph if this node gets the lease, and reports
// whether it did.
func (r *Redis) rebuild(ctx context.Context) (bool, error) {
	ok, err := r.Graph.ClaimRebuild(ctx, r.Owner, rebuildLease)
	if err != nil || !ok {
		return false, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	renewed := make(chan struct{})
	go func() { // keep the lease while the rebuild runs
		defer close(renewed)
		t := time.NewTicker(rebuildLease / 3)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				r.Graph.ClaimRebuild(ctx, r.Owner, rebuildLease)
			}
		}
	}()
	defer func() {
		cancel()
		<-renewed
		release, done := context.WithTimeout(context.Background(), time.Second)
		r.Graph.ReleaseRebuild(release, r.Owner)
		done()
	}()
	start := time.Now()
	src := memgraph.New()
	if err := Load(ctx, src, r.Store, r.Log); err != nil {
		return false, err
	}
	st := src.Stats()
	r.Logger.Warn("rebuilding the graph in Redis from the durable store and the log", "edges", st.Edges, "users", st.Users)
	rs, err := r.Graph.Rebuild(ctx, src, redisgraph.RebuildOptions{})
	if err != nil {
		return false, fmt.Errorf("recovery: rebuild: %w", err)
	}
	if _, err := r.Graph.InitOutbox(ctx); err != nil {
		return false, fmt.Errorf("recovery: rebuild: %w", err)
	}
	r.Logger.Info("Redis holds the graph again", "sides_written", rs.Written, "took", time.Since(start).Round(time.Millisecond).String())
	return true, nil
}
