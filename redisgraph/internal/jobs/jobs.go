// Package jobs runs the account-state jobs (docs/design/states.md). A
// change of state puts its user in the jobs set of its slot
// (lua/state.lua: one set on a standalone Redis, one per slot on a
// Cluster); a runner takes the users from it, oldest change first, and
// brings each user's edges to its state by the archive step (Archive):
// hide for a deactivated or suspended user, show for an active one, hide
// then drop for a deleted one. Its progress is in Redis, not in the
// runner: the hidden edges themselves, and the user staying in the set
// until its job is done (lua/jobdone.lua removes it only if the state is
// still the one the job ran for), so a runner that dies leaves the job to
// the next, which redoes nothing (each step skips what is done). Of the
// nodes that run jobs, the one that holds the jobs lease runs them, one
// user at a time. On a Cluster a runner looks at every slot's set,
// topology.Round a round trip, so an idle one looks less often
// (jobsPollCluster); a change of state on the runner's own Graph wakes
// it at once.
package jobs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/redisgraph/internal/effects"
	"github.com/followgraph/followgraph/redisgraph/internal/errs"
	"github.com/followgraph/followgraph/redisgraph/internal/keyspace"
	"github.com/followgraph/followgraph/redisgraph/internal/layout"
	"github.com/followgraph/followgraph/redisgraph/internal/lease"
	"github.com/followgraph/followgraph/redisgraph/internal/lists"
	"github.com/followgraph/followgraph/redisgraph/internal/scripts"
	"github.com/followgraph/followgraph/redisgraph/internal/stamps"
	"github.com/followgraph/followgraph/redisgraph/internal/topology"
)

const (
	jobsLeaseTTL    = 10 * time.Second       // how long a silent runner keeps the jobs
	jobsLeaseRenew  = time.Second            // how often a runner renews it
	jobsPoll        = 200 * time.Millisecond // how often an idle runner looks for jobs
	jobsPollCluster = time.Second            // the same on a Cluster, where a look reads 16384 sets
	jobsBatch       = 100                    // users a runner reads from the jobs set at a time
)

// Jobs runs the jobs of the graph of ks, and knows the figures of those
// it runs (Stats).
type Jobs struct {
	c      rueidis.Client
	ks     keyspace.Space
	lua    *scripts.Runner
	lists  *lists.Lists
	fx     *effects.Effects
	stamps *stamps.Stamps
	state  func(ctx context.Context, user fg.UserID) (fg.AccountState, error) // the user's state, with its pending edges
	faults Faults

	// Batches are the sizes of the batches (DefaultBatches).
	Batches Batches

	running, pending, changed atomic.Int64
	leading                   atomic.Bool   // this runner held the lease at its last look
	wake                      chan struct{} // a change of state on this Graph: look for jobs now
}

// Faults are the tests' faults in a job; nil is none.
type Faults struct {
	Step    func(user fg.UserID) error             // runs between the counterparts' step and the user's (Cluster); fails the batch
	Replied func(user fg.UserID, members []string) // runs once a batch has its reply
}

// New returns the jobs of the graph of ks. state reads a user's account
// state and what its job has left (the engine's State).
func New(c rueidis.Client, ks keyspace.Space, lua *scripts.Runner, l *lists.Lists, fx *effects.Effects, st *stamps.Stamps,
	state func(ctx context.Context, user fg.UserID) (fg.AccountState, error), faults Faults) *Jobs {
	return &Jobs{c: c, ks: ks, lua: lua, lists: l, fx: fx, stamps: st, state: state, faults: faults,
		Batches: DefaultBatches, wake: make(chan struct{}, 1)}
}

// Wake tells this runner that a job is there, so that it
// does not wait for its next look, and, when that runner holds the
// lease, counts the job in JobStats' Running at once (the look sets the
// figure it reads).
func (j *Jobs) Wake() {
	if j.leading.Load() {
		j.running.Add(1)
	}
	select {
	case j.wake <- struct{}{}:
	default:
	}
}

// errLeaseLost stops a job whose runner no longer holds the jobs lease.
var errLeaseLost = errors.New("redisgraph: the jobs lease went to another node")

// Run runs the account-state jobs until ctx ends, changing at most
// rate edges a second (0: as fast as Redis allows), while this Graph holds
// the jobs lease; see followgraph.JobRunner.
func (j *Jobs) Run(ctx context.Context, rate int) error {
	poll := jobsPoll
	if j.ks.Cluster() {
		poll = jobsPollCluster
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	owner := "jobs-" + hex.EncodeToString(b[:])
	leaseKey := j.ks.JobsLease()
	defer j.leading.Store(false)
	defer func() { // at a clean stop, so that another node takes the jobs over at once
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		_ = lease.Release(ctx, j.lua, "jobs lease", leaseKey, owner)
	}()
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		ran, err := j.runSomeJobs(ctx, rate, leaseKey, owner)
		if err != nil && ctx.Err() == nil && !errors.Is(err, errLeaseLost) {
			return err
		}
		if ran {
			continue
		}
		select {
		case <-ctx.Done():
		case <-time.After(poll):
		case <-j.wake:
		}
	}
}

