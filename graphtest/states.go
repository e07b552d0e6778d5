package graphtest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/followgraph/followgraph"
)

// RunStates runs the conformance tests of account states (Graph.State and
// SetState, and the jobs of followgraph.JobRunner) against engines made
// by newGraph. It is apart from Run because an engine may not have
// states yet; every engine that has them calls both. When the engine is a
// JobRunner the suite runs its jobs; otherwise something else must (a
// server behind an HTTP client), and the suite waits for them the same
// way, by State's Pending.
func RunStates(t *testing.T, newGraph NewGraph) {
	s := suite{newGraph: newGraph}
	for _, tt := range []test{
		{"Hide", s.testStateHide},
		{"Restore", s.testStateRestore},
		{"Delete", s.testStateDelete},
		{"Writes", s.testStateWrites},
		{"Unchanged", s.testStateUnchanged},
		{"Invalid", s.testStateInvalid},
		{"WriteWhileHidden", s.testStateWriteWhileHidden},
		{"Hook", s.testStateHook},
		{"Apply", s.testStateApply},
		{"FlipUnderFollows", s.testStateFlipUnderFollows},
		{"Random", s.testStateRandom},
	} {
		t.Run(tt.name, tt.run)
	}
}

// stateFixture builds a fresh engine like fixture and runs its jobs,
// unthrottled, until the test ends.
func (s suite) stateFixture(tb testing.TB, opts Options) *fixture {
	tb.Helper()
	f := s.fixtureWith(tb, opts)
	if j, ok := f.g.(followgraph.JobRunner); ok {
		RunJobs(tb, j, 0)
	}
	return f
}

// RunJobs runs j's jobs at rate (0: unthrottled) until tb's cleanup, which
// waits for RunJobs to return.
func RunJobs(tb testing.TB, j followgraph.JobRunner, rate int) {
	done := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { defer close(done); _ = j.RunJobs(ctx, rate) }()
	tb.Cleanup(func() { cancel(); <-done })
}

// WaitJobs waits until none of j's jobs is running (a minute at most).
func WaitJobs(tb testing.TB, j followgraph.JobRunner) {
	tb.Helper()
	for deadline := time.Now().Add(time.Minute); j.JobStats().Running > 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			tb.Fatalf("jobs still running after a minute: %+v", j.JobStats())
		}
	}
}

// setState sets user's state, checks the answer, and waits until its job
// is done.
func (f *fixture) setState(user followgraph.UserID, st followgraph.State) followgraph.AccountState {
	f.tb.Helper()
	a, err := f.g.SetState(f.ctx, user, st)
	if err != nil {
		f.tb.Fatalf("SetState(%d, %s): %v", user, st, err)
	}
	if a.ID != user || a.State != st {
		f.tb.Errorf("SetState(%d, %s) = %+v", user, st, a)
	}
	return f.waitJob(user)
}

// waitJob waits until the job of user's state has no edge left, and
// returns the state then.
func (f *fixture) waitJob(user followgraph.UserID) followgraph.AccountState {
	f.tb.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		a, err := f.g.State(f.ctx, user)
		if err != nil {
			f.tb.Fatalf("State(%d): %v", user, err)
		}
		if a.Pending == 0 {
			return a
		}
		if time.Now().After(deadline) {
			f.tb.Fatalf("State(%d): the job still has %d edges left after 30 s", user, a.Pending)
		}
		time.Sleep(time.Millisecond)
	}
}

