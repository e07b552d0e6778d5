package rebuild

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"golang.org/x/time/rate"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/redisgraph/internal/errs"
	"github.com/followgraph/followgraph/redisgraph/internal/layout"
	"github.com/followgraph/followgraph/redisgraph/internal/scripts"
	"github.com/followgraph/followgraph/redisgraph/internal/wire"
)

// repairEdge is an edge a repair writes, and the index in the side's
// diffs of the difference it fixes.
type repairEdge struct {
	e    bulkEdge
	diff int
}

// repair writes the expected states of the edges of side s of user u that
// differ (c.repairs), in calls of up to r.batch edges; the last call also
// sets the counter and raises the clock to c.clock, fixing c.extra. It
// marks in c.diffs what it fixed.
func (r *reconciler) repair(ctx context.Context, u fg.UserID, s layout.Side, c *sideCheck) error {
	return r.inBatches(ctx, len(c.repairs), len(c.extra), func(lo, hi int, last bool) error {
		call := c.repairs[lo:hi]
		flags, err := r.repairCall(ctx, u, s, call, c.clock, last)
		if err != nil {
			return err
		}
		for j, it := range call {
			c.diffs[it.diff].Fixed = flags[j] == '1'
		}
		if last {
			for _, k := range c.extra {
				c.diffs[k].Fixed = true
			}
		}
		return nil
	})
}

// inBatches calls write with the bounds of each batch of up to r.batch of n
// repairs, and at least once (the last call, last true, also makes the
// extra repairs of the user's census), each after waiting for a token per
// repair it makes. It returns the first error.
func (r *reconciler) inBatches(ctx context.Context, n, extra int, write func(lo, hi int, last bool) error) error {
	for lo := 0; ; lo += r.batch {
		hi := min(n, lo+r.batch)
		last := hi == n
		tokens := hi - lo
		if last {
			tokens += extra
		}
		if err := waitTokens(ctx, r.limit, tokens); err != nil {
			return err
		}
		if err := write(lo, hi, last); err != nil {
			return err
		}
		if last {
			return nil
		}
	}
}

// waitTokens waits until limit grants n tokens (none when limit is nil),
// in steps of at most its burst, the most WaitN grants at once, so that a
// call is charged every repair it makes. It returns ctx's error if ctx
// ends first.
func waitTokens(ctx context.Context, limit *rate.Limiter, n int) error {
	if limit == nil {
		return nil
	}
	for n > 0 {
		k := min(n, limit.Burst())
		if err := limit.WaitN(ctx, k); err != nil {
			return err
		}
		n -= k
	}
	return nil
}

// repairCall writes the edges of call on side s of user u in one call of
// the bulk script, which also moves the counter (the last call, last, sets
// it to the set's size) and raises the clock to clk (0: leaves it), and
// returns the script's flags: '1' for each edge of
// call (in the order it leaves call in) that it wrote.
func (r *reconciler) repairCall(ctx context.Context, u fg.UserID, s layout.Side, call []repairEdge, clk fg.Version, last bool) (string, error) {
	// In the order bulkArgs gives the edges, which the flags follow.
	slices.SortStableFunc(call, func(a, b repairEdge) int { return cmp.Compare(a.e.state, b.e.state) })
	es := make([]bulkEdge, len(call))
	for j, it := range call {
		es[j] = it.e
	}
	res, err := r.g.lua.Exec(ctx, scripts.Bulk.Call(r.g.sideKeys(u, s), bulkArgs(s, es, bulkCall{horizon: wire.VersionHex(r.horizon), clk: clk, recount: last}))).ToArray()
	if err == nil && len(res) < 3 {
		err = fmt.Errorf("bulk script returned %d values", len(res))
	}
	if err != nil {
		return "", errs.Wrap("reconcile: repair", err)
	}
	flags, err := res[2].ToString()
	if err == nil && len(flags) != len(call) {
		err = fmt.Errorf("bulk script returned flags %q for %d edges", flags, len(call))
	}
	if err != nil {
		return "", errs.Wrap("reconcile: repair", err)
	}
	return flags, nil
}
