package graphtest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/followgraph/followgraph"
)

func (s suite) testRandom(t *testing.T)             { s.runRandom(t, 1, 0, 3000) }
func (s suite) testRandomMaxFollowing(t *testing.T) { s.runRandom(t, 2, 8, 1500) }

// modelUsers are the users of the random tests: small ids and the largest.
func modelUsers() []followgraph.UserID {
	var users []followgraph.UserID
	for id := followgraph.UserID(1); id <= 22; id++ {
		users = append(users, id)
	}
	for i := range 8 {
		users = append(users, followgraph.MaxUserID-followgraph.UserID(i))
	}
	return users
}

// runRandom makes random follows, unfollows, blocks, mutes, requests,
// approvals, removals, settings and clock moves, compares the outcome of
// each with the model, and every 50 operations compares every answer of
// the engine with the model.
func (s suite) runRandom(t *testing.T, seed uint64, maxFollowing, ops int) {
	f := s.fixture(t, maxFollowing)
	m := newModel(maxFollowing)
	m.clock = f.now
	rng := rand.New(rand.NewPCG(seed, seed))
	users := modelUsers()
	for i := range ops {
		// Now and then a write of a user to itself.
		a, b := users[rng.IntN(len(users))], users[rng.IntN(len(users))]
		switch r := rng.IntN(100); {
		case r < 35:
			checkFollow(t, f.ctx, f.g, m, a, b, f.now())
		case r < 52:
			a, b := pickPair(rng, users)
			checkUnfollow(t, f.ctx, f.g, m, a, b)
		case r < 55:
			checkBlock(t, f.ctx, f.g, m, a, b, f.now())
		case r < 58:
			a, b := pickPair(rng, users)
			removed, err := f.g.Unblock(f.ctx, a, b)
			checkRemoved(t, fmt.Sprintf("Unblock(%d, %d)", a, b), removed, err, m.unblock(a, b))
		case r < 62:
			// Mutes of no expiry or of a few milliseconds, so that some expire.
			d := time.Duration(rng.IntN(3)*rng.IntN(6)) * time.Millisecond
			checkMute(t, f.ctx, f.g, m, a, b, d, f.now())
		case r < 64:
			a, b := pickPair(rng, users)
			removed, err := f.g.Unmute(f.ctx, a, b)
			checkRemoved(t, fmt.Sprintf("Unmute(%d, %d)", a, b), removed, err, m.unmute(a, b, f.now()))
		case r < 70:
			checkApprove(t, f.ctx, f.g, m, a, b, f.now())
		case r < 73:
			a, b := pickPair(rng, users)
			removed, err := f.g.RemoveFollower(f.ctx, a, b)
			checkRemoved(t, fmt.Sprintf("RemoveFollower(%d, %d)", a, b), removed, err, m.removeFollower(a, b))
		case r < 77:
			checkSetPrivate(t, f.ctx, f.g, m, a, rng.IntN(3) == 0, f.now())
		default:
			f.advance(rng.Int64N(4))
		}
		if i%50 == 49 || i == ops-1 {
			checkModel(t, f.ctx, f.g, m, users, rng)
		}
		if t.Failed() {
			t.Fatalf("seed %d: the engine and the model differ after operation %d", seed, i)
		}
	}
}