// stateScene makes user 1 (private) an edge of every kind, both ways:
// 1 follows 2, 3 follows 1, 1 and 4 follow each other, 1 blocks 5, 6
// blocks 1, 1 mutes 7, 8 mutes 1, 1 asks to follow 9 (private), and 12
// asks to follow 1. It returns the ms of each edge by the other user.
func (f *fixture) stateScene() map[followgraph.UserID]int64 {
	f.tb.Helper()
	at := map[followgraph.UserID]int64{}
	step := func(id followgraph.UserID, do func()) { f.advance(1); at[id] = f.now(); do() }
	f.setPrivate(9, true)
	f.setPrivate(1, true)
	step(2, func() { f.follow(1, 2) })
	step(3, func() { f.follow(3, 1); f.approve(1, 3) })
	step(4, func() { f.follow(4, 1); f.approve(1, 4); f.follow(1, 4) })
	step(5, func() { f.block(1, 5) })
	step(6, func() { f.block(6, 1) })
	step(7, func() { f.mute(1, 7, 0) })
	step(8, func() { f.mute(8, 1, 0) })
	step(9, func() { f.follow(1, 9) })
	step(12, func() { f.follow(12, 1) })
	return at
}

// others are the users of stateScene other than 1.
var stateOthers = []followgraph.UserID{2, 3, 4, 5, 6, 7, 8, 9, 12}

// checkNoTraceOf checks that no reads of others show user, and that their
// counts equal their lists.
func (f *fixture) checkNoTraceOf(user followgraph.UserID, others []followgraph.UserID) {
	f.tb.Helper()
	for _, c := range f.counts(others...) {
		fo, fi, rq := f.following(c.ID), f.followers(c.ID), f.links(followgraph.ListFollowRequests, c.ID)
		if int64(len(fo)) != c.FollowingCount || int64(len(fi)) != c.FollowerCount || int64(len(rq)) != c.FollowRequests {
			f.tb.Errorf("Counts(%d) = %+v, but it follows %s, is followed by %s and has the requests %s",
				c.ID, c, formatEntries(fo), formatEntries(fi), formatEntries(rq))
		}
	}
	for _, x := range others {
		for _, l := range []list{followingList(f.g, x), followersList(f.g, x), mutualsList(f.g, x),
			linksList(f.g, followgraph.ListBlocks, x), linksList(f.g, followgraph.ListMutes, x),
			linksList(f.g, followgraph.ListFollowRequests, x)} {
			if slices.ContainsFunc(f.read(l), func(e followgraph.Entry) bool { return e.ID == user }) {
				f.tb.Errorf("%s lists %d, who is hidden", l.name, user)
			}
		}
		if r := f.relations(x, user)[0]; r != (followgraph.RelationInfo{ID: user, Relation: followgraph.RelationNone}) {
			f.tb.Errorf("Relations(%d, [%d]) = %+v, want none and no flag", x, user, r)
		}
		for _, sg := range f.suggestions(x, followgraph.MaxSuggestLimit) {
			if sg.ID == user || slices.Contains(sg.Via, user) {
				f.tb.Errorf("Suggestions(%d) has %d, who is hidden: %+v", x, user, sg)
			}
		}
	}
}

// checkNoEdges checks that user's own reads answer as for a user with no
// edges, with state st in its counts.
func (f *fixture) checkNoEdges(user followgraph.UserID, st followgraph.State) {
	f.tb.Helper()
	if c := f.counts(user)[0]; c != (followgraph.Counts{ID: user, State: st}) {
		f.tb.Errorf("Counts(%d) = %+v, want no edges and state %s", user, c, st)
	}
	for _, l := range []list{followingList(f.g, user), followersList(f.g, user), mutualsList(f.g, user),
		commonFollowingList(f.g, user, 4), commonFollowersList(f.g, 4, user), knownFollowersList(f.g, user, 2),
		linksList(f.g, followgraph.ListBlocks, user), linksList(f.g, followgraph.ListMutes, user),
		linksList(f.g, followgraph.ListFollowRequests, user)} {
		if es := f.read(l); len(es) != 0 {
			f.tb.Errorf("%s = %s, want nothing for a user who is %s", l.name, formatEntries(es), st)
		}
	}
	for _, r := range f.relations(user, stateOthers...) {
		if r != (followgraph.RelationInfo{ID: r.ID, Relation: followgraph.RelationNone}) {
			f.tb.Errorf("Relations(%d, [%d]) = %+v, want none for a user who is %s", user, r.ID, r, st)
		}
	}
	if sg := f.suggestions(user, 0); len(sg) != 0 {
		f.tb.Errorf("Suggestions(%d) = %+v, want none", user, sg)
	}
	if e := f.edge(user, 2); e.Following {
		f.tb.Errorf("IsFollowing(%d, 2) = %+v, want not following", user, e)
	}
}

