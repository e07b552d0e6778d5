package graphtest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/followgraph/followgraph"
)

// applierFixture builds a fresh engine like fixture, and skips the test
// unless the engine implements followgraph.Applier.
func (s suite) applierFixture(tb testing.TB) *fixture {
	tb.Helper()
	f := s.fixture(tb, 0)
	if _, ok := f.g.(followgraph.Applier); !ok {
		tb.Skip("engine does not implement followgraph.Applier")
	}
	return f
}

// apply applies events as one batch, and fails the test on an error.
func (f *fixture) apply(events ...followgraph.Event) {
	f.tb.Helper()
	if err := f.g.(followgraph.Applier).Apply(f.ctx, events); err != nil {
		f.tb.Fatalf("Apply(%s): %v", formatEvents(events), err)
	}
}

func followEvent(user, target followgraph.UserID, v followgraph.Version) followgraph.Event {
	return followgraph.NewEvent(user, target, followgraph.OpFollow, v)
}

func unfollowEvent(user, target followgraph.UserID, v followgraph.Version) followgraph.Event {
	return followgraph.NewEvent(user, target, followgraph.OpUnfollow, v)
}

// formatEvents writes each event as "follow 1→2 @ms+counter".
func formatEvents(events []followgraph.Event) string {
	s := make([]string, len(events))
	for i, e := range events {
		ms := e.Version.Millis()
		s[i] = fmt.Sprintf("%s %d→%d @%d+%d", e.Op, e.User, e.Target, ms, e.Version-followgraph.VersionAt(ms))
	}
	return "[" + strings.Join(s, ", ") + "]"
}

// orderings returns every distinct order of events, where equal events
// are interchangeable.
func orderings(events []followgraph.Event) [][]followgraph.Event {
	if len(events) <= 1 {
		return [][]followgraph.Event{slices.Clone(events)}
	}
	var out [][]followgraph.Event
	first := make(map[followgraph.Event]bool)
	for i, e := range events {
		if first[e] {
			continue
		}
		first[e] = true
		rest := slices.Delete(slices.Clone(events), i, i+1)
		for _, o := range orderings(rest) {
			out = append(out, append([]followgraph.Event{e}, o...))
		}
	}
	return out
}

// applyInEveryOrder applies events in every order, each order to a fresh
// engine, once as one batch and once an event a call, and calls check
// after each.
func (s suite) applyInEveryOrder(tb testing.TB, events []followgraph.Event, check func(f *fixture, what string)) {
	tb.Helper()
	for _, order := range orderings(events) {
		for _, oneByOne := range []bool{false, true} {
			f := s.applierFixture(tb)
			what := "after Apply(" + formatEvents(order) + ")"
			if oneByOne {
				for _, e := range order {
					f.apply(e)
				}
				what = "after Apply of " + formatEvents(order) + " one by one"
			} else {
				f.apply(order...)
			}
			check(f, what)
			if tb.Failed() {
				tb.FailNow()
			}
		}
	}
}

func (s suite) testApplyConverges(t *testing.T) {
	base := start.UnixMilli() - 10_000
	f1 := followEvent(1, 2, followgraph.VersionAt(base+1))
	u2 := unfollowEvent(1, 2, followgraph.VersionAt(base+2)+5)
	f3 := followEvent(1, 2, followgraph.VersionAt(base+3)+1)
	s.applyInEveryOrder(t, []followgraph.Event{f1, u2, f3, f3, f1}, func(f *fixture, what string) {
		checkEdge(t, "IsFollowing(1, 2) "+what, f.edge(1, 2), followgraph.Edge{Following: true, Since: f3.Time})
		checkCounts(t, "Counts(1, 2) "+what, f.counts(1, 2), []followgraph.Counts{
			{ID: 1, FollowingCount: 1, FollowerCount: 0},
			{ID: 2, FollowingCount: 0, FollowerCount: 1},
		})
		checkEntries(t, "Following(1) "+what, f.following(1), []followgraph.Entry{entry(2, base+3)})
		checkEntries(t, "Followers(2) "+what, f.followers(2), []followgraph.Entry{entry(1, base+3)})
	})
}

