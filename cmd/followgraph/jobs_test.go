package main

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	fg "github.com/followgraph/followgraph"
)

// TestFlag_JobsRate: --jobs-rate, and FOLLOWGRAPH_JOBS_RATE, take a
// non-negative count of edges a second; serve refuses any other value,
// naming the flag, before it opens anything.
func TestFlag_JobsRate(t *testing.T) {
	for _, tc := range []struct {
		name, arg, env, says string
	}{
		{"Negative", "-1", "", "--jobs-rate -1"},
		{"NotANumber", "fast", "", "jobs-rate"},
		{"Fraction", "1.5", "", "jobs-rate"},
		{"NegativeFromEnv", "", "-5", "--jobs-rate -5"},
		{"NotANumberFromEnv", "", "fast", "FOLLOWGRAPH_JOBS_RATE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"serve", "--addr", freeAddr(t), "--data", t.TempDir()}
			if tc.arg != "" {
				args = append(args, "--jobs-rate", tc.arg)
			}
			cmd := exec.Command(binary, args...)
			if tc.env != "" {
				cmd.Env = append(cmd.Environ(), "FOLLOWGRAPH_JOBS_RATE="+tc.env)
			}
			out, err := cmd.CombinedOutput()
			if err == nil || !strings.Contains(string(out), tc.says) {
				t.Fatalf("serve --jobs-rate %q (FOLLOWGRAPH_JOBS_RATE %q): %v, want a refusal naming %q\n%s", tc.arg, tc.env, err, tc.says, out)
			}
		})
	}
	// 0 (the default) and a positive rate start.
	for _, rate := range []string{"0", "250"} {
		s := start(t, t.TempDir(), "--jobs-rate", rate)
		if _, err := s.client.Follow(t.Context(), 1, 2); err != nil {
			t.Fatalf("--jobs-rate %s: %v", rate, err)
		}
		s.stop(t)
	}
}