// testConcurrent has goroutines write and read at once. Each owns a
// disjoint set of users and makes them follow and unfollow each other
// only, so it knows exactly what the graph holds about them: it checks
// every outcome and every read about its own users against its own model,
// and reads about other users that it can only check for form. At the end
// the graph must equal all the models together, and agree with itself.
func (s suite) testConcurrent(t *testing.T) {
	const (
		workers   = 8
		usersEach = 8
		ops       = 1500 // of each worker
	)
	f := s.fixture(t, 0)
	var all []followgraph.UserID
	own := make([][]followgraph.UserID, workers)
	for w := range workers {
		for i := range usersEach {
			id := followgraph.UserID(1000*(w+1) + i)
			own[w] = append(own[w], id)
			all = append(all, id)
		}
	}
	models := make([]*model, workers)
	var wg sync.WaitGroup
	for w := range workers {
		models[w] = newModel(0)
		wg.Go(func() {
			wk := worker{
				tb: t, ctx: f.ctx, g: f.g, clock: f.clock, m: models[w],
				own: own[w], all: all, rng: rand.New(rand.NewPCG(uint64(w), 31)),
			}
			wk.run(ops)
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	merged := newModel(0)
	for _, m := range models {
		merged.merge(m)
	}
	checkModel(t, f.ctx, f.g, merged, all, rand.New(rand.NewPCG(32, 32)))
	checkConsistent(t, f, all)
}

// worker is one goroutine of testConcurrent.
type worker struct {
	tb    testing.TB
	ctx   context.Context
	g     followgraph.Graph
	clock *fakeClock
	m     *model // the edges among own
	own   []followgraph.UserID
	all   []followgraph.UserID
	rng   *rand.Rand
}

func (w *worker) pick(users []followgraph.UserID) followgraph.UserID {
	return users[w.rng.IntN(len(users))]
}

func (w *worker) owns(id followgraph.UserID) bool {
	for _, o := range w.own {
		if o == id {
			return true
		}
	}
	return false
}

func (w *worker) run(ops int) {
	for range ops {
		switch r := w.rng.IntN(40); {
		case r < 10:
			w.follow(w.pick(w.own), w.pick(w.own))
		case r < 16:
			a, b := pickPair(w.rng, w.own)
			checkUnfollow(w.tb, w.ctx, w.g, w.m, a, b)
		case r < 17:
			w.link(w.pick(w.own), w.pick(w.own), true)
		case r < 18:
			a, b := pickPair(w.rng, w.own)
			removed, err := w.g.Unblock(w.ctx, a, b)
			checkRemoved(w.tb, fmt.Sprintf("Unblock(%d, %d)", a, b), removed, err, w.m.unblock(a, b))
		case r < 19:
			w.link(w.pick(w.own), w.pick(w.own), false)
		case r < 20:
			a, b := pickPair(w.rng, w.own)
			removed, err := w.g.Unmute(w.ctx, a, b)
			checkRemoved(w.tb, fmt.Sprintf("Unmute(%d, %d)", a, b), removed, err, w.m.unmute(a, b, 0))
		case r < 21:
			w.approve(w.pick(w.own), w.pick(w.own))
		case r < 22:
			a, b := pickPair(w.rng, w.own)
			removed, err := w.g.RemoveFollower(w.ctx, a, b)
			checkRemoved(w.tb, fmt.Sprintf("RemoveFollower(%d, %d)", a, b), removed, err, w.m.removeFollower(a, b))
		case r < 23:
			w.setPrivate(w.pick(w.own), w.rng.IntN(2) == 0)
		case r < 24:
			w.clock.Advance(time.Duration(w.rng.IntN(3)) * time.Millisecond)
		default:
			x, y := w.pick(w.all), w.pick(w.all)
			if w.owns(x) {
				w.readOwn(x, y)
			} else {
				w.readOther(x, y)
			}
		}
		if w.tb.Failed() {
			return
		}
	}
}

// follow makes user follow target, and checks the outcome with the model.
// The clock moves meanwhile, so a new edge's time is only known to lie
// between the clock's times before and after the call.
func (w *worker) follow(user, target followgraph.UserID) {
	before := w.clock.Now()
	got, err := w.g.Follow(w.ctx, user, target)
	after := w.clock.Now()
	want, code := w.m.follow(user, target, got.Since.UnixMilli())
	if !compareFollow(w.tb, user, target, got, err, want, code) || !got.Created {
		return
	}
	if low := followgraph.Millis(before.UnixMilli()); got.Since.Before(low) || got.Since.After(after) {
		w.tb.Errorf("Follow(%d, %d).Since = %s, want the clock's time during the call, from %s to %s",
			user, target, formatTime(got.Since), formatTime(low), formatTime(after))
	}
}

// checkDuring reports unless since, the time of a change just made,
// lies between the clock's times before and after the call.
func (w *worker) checkDuring(what string, since, before, after time.Time) {
	if low := followgraph.Millis(before.UnixMilli()); since.Before(low) || since.After(after) {
		w.tb.Errorf("%s: since %s, want the clock's time during the call, from %s to %s",
			what, formatTime(since), formatTime(low), formatTime(after))
	}
}

// link makes user block (or mute, with no expiry) target, and checks the
// outcome with the model, as follow does.
func (w *worker) link(user, target followgraph.UserID, block bool) {
	before := w.clock.Now()
	var got followgraph.LinkResult
	var err error
	var what string
	if block {
		what = fmt.Sprintf("Block(%d, %d)", user, target)
		got, err = w.g.Block(w.ctx, user, target)
	} else {
		what = fmt.Sprintf("Mute(%d, %d, 0)", user, target)
		got, err = w.g.Mute(w.ctx, user, target, 0)
	}
	after := w.clock.Now()
	var want followgraph.LinkResult
	var code string
	if block {
		want, code = w.m.block(user, target, got.Since.UnixMilli())
	} else {
		want, code = w.m.mute(user, target, 0, got.Since.UnixMilli())
	}
	if compareLinkResult(w.tb, what, got, err, want, code) && got.Created {
		w.checkDuring(what, got.Since, before, after)
	}
}

// approve makes user approve requester, and checks the outcome.
func (w *worker) approve(user, requester followgraph.UserID) {
	before := w.clock.Now()
	got, err := w.g.Approve(w.ctx, user, requester)
	after := w.clock.Now()
	want, code := w.m.approve(user, requester, got.Since.UnixMilli())
	what := fmt.Sprintf("Approve(%d, %d)", user, requester)
	if compareFollow(w.tb, requester, user, got, err, want, code) && got.Created {
		w.checkDuring(what, got.Since, before, after)
	}
}

// setPrivate sets user's setting; turning it off approves the pending
// requests, whose follows are then read for their times.
func (w *worker) setPrivate(user followgraph.UserID, private bool) {
	before := w.clock.Now()
	got, err := w.g.SetPrivate(w.ctx, user, private)
	after := w.clock.Now()
	what := fmt.Sprintf("SetPrivate(%d, %v)", user, private)
	if want := (followgraph.Settings{ID: user, Private: private}); err != nil || got != want {
		w.tb.Errorf("%s = %+v, %v; want %+v, nil", what, got, err, want)
		return
	}
	if !private {
		for k := range w.m.requests {
			if k.target != user {
				continue
			}
			e, err := w.g.IsFollowing(w.ctx, k.user, user)
			if err != nil || !e.Following {
				w.tb.Errorf("%s: the request of %d was pending, but IsFollowing(%d, %d) = %+v, %v; want an approved follow",
					what, k.user, k.user, user, e, err)
				return
			}
			w.checkDuring(fmt.Sprintf("%s: the follow %d→%d", what, k.user, user), e.Since, before, after)
			w.m.approve(user, k.user, e.Since.UnixMilli())
		}
	}
	w.m.private[user] = private
}

// readOwn reads about own user x (and y, anyone) and checks the answer
// exactly: no one else makes or removes edges of x.
func (w *worker) readOwn(x, y followgraph.UserID) {
	limit := randomLimit(w.rng)
	switch w.rng.IntN(8) {
	case 0:
		checkModelEdge(w.tb, w.ctx, w.g, w.m, x, y)
		checkModelEdge(w.tb, w.ctx, w.g, w.m, y, x)
	case 7:
		checkModelLinks(w.tb, w.ctx, w.g, w.m, x, limit)
		checkModelLink(w.tb, w.ctx, w.g, w.m, x, y)
	case 1:
		checkModelCounts(w.tb, w.ctx, w.g, w.m, []followgraph.UserID{x, w.pick(w.own), x})
	case 2:
		checkList(w.tb, w.ctx, followingList(w.g, x), limit, w.m.following(x))
	case 3:
		checkList(w.tb, w.ctx, followersList(w.g, x), limit, w.m.followers(x))
	case 4:
		checkModelRelations(w.tb, w.ctx, w.g, w.m, x, append([]followgraph.UserID{y, x}, w.own...))
	case 5:
		l := setLists(w.g, x, y)[w.rng.IntN(4)]
		checkList(w.tb, w.ctx, l, limit, l.want(w.m))
	case 6:
		checkModelSuggestions(w.tb, w.ctx, w.g, w.m, x, 1+w.rng.IntN(10))
	}
}

// readOther reads about another worker's user x, which changes meanwhile,
// and checks only what no change can excuse.
func (w *worker) readOther(x, y followgraph.UserID) {
	var err error
	switch w.rng.IntN(5) {
	case 0:
		_, err = w.g.IsFollowing(w.ctx, x, y)
	case 1:
		var c []followgraph.Counts
		c, err = w.g.Counts(w.ctx, []followgraph.UserID{x, y})
		if err == nil && (len(c) != 2 || c[0].ID != x || c[1].ID != y) {
			err = fmt.Errorf("Counts([%d %d]) = %+v, want the counts of %d and %d", x, y, c, x, y)
		}
	case 2:
		l := lists(w.g, x, y)[w.rng.IntN(6)]
		_, err = readAll(w.ctx, l, randomLimit(w.rng))
	case 3:
		var r []followgraph.RelationInfo
		r, err = w.g.Relations(w.ctx, x, []followgraph.UserID{y, x})
		if err == nil && (len(r) != 2 || r[0].ID != y || r[1].ID != x || r[1].Relation != followgraph.RelationSelf) {
			err = fmt.Errorf("Relations(%d, [%d %d]) = %+v, want %d's relation then self", x, y, x, r, y)
		}
	case 4:
		var s []followgraph.Suggestion
		s, err = w.g.Suggestions(w.ctx, x, 5)
		if err == nil && len(s) > 5 {
			err = fmt.Errorf("Suggestions(%d, 5) = %s, more than 5", x, formatSuggestions(s))
		}
	}
	if err != nil {
		w.tb.Errorf("reading about %d while it changes: %v", x, err)
	}
}

// checkConsistent checks that the graph agrees with itself about users,
// which have no edges with anyone else: the counts are the lengths of the
// lists, and u is in the following of v, since some time, exactly when v
// is in the followers of u, since the same time.
func checkConsistent(tb testing.TB, f *fixture, users []followgraph.UserID) {
	tb.Helper()
	counts := f.counts(users...)
	byFollowing := make(map[edge]int64)
	byFollowers := make(map[edge]int64)
	for i, u := range users {
		following, followers := f.following(u), f.followers(u)
		if counts[i].FollowingCount != int64(len(following)) || counts[i].FollowerCount != int64(len(followers)) {
			tb.Errorf("Counts(%d) = %+v, but Following(%d) has %d entries and Followers(%d) %d",
				u, counts[i], u, len(following), u, len(followers))
		}
		for _, e := range following {
			byFollowing[edge{u, e.ID}] = e.Since.UnixMilli()
		}
		for _, e := range followers {
			byFollowers[edge{e.ID, u}] = e.Since.UnixMilli()
		}
	}
	for e, ms := range byFollowing {
		other, ok := byFollowers[e]
		switch {
		case !ok:
			tb.Errorf("%d is in Following(%d), but %d is not in Followers(%d)", e.target, e.user, e.user, e.target)
		case other != ms:
			tb.Errorf("%d is in Following(%d) since %s, but %d in Followers(%d) since %s",
				e.target, e.user, formatTime(followgraph.Millis(ms)), e.user, e.target, formatTime(followgraph.Millis(other)))
		}
	}
	for e := range byFollowers {
		if _, ok := byFollowing[e]; !ok {
			tb.Errorf("%d is in Followers(%d), but %d is not in Following(%d)", e.user, e.target, e.target, e.user)
		}
	}
}