func (s suite) testApplyFollowThenUnfollow(t *testing.T) {
	base := start.UnixMilli() - 10_000
	f1 := followEvent(1, 2, followgraph.VersionAt(base))
	u2 := unfollowEvent(1, 2, followgraph.VersionAt(base)+1) // in the same millisecond
	s.applyInEveryOrder(t, []followgraph.Event{f1, u2, u2, f1}, func(f *fixture, what string) {
		checkEdge(t, "IsFollowing(1, 2) "+what, f.edge(1, 2), followgraph.Edge{})
		checkCounts(t, "Counts(1, 2) "+what, f.counts(1, 2), []followgraph.Counts{{ID: 1}, {ID: 2}})
		checkEntries(t, "Following(1) "+what, f.following(1), nil)
		checkEntries(t, "Followers(2) "+what, f.followers(2), nil)
	})
}

func (s suite) testApplyOlderIgnored(t *testing.T) {
	f := s.applierFixture(t)
	base := f.now() - 10_000
	v1, v2, v3 := followgraph.VersionAt(base+1), followgraph.VersionAt(base+2), followgraph.VersionAt(base+3)
	following := func(ms int64) followgraph.Edge {
		return followgraph.Edge{Following: true, Since: followgraph.Millis(ms)}
	}

	f.apply(followEvent(1, 2, v2))
	f.apply(unfollowEvent(1, 2, v1))
	checkEdge(t, "IsFollowing(1, 2) after a follow, then an older unfollow", f.edge(1, 2), following(base+2))

	f.apply(unfollowEvent(3, 4, v3))
	f.apply(followEvent(3, 4, v2))
	checkEdge(t, "IsFollowing(3, 4) after an unfollow, then an older follow", f.edge(3, 4), followgraph.Edge{})

	f.apply(followEvent(5, 6, v2))
	f.apply(unfollowEvent(5, 6, v2))
	checkEdge(t, "IsFollowing(5, 6) after a follow, then an unfollow of the same version", f.edge(5, 6), following(base+2))

	f.apply(unfollowEvent(7, 8, v2))
	f.apply(followEvent(7, 8, v2))
	checkEdge(t, "IsFollowing(7, 8) after an unfollow, then a follow of the same version", f.edge(7, 8), followgraph.Edge{})

	f.apply(followEvent(1, 2, v3))
	checkEdge(t, "IsFollowing(1, 2) after a newer follow of a followed edge", f.edge(1, 2), following(base+3))

	checkCounts(t, "Counts(1, …, 8)", f.counts(1, 2, 3, 4, 5, 6, 7, 8), []followgraph.Counts{
		{ID: 1, FollowingCount: 1}, {ID: 2, FollowerCount: 1},
		{ID: 3}, {ID: 4},
		{ID: 5, FollowingCount: 1}, {ID: 6, FollowerCount: 1},
		{ID: 7}, {ID: 8},
	})
	checkEntries(t, "Following(1)", f.following(1), []followgraph.Entry{entry(2, base+3)})
	checkEntries(t, "Followers(2)", f.followers(2), []followgraph.Entry{entry(1, base+3)})
}

func (s suite) testApplyInvalidBatch(t *testing.T) {
	v := followgraph.VersionAt(start.UnixMilli() - 1000)
	late := followgraph.VersionAt(start.UnixMilli() + 1000)
	valid := []followgraph.Event{
		followEvent(1, 2, v),
		followEvent(3, 4, v+1),
		unfollowEvent(5, 6, late), // 5 follows 6 before the batch
	}
	timeOff := followEvent(7, 8, v)
	timeOff.Time = timeOff.Time.Add(time.Millisecond)
	timeOffMicro := followEvent(7, 8, v)
	timeOffMicro.Time = timeOffMicro.Time.Add(time.Microsecond)
	unknownOp := followEvent(7, 8, v)
	unknownOp.Op = followgraph.OpPublic + 1

	for _, tt := range []struct {
		name  string
		event followgraph.Event
	}{
		{"SelfEdge", followEvent(7, 7, v)},
		{"ZeroVersion", followgraph.NewEvent(7, 8, followgraph.OpFollow, 0)},
		{"TimeNotOfVersion", timeOff},
		{"TimeOffByMicrosecond", timeOffMicro},
		{"ZeroID", followEvent(0, 8, v)},
		{"NegativeID", followEvent(7, -8, v)},
		{"UnknownOp", unknownOp},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for pos := range len(valid) + 1 {
				f := s.applierFixture(t)
				f.follow(5, 6)
				before := f.describe(1, 2, 3, 4, 5, 6, 7, 8)
				batch := slices.Insert(slices.Clone(valid), pos, tt.event)
				if err := f.g.(followgraph.Applier).Apply(f.ctx, batch); err == nil {
					t.Errorf("Apply(%s) = nil, want an error for the invalid event", formatEvents(batch))
				}
				if after := f.describe(1, 2, 3, 4, 5, 6, 7, 8); after != before {
					t.Errorf("Apply(%s) failed but changed the graph:\nbefore:%s\nafter:%s", formatEvents(batch), before, after)
				}
			}
		})
	}
}