func (s suite) testStateHide(t *testing.T) {
	for _, st := range []followgraph.State{followgraph.StateDeactivated, followgraph.StateSuspended} {
		t.Run(st.String(), func(t *testing.T) {
			f := s.stateFixture(t, Options{})
			f.stateScene()
			f.advance(1)
			a := f.setState(1, st)
			if a != (followgraph.AccountState{ID: 1, State: st, Since: followgraph.Millis(f.now())}) {
				t.Errorf("State(1) after the job = %+v, want %s since now, nothing pending", a, st)
			}
			f.checkNoEdges(1, st)
			f.checkNoTraceOf(1, stateOthers)
			if c := f.counts(9)[0]; c.FollowRequests != 0 {
				t.Errorf("Counts(9) = %+v: the request of hidden 1 is still counted", c)
			}
		})
	}
}

func (s suite) testStateRestore(t *testing.T) {
	f := s.stateFixture(t, Options{})
	at := f.stateScene()
	ids := append([]followgraph.UserID{1}, stateOthers...)
	before := f.describe(ids...)
	for _, st := range []followgraph.State{followgraph.StateDeactivated, followgraph.StateSuspended, followgraph.StateActive} {
		f.advance(1000)
		f.setState(1, st)
	}
	if after := f.describe(ids...); after != before {
		t.Errorf("after deactivate, suspend and active again the graph is%s\nwant, as before,%s", after, before)
	}
	checkTime(t, "IsFollowing(1, 2).Since", f.edge(1, 2).Since, at[2])
	checkTime(t, "IsFollowing(3, 1).Since", f.edge(3, 1).Since, at[3])
	if r := f.relations(1, 5, 6, 7)[:3]; !r[0].Blocking || !r[1].BlockedBy || !r[2].Muting {
		t.Errorf("Relations(1, [5 6 7]) = %+v: the blocks and the mute are not back", r)
	}
	if r := f.relations(8, 1)[0]; !r.Muting {
		t.Errorf("Relations(8, [1]) = %+v: 8's mute of 1 is not back", r)
	}
	if a := f.waitJob(1); a.State != followgraph.StateActive || a.Pending != 0 {
		t.Errorf("State(1) = %+v", a)
	}
	if c := f.counts(1)[0]; c.State != followgraph.StateActive {
		t.Errorf("Counts(1) = %+v: an active user's counts carry no state", c)
	}
}

func (s suite) testStateDelete(t *testing.T) {
	f := s.stateFixture(t, Options{})
	f.stateScene()
	f.advance(1)
	f.setState(1, followgraph.StateDeactivated) // deleting a hidden user removes its archive too
	f.advance(1)
	f.setState(1, followgraph.StateDeleted)
	f.checkNoEdges(1, followgraph.StateDeleted)
	f.checkNoTraceOf(1, stateOthers)
	for _, st := range []followgraph.State{followgraph.StateActive, followgraph.StateDeactivated, followgraph.StateSuspended} {
		_, err := f.g.SetState(f.ctx, 1, st)
		checkCode(t, fmt.Sprintf("SetState(1, %s) of a deleted user", st), err, followgraph.ETargetInactive)
	}
	if a, err := f.g.SetState(f.ctx, 1, followgraph.StateDeleted); err != nil || a.State != followgraph.StateDeleted {
		t.Errorf("SetState(1, deleted) again = %+v, %v; want the same state, no error", a, err)
	}
	for _, op := range []struct {
		what string
		err  error
	}{
		{"Follow(2, 1)", second(f.g.Follow(f.ctx, 2, 1))},
		{"Block(2, 1)", second(f.g.Block(f.ctx, 2, 1))},
		{"Mute(2, 1)", second(f.g.Mute(f.ctx, 2, 1, 0))},
	} {
		checkCode(t, op.what+" of a deleted user", op.err, followgraph.ETargetInactive)
	}
	// Unfollowing what is gone changes nothing and is no error.
	if f.unfollow(3, 1) {
		t.Error("Unfollow(3, 1) of a deleted user's edge removed something")
	}
}

