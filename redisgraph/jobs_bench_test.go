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
	"github.com/followgraph/followgraph/redisgraph/internal/layout"
	"github.com/followgraph/followgraph/redisgraph/internal/redistest"
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
//	go test -run '^$' -bench 'BenchmarkJob$' -benchtime 1x -timeout 30m ./redisgraph/
//	go test -run '^$' -bench 'BenchmarkJob$' -benchtime 1x -timeout 60m ./redisgraph/ -args -job-show-batches 16,8,16,8
func BenchmarkJob(b *testing.B) {
	c := redistest.Standalone(b)
	n := *archiveFollowers
	const user = fg.UserID(1)
	g := celebrityGraph(b, c, user, n)
	restore := slowlogAll(b, c)
	defer restore()
	jobPairs(b, g, user, n, *jobShowBatches, &g.jobs.Batches.Show, func(step string, batch int, job func() time.Duration) {
		mustDo(b, c, c.B().SlowlogReset().Build())
		took := job()
		slow, slowest := slowSince(b, c)
		name := fmt.Sprintf("%s-show%d", step, batch)
		b.ReportMetric(took.Seconds(), name+"-s")
		b.ReportMetric(float64(slow), name+"-cmds-over-1ms")
		b.ReportMetric(float64(slowest.Microseconds()), name+"-max-cmd-µs")
		b.Logf("%s (show batch %d): the job of %d edges in %v; %d commands over 1 ms, the slowest %v",
			step, batch, n+1000, took.Round(time.Millisecond), slow, slowest)
	})
}

// jobPairs is the loop of the jobs benchmarks: for each size of batches,
// in turn, it sets *size to it (before the runner starts, which alone
// reads it), runs g's jobs, and has measure time a deactivate, then an
// active again, of user, who has n followers (job sets the state and
// waits for its job: timeJob). *size is put back at the end.
func jobPairs(b *testing.B, g *Graph, user fg.UserID, n int, batches []int, size *int, measure func(step string, batch int, job func() time.Duration)) {
	defer func(old int) { *size = old }(*size)
	b.ResetTimer()
	for b.Loop() {
		for _, batch := range batches {
			*size = batch
			stop := startRunner(b, g)
			for _, step := range []struct {
				name  string
				state fg.State
				nin   int64
			}{{"deactivate", fg.StateDeactivated, 0}, {"active", fg.StateActive, int64(n)}} {
				measure(step.name, batch, func() time.Duration { return timeJob(b, g, user, step.state, step.nin) })
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

// timeJob sets user's state to st on g, whose runner runs, waits until
// the user has left the jobs set (its job done), checks that its
// followers shown are then nin, and returns how long it took.
func timeJob(b *testing.B, g *Graph, user fg.UserID, st fg.State, nin int64) time.Duration {
	b.Helper()
	ctx := context.Background()
	began := time.Now()
	if _, err := g.SetState(ctx, user, st); err != nil {
		b.Fatal(err)
	}
	for g.c.Do(ctx, g.c.B().Zscore().Key(g.ks.Jobs(user)).Member(user.String()).Build()).Error() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	took := time.Since(began)
	if got, _ := g.c.Do(ctx, g.c.B().Hget().Key(g.ks.User(user, layout.Counters)).Field("nin").Build()).AsInt64(); got != nin {
		b.Fatalf("after the job to %s, nin(%d) = %d, want %d", st, user, got, nin)
	}
	if a, err := g.State(ctx, user); err != nil || a.Pending != 0 || a.State != st {
		b.Fatalf("State(%d) after its job = %+v, %v", user, a, err)
	}
	return took
}

// BenchmarkJobCluster is BenchmarkJob on the tests' Redis Cluster of three
// masters on this machine, where each batch of a job is two steps (the
// counterparts' sides, one call each, pipelined, then the user's): it
// reports each job's seconds and edges a second (no SLOWLOG: its commands
// are on three servers). With -job-cluster-batches, it does so once for
// each batch size given, side by side in one run over the same graph.
//
//	go test -run '^$' -bench BenchmarkJobCluster -benchtime 1x -timeout 60m ./redisgraph/ -args -archive-followers 200000 -job-cluster-batches 16,64,16,64
func BenchmarkJobCluster(b *testing.B) {
	c := redistest.Cluster(b)
	n := *archiveFollowers
	const user = fg.UserID(1)
	g := celebrityGraph(b, c, user, n)
	jobPairs(b, g, user, n, *jobClusterBatches, &g.jobs.Batches.Cluster, func(step string, batch int, job func() time.Duration) {
		took := job()
		edges := float64(n + 1000)
		name := fmt.Sprintf("%s-batch%d", step, batch)
		b.ReportMetric(took.Seconds(), name+"-s")
		b.ReportMetric(edges/took.Seconds(), name+"-edges/s")
		b.Logf("%s (batch %d): the job of %d edges in %v, %.0f edges/s", step, batch, n+1000, took.Round(time.Millisecond), edges/took.Seconds())
	})
}

var jobClusterBatches = intList("job-cluster-batches", []int{64}, "the batch sizes BenchmarkJobCluster runs a deactivate and an active again with, in turn (e.g. 16,64,16,64)")

// startRunner runs g's jobs, unthrottled, and returns what stops them.
func startRunner(b *testing.B, g *Graph) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.RunJobs(ctx, 0) }()
	return func() {
		cancel()
		if err := <-done; err != context.Canceled {
			b.Errorf("RunJobs = %v", err)
		}
	}
}
