package jobs

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/rueidis"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/redisgraph/internal/errs"
	"github.com/followgraph/followgraph/redisgraph/internal/layout"
	"github.com/followgraph/followgraph/redisgraph/internal/lists"
	"github.com/followgraph/followgraph/redisgraph/internal/scripts"
	"github.com/followgraph/followgraph/redisgraph/internal/wire"
)

// Batches are the sizes of a job's batches: how many edges one call of
// the archive script changes.
type Batches struct {
	// Hide: with u's side written once per batch, 16 keeps nearly every
	// call of a user with millions of followers near a millisecond
	// (docs/BENCHMARKS.md "Redis: a job over a user with 2M followers").
	Hide int
	// Show, for a show or a drop, whose members come by HSCAN in the
	// hash's order, not the set's, so that each call's counterparts are
	// scattered over memory: at 16 a call, 3.6 and 6.7% of the calls of a
	// restore of 2M followers took over a millisecond, at 8 0.05 and 0.12%
	// (docs/BENCHMARKS.md "Redis: a job over a user with 2M followers").
	Show int
	// Cluster, of a hide, a show and a drop on a Cluster, where the
	// counterparts' sides are each a call of their own (lua/pairside.lua,
	// a few commands on one user's keys) and the user's side one call for
	// the batch: the size bounds no script's work on scattered keys there,
	// only the user's side, and each batch costs three round trips, so it
	// is larger (docs/BENCHMARKS.md "Redis Cluster: a job").
	Cluster int
}

// DefaultBatches are the sizes a Jobs starts with; the benchmarks that
// compare sizes change them.
var DefaultBatches = Batches{Hide: 16, Show: 8, Cluster: 64}

// batches returns the sizes of a hide's batch and a show's (or drop's).
func (j *Jobs) batches() (hide, show int) {
	if j.ks.Cluster() {
		return j.Batches.Cluster, j.Batches.Cluster
	}
	return j.Batches.Hide, j.Batches.Show
}

// Sides are the sides an account-state job hides: follows, blocks and
// requests, each way, the edges into the user first. (A mute is on the
// muter's side only; the mutes of a hidden user by others need a
// muted-by set first: docs/design/states.md.)
var Sides = func() []layout.Side {
	var out []layout.Side
	for _, k := range fg.Kinds {
		if !k.Edge || !k.TwoSided {
			continue
		}
		in, _ := layout.SideOfKind(k.Kind, true)
		o, _ := layout.SideOfKind(k.Kind, false)
		out = append(out, in, o)
	}
	return out
}()

// opposite returns the side of a job's side's counterparts (Sides are
// two-sided).
func opposite(s layout.Side) layout.Side {
	o, _ := s.Opposite()
	return o
}

// ErrStateChanged is Archive's error when the user's state no longer asks
// for its step: the job of the new state takes over.
var ErrStateChanged = errors.New("redisgraph: the user's state changed during its job")

// archive runs step (layout.StepHide, layout.StepShow, layout.StepDrop) on every edge
// of user of Sides, in batches (Batches), and returns how
// many it changed. It is the step the account-state job is built on
// (docs/design/states.md); on a Cluster, whose two sides of an
// edge live in two slots, each batch is two steps (archiveCounterparts).
// Run again, it finds nothing left to do. When the user's state no longer
// asks for step, it stops with ErrStateChanged.
func (j *Jobs) Archive(ctx context.Context, user fg.UserID, step string) (int64, error) {
	return j.archivePaced(ctx, user, step, nil)
}