func (s suite) testStateWrites(t *testing.T) {
	f := s.stateFixture(t, Options{})
	f.follow(1, 2)
	f.follow(3, 1)
	f.advance(1)
	f.setState(1, followgraph.StateSuspended)
	for _, op := range []struct {
		what string
		err  error
	}{
		{"Follow(1, 4)", second(f.g.Follow(f.ctx, 1, 4))},
		{"Unfollow(1, 2)", second(f.g.Unfollow(f.ctx, 1, 2))},
		{"Block(1, 4)", second(f.g.Block(f.ctx, 1, 4))},
		{"Unblock(1, 4)", second(f.g.Unblock(f.ctx, 1, 4))},
		{"Mute(1, 4)", second(f.g.Mute(f.ctx, 1, 4, 0))},
		{"Unmute(1, 4)", second(f.g.Unmute(f.ctx, 1, 4))},
		{"Approve(1, 3)", second(f.g.Approve(f.ctx, 1, 3))},
		{"RemoveFollower(1, 3)", second(f.g.RemoveFollower(f.ctx, 1, 3))},
		{"SetPrivate(1, true)", second(f.g.SetPrivate(f.ctx, 1, true))},
	} {
		checkCode(t, op.what+" by a suspended user", op.err, followgraph.EUserInactive)
	}
	_, err := f.g.Follow(f.ctx, 4, 1)
	checkCode(t, "Follow(4, 1) of a suspended user", err, followgraph.ETargetInactive)
	f.setPrivate(5, true)
	f.advance(1)
	f.setState(5, followgraph.StateDeactivated)
	_, err = f.g.Follow(f.ctx, 4, 5)
	checkCode(t, "Follow(4, 5) of a deactivated private user (a request)", err, followgraph.ETargetInactive)
	if c := f.counts(4)[0]; c != (followgraph.Counts{ID: 4}) {
		t.Errorf("Counts(4) = %+v after refused writes", c)
	}
	// The validation of ids comes first.
	_, err = f.g.Follow(f.ctx, 1, 0)
	checkCode(t, "Follow(1, 0)", err, followgraph.EInvalidID)
}

func (s suite) testStateUnchanged(t *testing.T) {
	f := s.stateFixture(t, Options{})
	if a, err := f.g.State(f.ctx, 1); err != nil || a != (followgraph.AccountState{ID: 1}) {
		t.Errorf("State(1) of a user never set = %+v, %v; want active with no since", a, err)
	}
	if a, err := f.g.SetState(f.ctx, 1, followgraph.StateActive); err != nil || a != (followgraph.AccountState{ID: 1}) {
		t.Errorf("SetState(1, active) of a user never set = %+v, %v; want it unchanged", a, err)
	}
	f.advance(1)
	set := f.now()
	f.setState(1, followgraph.StateDeactivated)
	f.advance(1000)
	a := f.setState(1, followgraph.StateDeactivated)
	checkTime(t, "SetState(1, deactivated) again: Since", a.Since, set)
}

