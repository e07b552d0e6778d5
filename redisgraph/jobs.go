package redisgraph

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
	"github.com/followgraph/followgraph/redisgraph/internal/layout"
)

// The account-state jobs (docs/design/states.md). A change of
// state puts its user in the jobs set of its slot (lua/state.lua: one set
// on a standalone Redis, one per slot on a Cluster);
// a runner takes the users from it, oldest change first, and brings each
// user's edges to its state by the archive step (archive.go): hide for a
// deactivated or suspended user, show for an active one, hide then drop
// for a deleted one. Its progress is in Redis, not in the runner: the
// hidden edges themselves, and the user staying in the set until its job
// is done (jobDone removes it only if the state is still the one the job
// ran for), so a runner that dies leaves the job to the next, which
// redoes nothing (each step skips what is done). Of the nodes that run jobs, the
// one that holds the jobs lease runs them, one user at a time. On a
// Cluster a runner looks at every slot's set, 1024 a round trip, so an
// idle one looks less often (jobsPollCluster); a change of state on the
// runner's own Graph wakes it at once.

const (
	jobsLeaseTTL    = 10 * time.Second       // how long a silent runner keeps the jobs
	jobsLeaseRenew  = time.Second            // how often a runner renews it
	jobsPoll        = 200 * time.Millisecond // how often an idle runner looks for jobs
	jobsPollCluster = time.Second            // the same on a Cluster, where a look reads 16384 sets
	jobsChunk       = 100                    // users a runner reads from the jobs set at a time
)

// jobStats are the figures of the jobs this Graph runs (JobStats).
type jobStats struct {
	running, pending, changed atomic.Int64
	leading                   atomic.Bool   // this Graph's runner held the lease at its last look
	wake                      chan struct{} // a change of state on this Graph: look for jobs now
}

// wakeJobs tells this Graph's runner that a job is there, so that it
// does not wait for its next look, and, when that runner holds the
// lease, counts the job in JobStats' Running at once (the look sets the
// figure it reads).
func (g *Graph) wakeJobs() {
	if g.jobs.leading.Load() {
		g.jobs.running.Add(1)
	}
	select {
	case g.jobs.wake <- struct{}{}:
	default:
	}
}

// errLeaseLost stops a job whose runner no longer holds the jobs lease.
var errLeaseLost = errors.New("redisgraph: the jobs lease went to another node")

// scriptJobDone removes the user ARGV[2] from the jobs set KEYS[2] if its
// state's version (h's sv, KEYS[1]) is still ARGV[1], the one its job ran
// for; a state changed since keeps it there, for the new state's job.
var scriptJobDone = newVouchedScript(`
if redis.call('HGET', KEYS[1], 'sv') == ARGV[1] then return redis.call('ZREM', KEYS[2], ARGV[2]) end
return 0`, false)

// RunJobs runs the account-state jobs until ctx ends, changing at most
// rate edges a second (0: as fast as Redis allows), while this Graph holds
// the jobs lease; see followgraph.JobRunner.
func (g *Graph) RunJobs(ctx context.Context, rate int) error {
	poll := jobsPoll
	if g.cluster {
		poll = jobsPollCluster
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	owner := "jobs-" + hex.EncodeToString(b[:])
	lease := g.jobsKey(0) + ":lease"
	defer g.jobs.leading.Store(false)
	defer func() { // at a clean stop, so that another node takes the jobs over at once
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		_ = g.exec(ctx, scriptRelease, []string{lease}, []string{owner}).Error()
	}()
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		ran, err := g.runSomeJobs(ctx, rate, lease, owner)
		if err != nil && ctx.Err() == nil && !errors.Is(err, errLeaseLost) {
			return err
		}
		if ran {
			continue
		}
		select {
		case <-ctx.Done():
		case <-time.After(poll):
		case <-g.jobs.wake:
		}
	}
}

// runSomeJobs runs the jobs of the first users of the jobs set, if owner
// holds (or takes) the lease, and reports whether there were any.
func (g *Graph) runSomeJobs(ctx context.Context, rate int, lease, owner string) (bool, error) {
	held, err := g.claimJobs(ctx, lease, owner)
	if err != nil || !held {
		g.jobs.running.Store(0)
		g.jobs.leading.Store(false)
		return false, err
	}
	n, users, err := g.jobUsers(ctx)
	if err != nil {
		return false, unavailable("jobs", err)
	}
	g.jobs.running.Store(n)
	g.jobs.leading.Store(true)
	for _, word := range users {
		u, err := fg.ParseUserID(word)
		if err != nil {
			return false, fg.Errorf(fg.EInternal, "redisgraph: member %q of a jobs set is not a user id", word)
		}
		if err := g.runJob(ctx, u, rate, lease, owner); err != nil {
			return true, err
		}
	}
	return len(users) > 0, nil
}