// TestJobs_Metrics: serve runs the engine's account-state jobs at
// --jobs-rate, exports their figures in /metrics, and logs their progress
// every 5 s while they run and once when they are done.
func TestJobs_Metrics(t *testing.T) {
	const edges, rate = 1000, 100 // a job of about 10 s
	s := start(t, t.TempDir(), "--jobs-rate", "100")
	ctx := t.Context()
	for _, name := range []string{"followgraph_jobs_running", "followgraph_jobs_pending_edges", "followgraph_jobs_changed_edges_total"} {
		if v := metric(t, s, name); v != 0 {
			t.Fatalf("%s = %v at start, want 0", name, v)
		}
	}
	var wg sync.WaitGroup
	var failed atomic.Bool
	for w := range 8 {
		wg.Go(func() {
			for u := fg.UserID(2 + w); u < 2+edges; u += 8 {
				if _, err := s.client.Follow(ctx, u, 1); err != nil {
					t.Error(err)
					failed.Store(true)
					return
				}
			}
		})
	}
	wg.Wait()
	if failed.Load() {
		t.FailNow()
	}

	begin := time.Now()
	if _, err := s.client.SetState(ctx, 1, fg.StateDeactivated); err != nil {
		t.Fatal(err)
	}
	if running, pending := metric(t, s, "followgraph_jobs_running"), metric(t, s, "followgraph_jobs_pending_edges"); running != 1 || pending <= 0 {
		t.Errorf("while hiding user 1: followgraph_jobs_running %v, followgraph_jobs_pending_edges %v; want 1 and more than 0", running, pending)
	}
	for {
		a, err := s.client.State(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		if a.Pending == 0 {
			break
		}
		if time.Since(begin) > time.Minute {
			t.Fatalf("the job still has %d edges left after a minute:\n%s", a.Pending, s.logs)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if took := time.Since(begin); took < edges/rate*time.Second/2 {
		t.Errorf("the job of %d edges took %s at --jobs-rate %d: the rate was not applied", edges, took, rate)
	}
	if changed := metric(t, s, "followgraph_jobs_changed_edges_total"); changed < edges {
		t.Errorf("followgraph_jobs_changed_edges_total = %v after a job of %d edges", changed, edges)
	}

	// The line after the job's end says it is done; it comes within 5 s.
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(s.logs.String(), "account-state jobs done") && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if v := metric(t, s, "followgraph_jobs_running"); v != 0 {
		t.Errorf("followgraph_jobs_running = %v once the job is done", v)
	}
	var running, done int
	for _, line := range strings.Split(s.logs.String(), "\n") {
		var l struct {
			Msg                             string
			Running, Pending, Changed, Rate *int64
			MaxRate                         *int64 `json:"max_rate"`
		}
		if json.Unmarshal([]byte(line), &l) != nil || !strings.HasPrefix(l.Msg, "account-state jobs") {
			continue
		}
		if l.Running == nil || l.Pending == nil || l.Changed == nil || l.Rate == nil || l.MaxRate == nil || *l.MaxRate != rate {
			t.Errorf("a jobs line without running, pending, changed, rate and max_rate %d: %s", rate, line)
			continue
		}
		switch l.Msg {
		case "account-state jobs running":
			running++
		case "account-state jobs done":
			done++
		}
	}
	if running < 1 || done != 1 {
		t.Errorf("%d lines of the running job and %d of its end, want at least 1 and 1:\n%s", running, done, s.logs)
	}
}

// stubbornJobs is a followgraph.JobRunner whose RunJobs fails the first
// fails times, then runs until its context ends.
type stubbornJobs struct {
	fails int
	calls atomic.Int32
	rates chan int
	stats atomic.Pointer[fg.JobStats]
}

func (j *stubbornJobs) RunJobs(ctx context.Context, rate int) error {
	j.rates <- rate
	if int(j.calls.Add(1)) <= j.fails {
		return errors.New("redis: connection refused")
	}
	<-ctx.Done()
	return ctx.Err()
}

func (j *stubbornJobs) JobStats() fg.JobStats { return *j.stats.Load() }

// TestJobs_RunAgain: when RunJobs fails, serve logs the error and calls
// it again, with the same rate, after a backoff; when its context ends it
// returns, logging nothing more.
func TestJobs_RunAgain(t *testing.T) {
	j := &stubbornJobs{fails: 2, rates: make(chan int, 10)}
	j.stats.Store(&fg.JobStats{})
	var logs syncBuffer
	logger := slog.New(slog.NewJSONHandler(&logs, nil))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	begin := time.Now()
	go func() { defer close(done); runJobs(ctx, j, 7, logger) }()
	for i := range 3 {
		select {
		case r := <-j.rates:
			if r != 7 {
				t.Errorf("call %d of RunJobs with rate %d, want 7", i+1, r)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("RunJobs called %d times in 10 s, want 3:\n%s", i, logs.String())
		}
	}
	if took := time.Since(begin); took < jobsBackoff+2*jobsBackoff {
		t.Errorf("3 calls after 2 failures in %s: want backoffs of %s and %s between them", took, jobsBackoff, 2*jobsBackoff)
	}
	cancel()
	<-done
	if n := strings.Count(logs.String(), "account-state jobs failed"); n != 2 || !strings.Contains(logs.String(), "connection refused") {
		t.Errorf("%d lines of a failure, want 2 with the error:\n%s", n, logs.String())
	}
}

// TestJobs_Log: the progress lines come while jobs run, with their
// figures and the rate of the last interval, and one comes when they are
// done; none while nothing runs.
func TestJobs_Log(t *testing.T) {
	j := &stubbornJobs{}
	j.stats.Store(&fg.JobStats{})
	var logs syncBuffer
	logger := slog.New(slog.NewJSONHandler(&logs, nil))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	const every = 20 * time.Millisecond
	go func() { defer close(done); logJobs(ctx, j, 50, logger, every) }()
	lines := func() []string { return strings.Split(strings.TrimSpace(logs.String()), "\n") }
	waitLines := func(n int) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for len(lines()) < n || logs.String() == "" {
			if time.Now().After(deadline) {
				t.Fatalf("%d log lines after 5 s, want %d:\n%s", len(lines()), n, logs.String())
			}
			time.Sleep(every / 4)
		}
	}

	time.Sleep(5 * every)
	if l := logs.String(); l != "" {
		t.Fatalf("lines while no job runs:\n%s", l)
	}
	j.stats.Store(&fg.JobStats{Running: 2, Pending: 900, Changed: 100})
	waitLines(2)
	j.stats.Store(&fg.JobStats{Running: 0, Pending: 0, Changed: 1000})
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(logs.String(), "account-state jobs done") {
		if time.Now().After(deadline) {
			t.Fatalf("no line of the jobs' end:\n%s", logs.String())
		}
		time.Sleep(every / 4)
	}
	time.Sleep(5 * every)
	cancel()
	<-done

	var running, ended int
	for _, line := range lines() {
		var l struct {
			Msg                             string
			Running, Pending, Changed, Rate int64
			MaxRate                         int64 `json:"max_rate"`
		}
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		switch {
		case l.Msg == "account-state jobs running" && l.Running == 2 && l.Pending == 900 && l.Changed == 100 && l.MaxRate == 50:
			running++
		case l.Msg == "account-state jobs done" && l.Running == 0 && l.Changed == 1000 && l.Rate > 0 && l.MaxRate == 50:
			ended++
		default:
			t.Errorf("an unexpected line: %s", line)
		}
	}
	if running < 2 || ended != 1 {
		t.Errorf("%d lines of running jobs and %d of their end, want at least 2 and 1:\n%s", running, ended, logs.String())
	}
}

// TestServe_States: the binary serves the routes of account states: a
// user never set is active, setting the state it has answers it, and a
// bad body or id is refused.
func TestServe_States(t *testing.T) {
	s := start(t, t.TempDir())
	const active = `{"id":"1","state":"active","since":null,"pending":0}`
	if b := s.do(t, "GET", "/v1/users/1/state", "", 200, ""); strings.TrimSpace(string(b)) != active {
		t.Errorf("GET /v1/users/1/state: %s, want %s", b, active)
	}
	if b := s.do(t, "PUT", "/v1/users/1/state", `{"state":"active"}`, 200, ""); strings.TrimSpace(string(b)) != active {
		t.Errorf("PUT /v1/users/1/state active: %s, want %s", b, active)
	}
	s.do(t, "PUT", "/v1/users/1/state", `{"state":"banned"}`, 400, fg.EInvalidArgument)
	s.do(t, "PUT", "/v1/users/1/state", "", 400, fg.EInvalidArgument)
	s.do(t, "PUT", "/v1/users/0/state", `{"state":"active"}`, 400, fg.EInvalidID)
	s.do(t, "GET", "/v1/users/x/state", "", 400, fg.EInvalidID)
	a, err := s.client.State(t.Context(), 1)
	if err != nil || a != (fg.AccountState{ID: 1}) {
		t.Errorf("client State(1) = %+v, %v; want active, never set", a, err)
	}
}
