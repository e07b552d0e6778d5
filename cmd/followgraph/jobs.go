package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	fg "github.com/followgraph/followgraph"
)

// How serve runs the engine's account-state jobs (followgraph.JobRunner):
// for its whole life, logging their progress while they run.
const (
	// defaultJobsRate is --jobs-rate's default: a job of 2M edges in 20 s,
	// while reads at 10,000 a second keep a p99 near the one they have
	// without a job; unthrottled they do not (docs/BENCHMARKS.md, "Reads
	// during a job, and --jobs-rate's default").
	defaultJobsRate = 100_000

	jobsLogEvery   = 5 * time.Second  // a progress line this often while jobs run
	jobsBackoff    = time.Second      // the first wait before RunJobs is called again after a failure
	jobsMaxBackoff = 30 * time.Second // the longest, after failures in a row
)

// runJobs runs j's jobs until ctx ends, changing at most rate edges a
// second over all of them (0: as fast as the engine allows), and logs
// their progress. When RunJobs fails (returns before ctx ends), the error
// is logged and RunJobs called again after a backoff that doubles while
// it keeps failing at once.
func runJobs(ctx context.Context, j fg.JobRunner, rate int, logger *slog.Logger) {
	done := make(chan struct{})
	go func() { defer close(done); logJobs(ctx, j, rate, logger, jobsLogEvery) }()
	defer func() { <-done }()
	backoff := jobsBackoff
	for {
		start := time.Now()
		err := j.RunJobs(ctx, rate)
		if ctx.Err() != nil {
			return
		}
		if time.Since(start) > jobsMaxBackoff {
			backoff = jobsBackoff // it ran a while: not failing at once
		}
		logger.Error("account-state jobs failed; running them again", "err", err, "retry_in", backoff.String())
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, jobsMaxBackoff)
	}
}

// logJobs logs, every interval while any job runs, how many run, the
// edges they have left and have changed, and the rate they changed them
// at since the last line; and one line once they are all done.
func logJobs(ctx context.Context, j fg.JobRunner, maxRate int, logger *slog.Logger, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	last, lastAt := j.JobStats(), time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			st := j.JobStats()
			rate := float64(st.Changed-last.Changed) / now.Sub(lastAt).Seconds()
			switch {
			case st.Running > 0:
				logger.Info("account-state jobs running", "running", st.Running, "pending", st.Pending,
					"changed", st.Changed, "rate", int64(rate), "max_rate", maxRate)
			case last.Running > 0:
				logger.Info("account-state jobs done", "running", 0, "pending", st.Pending,
					"changed", st.Changed, "rate", int64(rate), "max_rate", maxRate)
			}
			last, lastAt = st, now
		}
	}
}

// registerJobMetrics exports j's figures, read at each scrape.
func registerJobMetrics(reg prometheus.Registerer, j fg.JobRunner) {
	reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "followgraph_jobs_running",
			Help: "Account-state jobs not done: users being hidden, restored or deleted."},
			func() float64 { return float64(j.JobStats().Running) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "followgraph_jobs_pending_edges",
			Help: "Edges the account-state jobs have left to change."},
			func() float64 { return float64(j.JobStats().Pending) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "followgraph_jobs_changed_edges_total",
			Help: "Edges changed by account-state jobs since the process started."},
			func() float64 { return float64(j.JobStats().Changed) }),
	)
}