func (s suite) testStateInvalid(t *testing.T) {
	f := s.stateFixture(t, Options{})
	_, err := f.g.SetState(f.ctx, 0, followgraph.StateDeactivated)
	checkCode(t, "SetState(0, deactivated)", err, followgraph.EInvalidID)
	_, err = f.g.State(f.ctx, 0)
	checkCode(t, "State(0)", err, followgraph.EInvalidID)
	_, err = f.g.SetState(f.ctx, 1, 4)
	checkCode(t, "SetState(1, 4)", err, followgraph.EInvalidArgument)
	if a, _ := f.g.State(f.ctx, 1); a.State != followgraph.StateActive || !a.Since.IsZero() {
		t.Errorf("State(1) after an invalid SetState = %+v", a)
	}
}

// testStateWriteWhileHidden: an active user's writes on a hidden user's
// stored edges apply to them as stored, and what comes back is what remains.
func (s suite) testStateWriteWhileHidden(t *testing.T) {
	f := s.stateFixture(t, Options{})
	f.followAll(1, 2, 3)
	f.followedBy(1, 2, 4)
	f.advance(1)
	f.setState(1, followgraph.StateDeactivated)
	if !f.unfollow(2, 1) {
		t.Error("Unfollow(2, 1) of a hidden user's follow removed nothing")
	}
	if !f.removeFollower(3, 1) {
		t.Error("RemoveFollower(3, 1) of a hidden user's follow removed nothing")
	}
	f.block(4, 1) // allowed on a hidden user; it ends 4→1 as stored
	if bl := f.links(followgraph.ListBlocks, 4); len(bl) != 0 {
		t.Errorf("Links(blocks, 4) = %s: a hidden user is in no other user's lists", formatEntries(bl))
	}
	f.advance(1)
	f.setState(1, followgraph.StateActive)
	if got := entryIDs(f.following(1)); !slices.Equal(got, []followgraph.UserID{2}) {
		t.Errorf("Following(1) after active again = %v, want [2] (3 removed 1 as a follower)", got)
	}
	if got := entryIDs(f.followers(1)); len(got) != 0 {
		t.Errorf("Followers(1) after active again = %v, want none (2 unfollowed, 4 blocked)", got)
	}
	if r := f.relations(4, 1)[0]; !r.Blocking {
		t.Errorf("Relations(4, [1]) = %+v: 4's block of 1 while hidden is not there", r)
	}
	checkCounts(t, "Counts(1, 2, 3, 4)", f.counts(1, 2, 3, 4), []followgraph.Counts{
		{ID: 1, FollowingCount: 1}, {ID: 2, FollowerCount: 1}, {ID: 3}, {ID: 4}})
}

func (s suite) testStateHook(t *testing.T) {
	var mu sync.Mutex
	var events []followgraph.Event
	f := s.stateFixture(t, Options{Hook: func(_ context.Context, e followgraph.Event) error {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, e)
		return nil
	}})
	f.follow(1, 2)
	f.advance(1)
	f.setState(1, followgraph.StateSuspended)
	f.setState(1, followgraph.StateSuspended)
	mu.Lock()
	defer mu.Unlock()
	if len(events) != 2 {
		t.Fatalf("events = %s, want the follow and one state event", formatEvents(events))
	}
	e := events[1]
	if e.Op != followgraph.OpState || e.User != 1 || e.Target != 0 || e.State != followgraph.StateSuspended ||
		e.Time.UnixMilli() != f.now() || e.Validate() != nil {
		t.Errorf("the state event = %+v", e)
	}
}