func (s suite) testApplyThenLiveFollow(t *testing.T) {
	f := s.applierFixture(t)
	past := f.now() - 60_000
	f.apply(followEvent(1, 2, followgraph.VersionAt(past)+3))

	res := f.follow(1, 2)
	if res.Created {
		t.Error("Follow(1, 2) of an applied edge: Created = true, want false")
	}
	checkTime(t, "Follow(1, 2).Since of an applied edge", res.Since, past)
	checkEdge(t, "IsFollowing(1, 2)", f.edge(1, 2), followgraph.Edge{Following: true, Since: followgraph.Millis(past)})
	checkEntries(t, "Following(1)", f.following(1), []followgraph.Entry{entry(2, past)})

	if !f.unfollow(1, 2) {
		t.Error("Unfollow(1, 2) of an applied edge = false, want true")
	}
	checkEdge(t, "IsFollowing(1, 2) after the unfollow", f.edge(1, 2), followgraph.Edge{})
	checkCounts(t, "Counts(1, 2) after the unfollow", f.counts(1, 2), []followgraph.Counts{{ID: 1}, {ID: 2}})
}

// testApplyLiveVersionsGrow checks that live changes in one millisecond
// get growing versions, and that live changes get versions above every
// version applied.
func (s suite) testApplyLiveVersionsGrow(t *testing.T) {
	f := s.applierFixture(t)
	now := f.now()
	f.follow(1, 2)
	f.unfollow(1, 2)
	f.follow(1, 2) // three changes while the clock stands still

	// The last live change has a version of at least VersionAt(now)+2.
	f.apply(unfollowEvent(1, 2, followgraph.VersionAt(now)+1))
	checkEdge(t, "IsFollowing(1, 2) after Apply of an unfollow older than the live refollow", f.edge(1, 2),
		followgraph.Edge{Following: true, Since: followgraph.Millis(now)})

	f.apply(unfollowEvent(1, 2, followgraph.VersionAt(now+1)))
	checkEdge(t, "IsFollowing(1, 2) after Apply of an unfollow of the next millisecond", f.edge(1, 2), followgraph.Edge{})

	res := f.follow(1, 2) // the clock still stands at now
	if !res.Created {
		t.Error("Follow(1, 2) after an applied unfollow: Created = false, want true")
	}
	if res.Since.Before(followgraph.Millis(now + 1)) {
		t.Errorf("Follow(1, 2).Since = %s after Apply of a version at %s: a live change must get a version above every version applied",
			formatTime(res.Since), formatTime(followgraph.Millis(now+1)))
	}
	checkEdge(t, "IsFollowing(1, 2) after the refollow", f.edge(1, 2), followgraph.Edge{Following: true, Since: res.Since})
}

