package rebuild

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	fg "github.com/followgraph/followgraph"
)

// Reconcile is in seven files: this one runs it (the options, a pool of
// workers fed with the users to compare, the stats); scan.go finds the
// users only Redis has; read.go reads a user whole; compare.go compares
// the follows with the expected graph, and links.go the other kinds;
// repair.go writes the repairs of the follows; diff.go is the differences
// it reports.

// ReconcileOptions tunes Reconcile.
type ReconcileOptions struct {
	// Fix repairs each difference but DiffAhead.
	Fix bool
	// Rate bounds the repairs per second (0: no bound), with bursts of up
	// to a second's worth.
	Rate float64
	// Horizon is a time up to which the expected graph is known to hold
	// every change: the time it was read, less the clock skew of the API
	// nodes, once the outbox had been drained into the log. A state of an
	// edge in Redis newer than the expected graph's is a change the
	// expected graph has not seen (DiffAhead) if its version is after
	// Horizon, and wrong otherwise. The zero Horizon takes every newer
	// state for a change not yet seen: the safe choice while the service
	// writes, which leaves a wrong state that looks newer in place.
	Horizon time.Time
	// Report, if set, is called with each difference, from one goroutine
	// at a time, after its repair.
	Report func(Diff)
	// Concurrency is how many users are compared at once (default 8).
	Concurrency int
}

// ReconcileStats says what Reconcile found.
type ReconcileStats struct {
	Users int64              // users compared: those of the expected graph, and those only Redis has keys of
	Edges int64              // edges compared, counted on each side
	Diffs map[DiffKind]int64 // differences by kind, DiffAhead included
	Fixed int64              // differences repaired
}

// Differences returns how many differences were found, not counting
// DiffAhead (which are not faults).
func (s ReconcileStats) Differences() int64 {
	var n int64
	for k, c := range s.Diffs {
		if k != DiffAhead {
			n += c
		}
	}
	return n
}

// Reconcile compares Redis with src, the graph Redis is expected to hold,
// and reports each difference; with opts.Fix it repairs them. It compares
// every user of src and every user that has keys under the prefix in
// Redis (found by SCAN, on every master of a Cluster): every side of each,
// of every kind, both ways (the members and their versions, hence the
// edges' times, and tombstones), the private setting, the counters
// against the sizes of their sets, the flags set (rf) against the edges
// of the other kinds, and the clock against the versions of the user's
// edges. A tombstone that Redis need not hold is no difference (see
// DiffTombstone).
//
// Repairs are version-aware: a repair writes src's state of the edge only
// where Redis does not hold a newer one (see ReconcileOptions.Horizon), in
// one atomic step that reads the edge again (lua/bulk.lua for follows,
// lua/links.lua with lua/lib.lua's set for the other kinds), so a change
// the service makes meanwhile is never undone; the counters are then set
// to the sizes of the sets, the flags to the edges, and the clock raised.
//
// Redis is read in bounded commands (ZRANGE of 1000 entries at a time by
// keyset, as the lists are read; HSCAN; one small script for the counters),
// a user at a time per worker, so the service's commands are not held up.
// While the service writes, the sides of a user are not read in one
// instant, so a change made during the read may show as a difference;
// repairs read again and leave it alone.
//
// It returns EUnavailable when Redis fails, with the stats so far.
func (g *Graph) Reconcile(ctx context.Context, src Source, opts ReconcileOptions) (ReconcileStats, error) {
	r := &reconciler{g: g, src: src, in: inLinks(src), opts: opts, stats: ReconcileStats{Diffs: map[DiffKind]int64{}}}
	if r.opts.Concurrency <= 0 {
		r.opts.Concurrency = 8
	}
	if !opts.Horizon.IsZero() {
		r.horizon = fg.VersionAt(opts.Horizon.UnixMilli()+1) - 1 // the end of its millisecond
	}
	r.batch = DefaultBulkBatch
	if opts.Rate > 0 {
		burst := max(1, int(opts.Rate))
		r.limit = rate.NewLimiter(rate.Limit(opts.Rate), burst)
		r.batch = min(r.batch, burst)
	}

	err := r.run(ctx)
	r.stats.Users, r.stats.Edges = r.users.Load(), r.edges.Load()
	if err != nil {
		return r.stats, fmt.Errorf("redisgraph: reconcile: %w", err)
	}
	return r.stats, nil
}

// reconciler is one run of Reconcile.
type reconciler struct {
	g       *Graph
	src     Source
	in      map[fg.UserID][]fg.Event // src's blocks and requests by the user they are to
	opts    ReconcileOptions
	horizon fg.Version
	limit   *rate.Limiter // nil: no bound
	batch   int           // edges a repair call writes at most

	users, edges atomic.Int64
	mu           sync.Mutex // guards stats.Diffs and stats.Fixed, and serializes opts.Report
	stats        ReconcileStats
}

// run compares every user, opts.Concurrency at a time, until the first
// error, which it returns.
func (r *reconciler) run(ctx context.Context) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	users := make(chan fg.UserID, 4*r.opts.Concurrency)
	var wg sync.WaitGroup
	for range r.opts.Concurrency {
		wg.Go(func() {
			for u := range users {
				if ctx.Err() != nil {
					continue // drain
				}
				if err := r.user(ctx, u); err != nil {
					cancel(err)
				}
			}
		})
	}
	err := r.produce(ctx, users)
	close(users)
	wg.Wait()
	if err == nil {
		err = context.Cause(ctx)
	}
	return err
}

// produce sends the users to compare: those of src, then those that only
// Redis has keys of.
func (r *reconciler) produce(ctx context.Context, users chan<- fg.UserID) error {
	send := func(u fg.UserID) bool {
		select {
		case users <- u:
			return true
		case <-ctx.Done():
			return false
		}
	}
	var known []fg.UserID
	for u := range r.src.Users() {
		known = append(known, u)
		if !send(u) {
			return nil
		}
	}
	slices.Sort(known)
	seen := map[fg.UserID]bool{}
	return r.g.scanUsers(ctx, func(u fg.UserID) bool {
		if _, ok := slices.BinarySearch(known, u); ok || seen[u] {
			return true
		}
		seen[u] = true
		return send(u)
	})
}

// report counts diffs and passes them to opts.Report.
func (r *reconciler) report(diffs []Diff) {
	if len(diffs) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, d := range diffs {
		r.stats.Diffs[d.Kind]++
		if d.Fixed {
			r.stats.Fixed++
		}
		if r.opts.Report != nil {
			r.opts.Report(d)
		}
	}
}
