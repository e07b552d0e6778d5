package storetest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	fg "github.com/followgraph/followgraph"
)

// Purge calls PurgeTombstones with below and limit until it reports no
// more, failing tb on an error or a step that removes more than limit,
// and returns the tombstones each step removed.
func Purge(tb testing.TB, s fg.TombstonePurger, below fg.Version, limit int) []int {
	tb.Helper()
	var steps []int
	for {
		n, more, err := s.PurgeTombstones(context.Background(), below, limit)
		if err != nil {
			tb.Fatal(err)
		}
		if n > limit {
			tb.Fatalf("PurgeTombstones(%d) removed %d", limit, n)
		}
		steps = append(steps, n)
		if !more {
			return steps
		}
		if len(steps) > 1000 {
			tb.Fatal("PurgeTombstones reports more after 1000 steps")
		}
	}
}

// Horizon returns s's tombstone horizon, and fails tb on an error.
func Horizon(tb testing.TB, s fg.TombstonePurger) fg.Version {
	tb.Helper()
	h, err := s.TombstoneHorizon(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	return h
}

// withoutTombstones returns events without the off ones of edges
// between two users older than horizon: what a store yields once its
// tombstones below horizon are gone.
func withoutTombstones(events []fg.Event, horizon fg.Version) []fg.Event {
	return slices.DeleteFunc(slices.Clone(events), func(e fg.Event) bool {
		for x := range e.Effects {
			return !x.On && x.Kind.Info().Edge && e.Version < horizon
		}
		return false
	})
}

// reopened closes st and opens its database again, recording what its
// Apply refuses into refused.
func (s suite) reopened(t *testing.T, st Store, refused *[]fg.Refusal) Store {
	t.Helper()
	if s.reopen == nil {
		t.Fatal("storetest.Run was given no Reopen: the horizon tests need one")
	}
	return s.reopen(t, st, func(r fg.Refusal) { *refused = append(*refused, r) })
}

// testHorizonPurge: PurgeTombstones removes the tombstones older than its
// bound, oldest first, at most limit a step, and nothing else, and raises
// the horizon to just above the newest it removed; the horizon only
// grows, and a store opened again has it.
func (s suite) testHorizonPurge(t *testing.T) {
	st := s.newStore(t)
	if h := Horizon(t, st); h != 0 {
		t.Fatalf("a new store's tombstone horizon is %d, want 0", h)
	}
	Apply(t, st, 1,
		Follow(1, 2, V(1)), // live and old: stays
		Follow(1, 3, V(2)), Unfollow(1, 3, V(3)),
		Unfollow(2, 3, V(4)), Unfollow(2, 4, V(5)),
		Unfollow(3, 4, V(100)), Follow(3, 5, V(101)), // newer than the bound
	)
	before := StoredEvents(t, st)
	ctx := context.Background()
	if _, _, err := st.PurgeTombstones(ctx, V(50), 0); fg.ErrorCode(err) != fg.EInvalidArgument {
		t.Errorf("PurgeTombstones with limit 0: %v, want %s", err, fg.EInvalidArgument)
	}
	if h := Horizon(t, st); h != 0 {
		t.Fatalf("the tombstone horizon is %d before anything was removed, want 0", h)
	}
	n, more, err := st.PurgeTombstones(ctx, V(50), 2)
	if err != nil || n != 2 || !more {
		t.Fatalf("PurgeTombstones(V(50), 2) = %d, %t, %v; want 2, true", n, more, err)
	}
	// The two oldest went first, and the horizon is just above them.
	CheckEvents(t, st, slices.DeleteFunc(slices.Clone(before), func(e fg.Event) bool { return e.Version < V(5) && e.Op == fg.OpUnfollow }))
	if h := Horizon(t, st); h != V(4)+1 {
		t.Errorf("tombstone horizon %d, want %d", h, V(4)+1)
	}
	if steps := Purge(t, st, V(50), 2); !slices.Equal(steps, []int{1}) {
		t.Errorf("the rest went in steps %v, want [1]", steps)
	}
	want := withoutTombstones(before, V(50))
	if len(want) != 3 {
		t.Fatalf("the test's own expectation: %v", want)
	}
	CheckEvents(t, st, want)
	if h := Horizon(t, st); h != V(5)+1 {
		t.Errorf("tombstone horizon %d, want %d", h, V(5)+1)
	}
	// A lower bound removes nothing; a raise moves the horizon only up.
	if n, more, err := st.PurgeTombstones(ctx, V(4), 10); err != nil || n != 0 || more {
		t.Errorf("PurgeTombstones(V(4)) = %d, %t, %v", n, more, err)
	}
	for _, h := range []fg.Version{V(200), V(150)} {
		if err := st.RaiseTombstoneHorizon(ctx, h); err != nil {
			t.Fatal(err)
		}
	}
	if h := Horizon(t, st); h != V(200) {
		t.Errorf("tombstone horizon %d after raises to V(200) then V(150), want %d", h, V(200))
	}
	CheckEvents(t, st, want)
	var refused []fg.Refusal
	st = s.reopened(t, st, &refused)
	if h := Horizon(t, st); h != V(200) {
		t.Errorf("tombstone horizon %d after a reopen, want %d", h, V(200))
	}
	CheckEvents(t, st, want)
	// The rest is removed, but never a live edge.
	Purge(t, st, V(200), 100)
	CheckEvents(t, st, []fg.Event{Follow(1, 2, V(1)), Follow(3, 5, V(101))})
	if h := Horizon(t, st); h != V(200) {
		t.Errorf("tombstone horizon %d, want it to stay %d", h, V(200))
	}
}

// testHorizonRefused: a change older than the horizon to an edge with no
// row is refused (reported, not written) and the edge stays off; one to an
// edge with a row is applied as always; a newer one applies.
func (s suite) testHorizonRefused(t *testing.T) {
	st := s.newStore(t)
	Apply(t, st, 1, Follow(1, 2, V(1)), Unfollow(1, 2, V(2)), Follow(1, 3, V(3)), Unfollow(1, 4, V(60)),
		Follow(9, 10, V(39)), Unfollow(9, 10, V(40)))
	Purge(t, st, V(50), 10)
	h := V(40) + 1 // just above the newest tombstone removed
	var refused []fg.Refusal
	st = s.reopened(t, st, &refused)
	n := Apply(t, st, 2,
		Follow(1, 2, V(1)),  // its tombstone is gone: refused
		Follow(1, 3, V(4)),  // below the horizon, with a row: applied
		Follow(1, 4, V(59)), // older than its tombstone: nothing
		Follow(1, 5, V(70)), // new
		Block(6, 7, V(10)),  // below the horizon, no row of any of its five edges
		Private(8, V(20)),   // a setting is never removed, so never refused
	)
	if n != 3 {
		t.Errorf("the batch changed %d rows, want 3", n)
	}
	CheckEvents(t, st, []fg.Event{Follow(1, 3, V(4)), Unfollow(1, 4, V(60)), Follow(1, 5, V(70)), Private(8, V(20))})
	want := []fg.Refusal{
		{Effect: fg.Effect{Kind: fg.KindFollow, User: 1, Target: 2, On: true}, Version: V(1), Horizon: h},
		{Effect: fg.Effect{Kind: fg.KindFollow, User: 6, Target: 7}, Version: V(10), Horizon: h},
		{Effect: fg.Effect{Kind: fg.KindFollow, User: 7, Target: 6}, Version: V(10), Horizon: h},
		{Effect: fg.Effect{Kind: fg.KindBlock, User: 6, Target: 7, On: true}, Version: V(10), Horizon: h},
		{Effect: fg.Effect{Kind: fg.KindRequest, User: 6, Target: 7}, Version: V(10), Horizon: h},
		{Effect: fg.Effect{Kind: fg.KindRequest, User: 7, Target: 6}, Version: V(10), Horizon: h},
	}
	if !slices.Equal(refused, want) {
		t.Errorf("refused\n %v\nwant\n %v", refused, want)
	}
	for _, r := range refused {
		if fg.ErrorCode(r) != fg.EBeforeHorizon {
			t.Errorf("refusal %v has code %q, want %s", r, fg.ErrorCode(r), fg.EBeforeHorizon)
		}
	}
	// A newer follow of the edge whose tombstone is gone applies.
	if n := Apply(t, st, 3, Follow(1, 2, V(80))); n != 1 {
		t.Errorf("a follow newer than the horizon changed %d rows, want 1", n)
	}
	CheckEvents(t, st, []fg.Event{Follow(1, 2, V(80)), Follow(1, 3, V(4)), Unfollow(1, 4, V(60)), Follow(1, 5, V(70)), Private(8, V(20))})
	if seq := LastSeq(t, st); seq != 3 {
		t.Errorf("LastSeq %d, want 3", seq)
	}
}

// testHorizonLinks: the tombstones of the other edges go too (an unblock,
// an unmute, a request withdrawn), never those that are on, nor newer
// ones, nor a user's settings (a public account, an active state), which
// are not edges and are never refused.
func (s suite) testHorizonLinks(t *testing.T) {
	st := s.newStore(t)
	Apply(t, st, 1,
		Block(1, 2, V(1)), Block(1, 3, V(2)), Unblock(1, 3, V(3)),
		Mute(1, 4, V(4), V(4).Time(), time.Time{}), Mute(1, 5, V(5), V(5).Time(), time.Time{}), Unmute(1, 5, V(6)),
		Private(2, V(7)), Public(2, V(8)), Private(3, V(9)),
		State(3, fg.StateSuspended, V(10)), State(4, fg.StateSuspended, V(11)), State(4, fg.StateActive, V(12)),
		Request(5, 6, V(13)), Request(5, 7, V(14)), Unrequest(5, 7, V(15)),
		Block(8, 9, V(90)), Unblock(8, 9, V(100)),
	)
	before := StoredEvents(t, st)
	Purge(t, st, V(50), 3)
	want := withoutTombstones(before, V(50))
	CheckEvents(t, st, want)
	for _, e := range want {
		if e.Op == fg.OpUnblock && e.User == 8 {
			return
		}
	}
	t.Errorf("the newer unblock is gone: %v", want)
}

// testHorizonEndedRequest: a request that a follow ended is recorded by the
// follow's row (see the stores' Events); when the follow's tombstone goes,
// the request's row goes with it rather than standing again. A pending
// request, however old, stays.
func (s suite) testHorizonEndedRequest(t *testing.T) {
	st := s.newStore(t)
	Apply(t, st, 1,
		Request(1, 2, V(1)), Follow(1, 2, V(2)), Unfollow(1, 2, V(3)), // approved, then unfollowed
		Follow(3, 4, V(2)), Unfollow(3, 4, V(3)), // the request arrives after the follow
		Request(5, 6, V(4)),                     // pending
		Request(7, 8, V(1)), Follow(7, 8, V(2)), // approved, still followed
	)
	Apply(t, st, 2, Request(3, 4, V(1)))
	Purge(t, st, V(50), 10)
	CheckEvents(t, st, []fg.Event{Follow(7, 8, V(2)), Request(5, 6, V(4)), Unrequest(7, 8, V(2))})
}

// testHorizonImport: an import whose first line of an edge the store has
// no row of is older than the horizon is refused whole, naming it; a
// line below the horizon of an edge with a row (in the store, or earlier
// in the import) is imported as always.
func (s suite) testHorizonImport(t *testing.T) {
	st := s.newStore(t)
	Apply(t, st, 1, Follow(1, 2, V(1)), Unfollow(1, 2, V(2)), Follow(1, 3, V(3)), Unfollow(1, 4, V(60)))
	Purge(t, st, V(50), 10)
	before := StoredEvents(t, st)
	ctx := context.Background()
	_, err := st.Import(ctx, slices.Values([]fg.Event{
		Follow(5, 6, V(70)), Follow(1, 3, V(1)), Follow(1, 2, V(1)), Follow(7, 8, V(80)), Follow(9, 10, V(2)),
	}))
	var r fg.Refusal
	if !errors.As(err, &r) || fg.ErrorCode(err) != fg.EBeforeHorizon {
		t.Fatalf("Import of a follow older than a removed tombstone: %v, want a refusal (%s)", err, fg.EBeforeHorizon)
	}
	if r.User != 1 || r.Target != 2 || r.Version != V(1) || r.Horizon != V(2)+1 {
		t.Errorf("the refusal names %v, want the first offending event, 1→2 at V(1)", r)
	}
	CheckEvents(t, st, before)

	if _, err := st.Import(ctx, slices.Values([]fg.Event{Follow(9, 10, V(70)), Follow(9, 10, V(10)), Follow(1, 3, V(2))})); err != nil {
		t.Fatalf("Import of lines below the horizon of edges with a row: %v", err)
	}
	CheckEvents(t, st, []fg.Event{Follow(1, 3, V(3)), Unfollow(1, 4, V(60)), Follow(9, 10, V(70))})
}