// jobUsers returns how many users the jobs sets hold, and the first
// jobsChunk of them: on a standalone Redis the oldest changes first; on a
// Cluster the sets that hold any are found by their sizes, and each
// slot's users come oldest first.
func (g *Graph) jobUsers(ctx context.Context) (int64, []string, error) {
	if !g.cluster {
		key := g.jobsKey(0)
		res := g.c.DoMulti(ctx, g.c.B().Zcard().Key(key).Build(),
			g.c.B().Zrange().Key(key).Min("0").Max(strconv.Itoa(jobsChunk-1)).Build())
		n, err := res[0].AsInt64()
		if err != nil {
			return 0, nil, err
		}
		users, err := res[1].AsStrSlice()
		return n, users, err
	}
	var total int64
	var sets []string
	err := g.eachOutbox(g.perStream(ctx, func(key string) rueidis.Completed {
		return g.c.B().Zcard().Key(key + ":jobs").Build()
	}), func(key string, n int64) {
		if total += n; n > 0 {
			sets = append(sets, key+":jobs")
		}
	})
	if err != nil {
		return 0, nil, err
	}
	var users []string
	for _, key := range sets {
		if len(users) >= jobsChunk {
			break
		}
		us, err := g.c.Do(ctx, g.c.B().Zrange().Key(key).Min("0").Max(strconv.Itoa(jobsChunk-len(users)-1)).Build()).AsStrSlice()
		if err != nil {
			return 0, nil, err
		}
		users = append(users, us...)
	}
	return total, users, nil
}

func (g *Graph) claimJobs(ctx context.Context, lease, owner string) (bool, error) {
	n, err := g.exec(ctx, scriptLease, []string{lease}, []string{owner, strconv.FormatInt(jobsLeaseTTL.Milliseconds(), 10)}).AsInt64()
	if err != nil {
		return false, unavailable("jobs lease", err)
	}
	return n == 1, nil
}

// runJob brings user's edges to its state, at most rate edges a second,
// and takes it out of the jobs set when it is done and its state is still
// the one the job ran for. A state changed during the job ends it early,
// with nil: the user stays in the set, and the next pass runs the new
// state's job.
func (g *Graph) runJob(ctx context.Context, user fg.UserID, rate int, lease, owner string) error {
	vals, err := g.c.Do(ctx, g.c.B().Hmget().Key(g.key(user, layout.Counters)).Field("s", "sv").Build()).ToArray()
	if err != nil || len(vals) != 2 {
		return unavailable("job", err)
	}
	word, _ := vals[0].ToString()
	sv, _ := vals[1].ToString()
	state, ok := fg.ParseState(word)
	if !ok {
		state = fg.StateActive // never set: nothing to restore, the steps find nothing
	}
	steps := []string{archiveHide}
	switch state {
	case fg.StateActive:
		steps = []string{archiveShow}
	case fg.StateDeleted:
		steps = []string{archiveHide, archiveDrop}
	}
	if st, err := g.State(ctx, user); err == nil {
		g.jobs.pending.Store(st.Pending)
	}
	began, done, renewed := time.Now(), int64(0), time.Now()
	after := func(n int64) error {
		done += n
		g.jobs.changed.Add(n)
		g.jobs.pending.Store(max(g.jobs.pending.Load()-n, 0))
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
			held, err := g.claimJobs(ctx, lease, owner)
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
		if _, err := g.archivePaced(ctx, user, step, after); err != nil {
			if errors.Is(err, errStateChanged) {
				return nil
			}
			return err
		}
	}
	g.jobs.pending.Store(0)
	if err := g.exec(ctx, scriptJobDone, []string{g.key(user, layout.Counters), g.jobsKey(user)}, []string{sv, user.String()}).Error(); err != nil {
		return unavailable("job", err)
	}
	return nil
}

// JobStats returns what this Graph's runner knows of the jobs: Running,
// the users in the jobs set when it last looked (0 while another node holds
// the lease), Pending, what the current job has left (State's Pending of
// the user, counted down), Changed, the edges its jobs changed.
func (g *Graph) JobStats() fg.JobStats {
	return fg.JobStats{Running: int(g.jobs.running.Load()), Pending: g.jobs.pending.Load(), Changed: g.jobs.changed.Load()}
}
