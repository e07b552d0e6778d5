package redisgraph

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	fg "github.com/followgraph/followgraph"
)

// BenchmarkJob deactivates, then makes active again, a user with
// -archive-followers followers who follows 1000 of them, on the standalone
// Redis of FOLLOWGRAPH_TEST_REDIS: each time by SetState, then RunJobs
// unthrottled until the user has left the jobs set (its job done), with
// SLOWLOG logging every command over a millisecond meanwhile. The graph is
// written by Rebuild from a memgraph first (not timed). It reports each
// job's seconds, the slowest command Redis logged and how many were over
// 1 ms, and checks the counts after each job (0 followers shown, then all).
// With -job-show-batches, it does so once for each show batch size given,
// side by side in one run over the same graph.
//
//	go test -run '^$' -bench BenchmarkJob -benchtime 1x -timeout 30m ./redisgraph/
//	go test -run '^$' -bench BenchmarkJob -benchtime 1x -timeout 60m ./redisgraph/ -args -job-show-batches 16,8,16,8
func BenchmarkJob(b *testing.B) {
	ctx := context.Background()
	c := standaloneClient(b)
	n := *archiveFollowers
	const user = fg.UserID(1)
	g := celebrityGraph(b, c, user, n)
	// runJobs starts a runner, with the show batch size given (set
	// before it starts, and read by it only), and returns what stops it.
	runJobs := func(batch int) (stop func()) {
		showBatch = batch
		jobCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- g.RunJobs(jobCtx, 0) }()
		return func() {
			cancel()
			if err := <-done; err != context.Canceled {
				b.Errorf("RunJobs = %v", err)
			}
		}
	}
	defer func(old int) { showBatch = old }(showBatch)
	inJobs := func() bool {
		return c.Do(ctx, c.B().Zscore().Key(g.jobsKey(user)).Member(user.String()).Build()).Error() == nil
	}

	restore := slowlogAll(b, c)
	defer restore()
	b.ResetTimer()
	for b.Loop() {
		for _, batch := range *jobShowBatches {
			stop := runJobs(batch)
			for _, step := range []struct {
				name  string
				state fg.State
				nin   int64
			}{{"deactivate", fg.StateDeactivated, 0}, {"active", fg.StateActive, int64(n)}} {
				mustDo(b, c, c.B().SlowlogReset().Build())
				began := time.Now()
				if _, err := g.SetState(ctx, user, step.state); err != nil {
					b.Fatal(err)
				}
				for inJobs() {
					time.Sleep(10 * time.Millisecond)
				}
				took := time.Since(began)
				if nin, _ := c.Do(ctx, c.B().Hget().Key(g.key(user, kindCounters)).Field("nin").Build()).AsInt64(); nin != step.nin {
					b.Fatalf("after the job to %s, nin(1) = %d, want %d", step.state, nin, step.nin)
				}
				if st, err := g.State(ctx, user); err != nil || st.Pending != 0 || st.State != step.state {
					b.Fatalf("State(1) after its job = %+v, %v", st, err)
				}
				slow, slowest := slowSince(b, c)
				name := fmt.Sprintf("%s-show%d", step.name, batch)
				b.ReportMetric(took.Seconds(), name+"-s")
				b.ReportMetric(float64(slow), name+"-cmds-over-1ms")
				b.ReportMetric(float64(slowest.Microseconds()), name+"-max-cmd-µs")
				b.Logf("%s (show batch %d): the job of %d edges in %v; %d commands over 1 ms, the slowest %v",
					step.name, batch, n+1000, took.Round(time.Millisecond), slow, slowest)
			}
			stop()
		}
	}
}

var jobShowBatches = intList("job-show-batches", []int{8}, "the show batch sizes BenchmarkJob runs a deactivate and an active again with, in turn (e.g. 16,8,16,8)")

// intList defines a flag of comma-separated ints, def by default.
func intList(name string, def []int, usage string) *[]int {
	v := &def
	flag.Func(name, usage, func(s string) error {
		*v = nil
		for f := range strings.SplitSeq(s, ",") {
			n, err := strconv.Atoi(f)
			if err != nil || n < 1 {
				return fmt.Errorf("%q is not a batch size", f)
			}
			*v = append(*v, n)
		}
		return nil
	})
	return v
}