// archivePaced is archive calling after (when not nil) with the count of
// each batch changed once it is done; an error of after stops it.
func (j *Jobs) archivePaced(ctx context.Context, user fg.UserID, step string, after func(int64) error) (int64, error) {
	var total int64
	for _, side := range Sides {
		call := func(ms []string) error {
			n, err := j.ArchiveBatch(ctx, user, side, step, ms)
			total += n
			if err == nil && after != nil {
				err = after(n)
			}
			return err
		}
		if err := j.lists.WalkViews(ctx, user, func(v lists.View) error {
			hide, show := j.batches()
			if step == layout.StepHide {
				for _, z := range j.lists.ChunkKeys(user, v, side.Set) {
					if err := j.eachFirst(ctx, z, hide, call); err != nil {
						return err
					}
				}
				return nil
			}
			for _, vh := range j.lists.ChunkKeys(user, v, side.Versions) {
				if err := j.eachHidden(ctx, vh, show, call); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			return total, err
		}
	}
	return total, nil
}

// eachFirst calls f with the first members of z, n at a time, until z
// is empty: f hides them, so each call reads the next ones.
func (j *Jobs) eachFirst(ctx context.Context, z string, n int, f func([]string) error) error {
	for {
		ms, err := j.c.Do(ctx, j.c.B().Zrange().Key(z).Min("0").Max(strconv.Itoa(n-1)).Build()).AsStrSlice()
		if err != nil || len(ms) == 0 {
			return err
		}
		if err := f(ms); err != nil {
			return err
		}
	}
}

// eachHidden calls f with the members of the versions hash vh whose
// version is stored hidden ('h' and the version), n at a time, scanning
// vh once.
func (j *Jobs) eachHidden(ctx context.Context, vh string, n int, f func([]string) error) error {
	var cursor uint64
	var batch []string
	for {
		scan, err := j.c.Do(ctx, j.c.B().Hscan().Key(vh).Cursor(cursor).Count(int64(n)).Build()).AsScanEntry()
		if err != nil {
			return err
		}
		for j := 0; j+1 < len(scan.Elements); j += 2 {
			if !strings.HasPrefix(scan.Elements[j+1], "h") {
				continue
			}
			if batch = append(batch, scan.Elements[j]); len(batch) == n {
				if err := f(batch); err != nil {
					return err
				}
				batch = batch[:0]
			}
		}
		if cursor = scan.Cursor; cursor == 0 {
			break
		}
	}
	if len(batch) > 0 {
		return f(batch)
	}
	return nil
}

// ArchiveBatch runs the archive script once, on the edges of user's side
// with the counterparts whose members are ms.
//
// The users of the batch are touched (package stamps): the script
// changes their counters without returning their stamps, and no read of
// the Graph may answer a cached hash from before it. Touched before the
// script is sent, since a read may see its effect in Redis before its
// reply arrives here (State's Pending reaching 0, say), and again after,
// for stamps.TTL from then.
func (j *Jobs) ArchiveBatch(ctx context.Context, user fg.UserID, side layout.Side, step string, ms []string) (int64, error) {
	touch := func() {
		j.stamps.Touch(user)
		for _, m := range ms {
			if c, ok := wire.MemberID(m); ok {
				j.stamps.Touch(c)
			}
		}
	}
	touch()
	defer touch()
	n, err := j.archiveScript(ctx, user, side, step, ms)
	if j.faults.Replied != nil {
		j.faults.Replied(user, ms)
	}
	return n, err
}

// archiveScript is ArchiveBatch's call of the archive script (on a
// Cluster, after archiveCounterparts).
func (j *Jobs) archiveScript(ctx context.Context, user fg.UserID, side layout.Side, step string, ms []string) (int64, error) {
	keys := scripts.ArchiveKeys{Set: j.ks.User(user, side.Set), Versions: j.ks.User(user, side.Versions),
		H: j.ks.User(user, layout.Counters), Rf: j.ks.User(user, layout.Flags)}
	args := scripts.ArchiveArgs{Step: step, Mine: side.Code, Theirs: opposite(side).Code, UserMember: wire.Member(user),
		Members: make([]string, 0, 2*len(ms))}
	if j.ks.Cluster() {
		answers, err := j.archiveCounterparts(ctx, user, side, step, ms)
		if err != nil {
			return 0, err
		}
		if j.faults.Step != nil {
			if err := j.faults.Step(user); err != nil {
				return 0, err
			}
		}
		args.Members = append(append(args.Members, ms...), answers...)
		n, err := j.lua.Exec(ctx, scripts.Archive.Call(keys, args)).AsInt64()
		if err != nil {
			return 0, errs.Wrap("job", err)
		}
		return n, nil
	}
	for _, m := range ms {
		c, ok := wire.MemberID(m)
		if !ok {
			return 0, fg.Errorf(fg.EInternal, "redisgraph: member %q of %s is not a user id", m, j.ks.User(user, side.Set))
		}
		keys.Counterparts = append(keys.Counterparts, j.ks.User(c, opposite(side).Set), j.ks.User(c, opposite(side).Versions),
			j.ks.User(c, layout.Counters), j.ks.User(c, layout.Flags))
		args.Members = append(args.Members, m)
	}
	n, err := j.lua.Exec(ctx, scripts.Archive.Call(keys, args)).AsInt64()
	if err == nil && n < 0 {
		return 0, ErrStateChanged
	}
	return n, err
}

// archiveCounterparts is the first step of a batch of a job on a Cluster:
// each counterpart's side of its edge with user, by lua/pairside.lua on
// the counterpart's slot, pipelined. It returns the answer of each of ms,
// in their order, for lua/archive.lua to write user's side by ("0" for a
// member whose edge user's side no longer holds as the step needs: that
// call skips it too). It reads user's state first, and stops with
// ErrStateChanged when it no longer asks for step; a state changed after
// that read is met by the next batch, since the second step completes
// what this one did whatever the state (lua/archive.lua).
func (j *Jobs) archiveCounterparts(ctx context.Context, user fg.UserID, side layout.Side, step string, ms []string) ([]string, error) {
	// The state, and what user's side holds of each member, read by the
	// chunks of user's view, checked (package lists).
	var verPlan, setPlan []lists.MemberGroup
	res, _, err := j.lists.ReadChunked(ctx, []fg.UserID{user}, func(vs []lists.View) rueidis.Commands {
		cmds := rueidis.Commands{j.c.B().Hget().Key(j.ks.User(user, layout.Counters)).Field("s").Build()}
		verPlan, setPlan = j.lists.ByChunk(user, vs[0], side.Versions, ms, len(ms)), nil
		for _, grp := range verPlan {
			cmds = append(cmds, j.c.B().Hmget().Key(grp.Key).Field(grp.Members(ms)...).Build())
		}
		if step == layout.StepHide {
			setPlan = j.lists.ByChunk(user, vs[0], side.Set, ms, len(ms))
			for _, grp := range setPlan {
				cmds = append(cmds, j.c.B().Zmscore().Key(grp.Key).Member(grp.Members(ms)...).Build())
			}
		}
		return cmds
	})
	if err != nil {
		return nil, errs.Wrap("job", err)
	}
	word, err := res[0].ToString()
	if rueidis.IsRedisNil(err) {
		word, err = fg.StateActive.String(), nil
	}
	vers, scores := make([]rueidis.RedisMessage, len(ms)), make([]rueidis.RedisMessage, len(ms))
	res = res[1:]
	for _, plan := range []struct {
		groups []lists.MemberGroup
		into   []rueidis.RedisMessage
	}{{verPlan, vers}, {setPlan, scores}} {
		for _, grp := range plan.groups {
			vals, err2 := res[0].ToArray()
			if err2 == nil && len(vals) != len(grp.At) {
				err2 = fmt.Errorf("%d values for %d members", len(vals), len(grp.At))
			}
			err = errors.Join(err, err2)
			for i, j := range grp.At {
				if i < len(vals) {
					plan.into[j] = vals[i]
				}
			}
			res = res[1:]
		}
	}
	if err != nil {
		return nil, errs.Wrap("job", err)
	}
	active := word == fg.StateActive.String()
	if (step == layout.StepShow) != active || step == layout.StepDrop && word != fg.StateDeleted.String() {
		return nil, ErrStateChanged
	}
	answers := make([]string, len(ms))
	var calls []scripts.Call
	var at []int // the index in ms of each call's member
	called := make(map[string]bool, len(ms))
	for i, m := range ms {
		answers[i] = strconv.Itoa(int(layout.PairNewer))
		v, _ := vers[i].ToString()
		if step == layout.StepHide {
			score, err := scores[i].AsFloat64()
			if err != nil {
				continue // no longer on user's side
			}
			if v == "" {
				v = wire.VersionHex(fg.VersionAt(int64(score)))
			}
		} else if hidden, ok := strings.CutPrefix(v, "h"); ok {
			v = hidden
		} else {
			continue // no longer hidden
		}
		c, ok := wire.MemberID(m)
		if !ok {
			return nil, fg.Errorf(fg.EInternal, "redisgraph: member %q of %s is not a user id", m, j.ks.User(user, side.Set))
		}
		if called[m] {
			continue // named twice by HSCAN: the script reads the first's answer
		}
		called[m] = true
		calls = append(calls, j.fx.PairSideCall(c, opposite(side), user, step, v))
		at = append(at, i)
	}
	for j, r := range j.lua.ExecMulti(ctx, calls) {
		n, err := r.AsInt64()
		if err != nil {
			return nil, errs.Wrap("job", err)
		}
		answers[at[j]] = strconv.FormatInt(n, 10)
	}
	return answers, nil
}