func (s suite) testStateApply(t *testing.T) {
	f := s.stateFixture(t, Options{})
	if _, ok := f.g.(followgraph.Applier); !ok {
		t.Skip("engine does not implement followgraph.Applier")
	}
	v := followgraph.VersionAt(f.now())
	state := func(st followgraph.State, v followgraph.Version) followgraph.Event {
		return followgraph.NewStateEvent(1, st, v)
	}
	f.apply(followEvent(1, 2, v+1), followEvent(3, 1, v+2), state(followgraph.StateDeactivated, v+5), state(followgraph.StateActive, v+3))
	f.waitJob(1)
	if a, _ := f.g.State(f.ctx, 1); a.State != followgraph.StateDeactivated || !a.Since.Equal((v + 5).Time()) {
		t.Errorf("State(1) after Apply = %+v, want deactivated at the highest version", a)
	}
	f.checkNoEdges(1, followgraph.StateDeactivated)
	f.checkNoTraceOf(1, []followgraph.UserID{2, 3})
	f.apply(state(followgraph.StateActive, v+6))
	f.waitJob(1)
	checkCounts(t, "Counts(1, 2, 3) after Apply of active", f.counts(1, 2, 3), []followgraph.Counts{
		{ID: 1, FollowingCount: 1, FollowerCount: 1}, {ID: 2, FollowerCount: 1}, {ID: 3, FollowingCount: 1}})
}

// testStateFlipUnderFollows flips a user's state back and forth while
// others follow and unfollow it, then checks that the graph converged:
// every count equals its list, and every follow is on both sides.
func (s suite) testStateFlipUnderFollows(t *testing.T) {
	f := s.stateFixture(t, Options{})
	const users = 24
	for u := followgraph.UserID(2); u <= users; u++ {
		f.follow(u, 1)
		f.follow(1, u)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 7))
			for {
				select {
				case <-stop:
					return
				default:
				}
				u := followgraph.UserID(2 + r.IntN(users-1))
				var err error
				if r.IntN(2) == 0 {
					_, err = f.g.Follow(f.ctx, u, 1)
				} else {
					_, err = f.g.Unfollow(f.ctx, u, 1)
				}
				if c := followgraph.ErrorCode(err); err != nil && c != followgraph.ETargetInactive {
					t.Errorf("a write of %d on 1 while its state flips: %v", u, err)
					return
				}
			}
		}()
	}
	for i := range 40 {
		f.clock.Advance(time.Millisecond)
		st := followgraph.StateDeactivated
		if i%2 == 1 {
			st = followgraph.StateActive
		}
		if _, err := f.g.SetState(f.ctx, 1, st); err != nil {
			t.Fatalf("SetState(1, %s): %v", st, err)
		}
		time.Sleep(time.Duration(rand.IntN(300)) * time.Microsecond)
	}
	close(stop)
	wg.Wait()
	f.waitJob(1)
	ids := []followgraph.UserID{1}
	for u := followgraph.UserID(2); u <= users; u++ {
		ids = append(ids, u)
	}
	following, followers := map[followgraph.UserID][]followgraph.UserID{}, map[followgraph.UserID][]followgraph.UserID{}
	for _, c := range f.counts(ids...) {
		following[c.ID], followers[c.ID] = entryIDs(f.following(c.ID)), entryIDs(f.followers(c.ID))
		if int64(len(following[c.ID])) != c.FollowingCount || int64(len(followers[c.ID])) != c.FollowerCount {
			t.Errorf("Counts(%d) = %+v but it follows %v and is followed by %v", c.ID, c, following[c.ID], followers[c.ID])
		}
	}
	for u, fi := range followers {
		for _, x := range fi {
			if !slices.Contains(following[x], u) {
				t.Errorf("Followers(%d) has %d, but Following(%d) = %v", u, x, x, following[x])
			}
		}
	}
	for u, fo := range following {
		for _, x := range fo {
			if !slices.Contains(followers[x], u) {
				t.Errorf("Following(%d) has %d, but Followers(%d) = %v", u, x, x, followers[x])
			}
		}
	}
	if a, _ := f.g.State(f.ctx, 1); a.State != followgraph.StateActive {
		t.Errorf("State(1) = %+v, want active, the state last set", a)
	}
}

// entryIDs returns the ids of es, in order.
func entryIDs(es []followgraph.Entry) []followgraph.UserID {
	ids := make([]followgraph.UserID, len(es))
	for i, e := range es {
		ids[i] = e.ID
	}
	return ids
}