// runSomeJobs runs the jobs of the first users of the jobs set, if owner
// holds (or takes) the lease, and reports whether there were any.
func (j *Jobs) runSomeJobs(ctx context.Context, rate int, leaseKey, owner string) (bool, error) {
	held, err := j.claimJobs(ctx, leaseKey, owner)
	if err != nil || !held {
		j.running.Store(0)
		j.leading.Store(false)
		return false, err
	}
	n, users, err := j.jobUsers(ctx)
	if err != nil {
		return false, errs.Wrap("jobs", err)
	}
	j.running.Store(n)
	j.leading.Store(true)
	for _, word := range users {
		u, err := fg.ParseUserID(word)
		if err != nil {
			return false, fg.Errorf(fg.EInternal, "redisgraph: member %q of a jobs set is not a user id", word)
		}
		if err := j.runJob(ctx, u, rate, leaseKey, owner); err != nil {
			return true, err
		}
	}
	return len(users) > 0, nil
}

// jobUsers returns how many users the jobs sets hold, and the first
// jobsBatch of them: on a standalone Redis the oldest changes first; on a
// Cluster the sets that hold any are found by their sizes, and each
// slot's users come oldest first.
func (j *Jobs) jobUsers(ctx context.Context) (int64, []string, error) {
	if !j.ks.Cluster() {
		key := j.ks.Jobs(0)
		res := j.c.DoMulti(ctx, j.c.B().Zcard().Key(key).Build(),
			j.c.B().Zrange().Key(key).Min("0").Max(strconv.Itoa(jobsBatch-1)).Build())
		n, err := res[0].AsInt64()
		if err != nil {
			return 0, nil, err
		}
		users, err := res[1].AsStrSlice()
		return n, users, err
	}
	var total int64
	var sets []string
	jobs := make([]string, j.ks.Groups())
	for i := range jobs {
		jobs[i] = j.ks.JobsOf(j.ks.OutboxOf(i))
	}
	err := topology.Each(ctx, j.c, jobs, func(key string) rueidis.Completed { return j.c.B().Zcard().Key(key).Build() },
		func(i int, r rueidis.RedisResult) error {
			n, err := r.AsInt64()
			if total += n; n > 0 {
				sets = append(sets, jobs[i])
			}
			return err
		})
	if err != nil {
		return 0, nil, err
	}
	var users []string
	for _, key := range sets {
		if len(users) >= jobsBatch {
			break
		}
		us, err := j.c.Do(ctx, j.c.B().Zrange().Key(key).Min("0").Max(strconv.Itoa(jobsBatch-len(users)-1)).Build()).AsStrSlice()
		if err != nil {
			return 0, nil, err
		}
		users = append(users, us...)
	}
	return total, users, nil
}

func (j *Jobs) claimJobs(ctx context.Context, leaseKey, owner string) (bool, error) {
	return lease.Claim(ctx, j.lua, "jobs lease", leaseKey, owner, jobsLeaseTTL)
}

// runJob brings user's edges to its state, at most rate edges a second,
// and takes it out of the jobs set when it is done and its state is still
// the one the job ran for. A state changed during the job ends it early,
// with nil: the user stays in the set, and the next pass runs the new
// state's job.
func (j *Jobs) runJob(ctx context.Context, user fg.UserID, rate int, leaseKey, owner string) error {
	vals, err := j.c.Do(ctx, j.c.B().Hmget().Key(j.ks.User(user, layout.Counters)).Field("s", "sv").Build()).ToArray()
	if err != nil || len(vals) != 2 {
		return errs.Wrap("job", err)
	}
	word, _ := vals[0].ToString()
	sv, _ := vals[1].ToString()
	state, ok := fg.ParseState(word)
	if !ok {
		state = fg.StateActive // never set: nothing to restore, the steps find nothing
	}
	steps := []string{layout.StepHide}
	switch state {
	case fg.StateActive:
		steps = []string{layout.StepShow}
	case fg.StateDeleted:
		steps = []string{layout.StepHide, layout.StepDrop}
	}
	if st, err := j.state(ctx, user); err == nil {
		j.pending.Store(st.Pending)
	}
	began, done, renewed := time.Now(), int64(0), time.Now()
	after := func(n int64) error {
		done += n
		j.changed.Add(n)
		j.pending.Store(max(j.pending.Load()-n, 0))
		if rate > 0 {
			due := began.Add(time.Duration(float64(done) / float64(rate) * float64(time.Second)))
			if wait := time.Until(due); wait > 0 {
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(wait):
				}
			}
		}
		if time.Since(renewed) >= jobsLeaseRenew {
			held, err := j.claimJobs(ctx, leaseKey, owner)
			if err != nil {
				return err
			}
			if !held {
				return errLeaseLost
			}
			renewed = time.Now()
		}
		return nil
	}
	for _, step := range steps {
		if _, err := j.archivePaced(ctx, user, step, after); err != nil {
			if errors.Is(err, ErrStateChanged) {
				return nil
			}
			return err
		}
	}
	j.pending.Store(0)
	jobDone := scripts.JobDone.Call(scripts.JobDoneKeys{H: j.ks.User(user, layout.Counters), Jobs: j.ks.Jobs(user)},
		scripts.JobDoneArgs{Version: sv, User: user.String()})
	if err := j.lua.Exec(ctx, jobDone).Error(); err != nil {
		return errs.Wrap("job", err)
	}
	return nil
}

// Stats returns what this runner knows of the jobs: Running,
// the users in the jobs set when it last looked (0 while another node holds
// the lease), Pending, what the current job has left (State's Pending of
// the user, counted down), Changed, the edges its jobs changed.
func (j *Jobs) Stats() fg.JobStats {
	return fg.JobStats{Running: int(j.running.Load()), Pending: j.pending.Load(), Changed: j.changed.Load()}
}

// Count returns how many users the jobs sets hold: whose jobs are to run
// or running.
func (j *Jobs) Count(ctx context.Context) (int64, error) {
	n, _, err := j.jobUsers(ctx)
	return n, err
}