// testApplyFutureVersion applies versions far ahead of the engine's clock;
// live changes must still take effect.
func (s suite) testApplyFutureVersion(t *testing.T) {
	f := s.applierFixture(t)
	future := f.now() + time.Hour.Milliseconds()
	f.apply(followEvent(1, 2, followgraph.VersionAt(future)))
	checkEdge(t, "IsFollowing(1, 2) after Apply of a follow an hour ahead", f.edge(1, 2),
		followgraph.Edge{Following: true, Since: followgraph.Millis(future)})

	if !f.unfollow(1, 2) {
		t.Error("Unfollow(1, 2) of an edge followed an hour ahead = false, want true")
	}
	checkEdge(t, "IsFollowing(1, 2) after the live unfollow", f.edge(1, 2), followgraph.Edge{})
	res := f.follow(1, 2)
	if !res.Created || res.Since.Before(followgraph.Millis(future)) {
		t.Errorf("Follow(1, 2) after the live unfollow = {Created: %v, Since: %s}, want Created, and Since not before %s",
			res.Created, formatTime(res.Since), formatTime(followgraph.Millis(future)))
	}
	checkEdge(t, "IsFollowing(1, 2) after the live refollow", f.edge(1, 2), followgraph.Edge{Following: true, Since: res.Since})

	// An unfollow from ahead does not block a live follow.
	f.apply(unfollowEvent(3, 4, followgraph.VersionAt(future)+10))
	res = f.follow(3, 4)
	if !res.Created || res.Since.Before(followgraph.Millis(future)) {
		t.Errorf("Follow(3, 4) after Apply of an unfollow an hour ahead = {Created: %v, Since: %s}, want Created, and Since not before %s",
			res.Created, formatTime(res.Since), formatTime(followgraph.Millis(future)))
	}
	checkEdge(t, "IsFollowing(3, 4)", f.edge(3, 4), followgraph.Edge{Following: true, Since: res.Since})

	// Once the clock has passed them, follows take the clock's time again.
	later := start.Add(2 * time.Hour)
	f.clock.Set(later)
	res = f.follow(5, 6)
	checkTime(t, "Follow(5, 6).Since once the clock passed the applied versions", res.Since, later.UnixMilli())
}

// testApplyShuffledBatch applies many events of many edges, with
// duplicates, shuffled and cut into batches, and compares the graph with
// the state they converge to. Then live changes go on from there.
func (s suite) testApplyShuffledBatch(t *testing.T) {
	const (
		users      = 40
		edges      = 300
		events     = 2000
		duplicates = 500
	)
	f := s.applierFixture(t)
	rng := rand.New(rand.NewPCG(5, 6))
	var ids []followgraph.UserID
	for id := followgraph.UserID(1); id <= users; id++ {
		ids = append(ids, id)
	}
	var pool []edge
	chosen := make(map[edge]bool)
	for len(pool) < edges {
		a, b := pickPair(rng, ids)
		if e := (edge{a, b}); !chosen[e] {
			chosen[e] = true
			pool = append(pool, e)
		}
	}

	base := f.now() - 100_000
	var all []followgraph.Event
	seen := make(map[string]bool) // one event per edge and version
	for len(all) < events {
		e := pool[rng.IntN(len(pool))]
		v := followgraph.VersionAt(base+rng.Int64N(1000)) + followgraph.Version(rng.IntN(3))
		op := followgraph.OpFollow
		if rng.IntN(5) < 2 {
			op = followgraph.OpUnfollow
		}
		ev := followgraph.NewEvent(e.user, e.target, op, v)
		if seen[ev.ID()] {
			continue
		}
		seen[ev.ID()] = true
		all = append(all, ev)
	}
	want := modelOfEvents(all)

	batch := slices.Clone(all)
	for range duplicates {
		batch = append(batch, all[rng.IntN(len(all))])
	}
	rng.Shuffle(len(batch), func(i, j int) { batch[i], batch[j] = batch[j], batch[i] })
	for len(batch) > 0 {
		n := min(1+rng.IntN(400), len(batch))
		f.apply(batch[:n]...)
		batch = batch[n:]
	}
	checkModel(t, f.ctx, f.g, want, ids, rng)
	if t.Failed() {
		t.FailNow()
	}

	// Applying them all again, in another order, changes nothing.
	again := slices.Clone(all)
	rng.Shuffle(len(again), func(i, j int) { again[i], again[j] = again[j], again[i] })
	f.apply(again...)
	checkModel(t, f.ctx, f.g, want, ids, rng)
	if t.Failed() {
		t.FailNow()
	}

	// Live changes go on from the applied state.
	for range 300 {
		a, b := pickPair(rng, ids)
		if rng.IntN(2) == 0 {
			checkFollow(t, f.ctx, f.g, want, a, b, f.now())
		} else {
			checkUnfollow(t, f.ctx, f.g, want, a, b)
		}
		f.advance(rng.Int64N(2))
	}
	checkModel(t, f.ctx, f.g, want, ids, rng)
}
