package graphtest

import (
	"slices"
	"testing"

	"github.com/followgraph/followgraph"
)

// horizonFixture builds a fresh engine like fixture whose refusals are
// appended to the slice it returns, and skips the test unless the engine
// implements followgraph.TombstonePurger and followgraph.Applier.
func (s suite) horizonFixture(tb testing.TB) (*fixture, followgraph.TombstonePurger, *[]followgraph.Refusal) {
	tb.Helper()
	refused := new([]followgraph.Refusal)
	f := s.fixtureWith(tb, Options{Refused: func(r followgraph.Refusal) { *refused = append(*refused, r) }})
	p, ok := f.g.(followgraph.TombstonePurger)
	if _, applier := f.g.(followgraph.Applier); !ok || !applier {
		tb.Skip("engine does not implement followgraph.TombstonePurger and followgraph.Applier")
	}
	return f, p, refused
}

// purge purges p's tombstones below h, limit a step, until none is left,
// and returns how many went; it fails the test on an error or a step over
// limit.
func (f *fixture) purge(p followgraph.TombstonePurger, h followgraph.Version, limit int) int {
	f.tb.Helper()
	total := 0
	for steps := 0; ; steps++ {
		n, more, err := p.PurgeTombstones(f.ctx, h, limit)
		if err != nil {
			f.tb.Fatalf("PurgeTombstones: %v", err)
		}
		if n > limit {
			f.tb.Fatalf("PurgeTombstones(%d) removed %d", limit, n)
		}
		total += n
		if !more {
			return total
		}
		if steps > 100_000 {
			f.tb.Fatal("PurgeTombstones still reports more after 100,000 steps")
		}
	}
}

// testHorizonPurgeAndRefuse: purging changes no read; afterwards an event
// older than the horizon of an edge whose tombstone is gone is refused,
// reported, and leaves the edge off, whatever its kind; a newer one
// applies; the horizon never goes back.
func (s suite) testHorizonPurgeAndRefuse(t *testing.T) {
	f, p, refused := s.horizonFixture(t)
	f.follow(1, 2)
	follow13 := f.follow(1, 3).Since
	f.advance(1)
	f.unfollow(1, 3)
	f.advance(1)
	block45 := f.block(4, 5).Since
	f.advance(1)
	f.unblock(4, 5)
	f.advance(1)
	mute16 := f.mute(1, 6, 0).Since
	f.advance(1)
	f.unmute(1, 6)
	f.setPrivate(7, true)
	request87 := f.follow(8, 7).Since
	f.advance(1)
	f.unfollow(8, 7)
	users := []followgraph.UserID{1, 2, 3, 4, 5, 6, 7, 8}
	before := f.describe(users...)

	f.advance(1000)
	h := followgraph.VersionAt(f.now())
	if n := f.purge(p, h, 2); n < 4 {
		t.Errorf("the purge removed %d tombstones; there are at least 4 (a follow's, a block's, a mute's, a request's)", n)
	}
	if after := f.describe(users...); after != before {
		t.Errorf("purging tombstones changed what reads see:\nbefore%s\nafter%s", before, after)
	}
	horizon, err := p.TombstoneHorizon(f.ctx)
	if err != nil || horizon <= followgraph.VersionAt(request87.UnixMilli()) || horizon > h {
		t.Errorf("TombstoneHorizon = %d, %v; want above the last tombstone removed and at most the bound %d", horizon, err, h)
	}

	at := func(ts interface{ UnixMilli() int64 }) followgraph.Version {
		return followgraph.VersionAt(ts.UnixMilli())
	}
	mute := followgraph.NewEvent(1, 6, followgraph.OpMute, at(mute16))
	mute.Since = mute.Time
	old := []followgraph.Event{
		followgraph.NewEvent(1, 3, followgraph.OpFollow, at(follow13)),
		followgraph.NewEvent(4, 5, followgraph.OpBlock, at(block45)),
		mute,
		followgraph.NewEvent(8, 7, followgraph.OpRequest, at(request87)),
		followgraph.NewEvent(1, 2, followgraph.OpFollow, followgraph.VersionAt(start.UnixMilli())), // older than a live edge: nothing
	}
	f.apply(old...)
	if after := f.describe(users...); after != before {
		t.Errorf("events older than removed tombstones changed what reads see:\nbefore%s\nafter%s", before, after)
	}
	if e := f.edge(1, 3); e.Following {
		t.Errorf("an old follow brought back 1→3, unfollowed since: %+v", e)
	}
	for _, want := range []followgraph.Effect{
		{Kind: followgraph.KindFollow, User: 1, Target: 3, On: true},
		{Kind: followgraph.KindBlock, User: 4, Target: 5, On: true},
		{Kind: followgraph.KindMute, User: 1, Target: 6, On: true},
		{Kind: followgraph.KindRequest, User: 8, Target: 7, On: true},
	} {
		if !slices.ContainsFunc(*refused, func(r followgraph.Refusal) bool { return r.Effect == want }) {
			t.Errorf("no refusal of %+v among %v", want, *refused)
		}
	}
	for _, r := range *refused {
		if r.Horizon != horizon || r.Version >= horizon || followgraph.ErrorCode(r) != followgraph.EBeforeHorizon {
			t.Errorf("refusal %v: want horizon %d, an older version, code %s", r, horizon, followgraph.EBeforeHorizon)
		}
		if r.Effect == (followgraph.Effect{Kind: followgraph.KindFollow, User: 1, Target: 2, On: true}) {
			t.Errorf("the old follow of the live edge 1→2 was refused: %v", r)
		}
	}

	// A newer change applies; a lower bound, or a lower raise, leaves the
	// horizon as it is; a higher raise moves it.
	f.apply(followgraph.NewEvent(1, 3, followgraph.OpFollow, h+1))
	if e := f.edge(1, 3); !e.Following || !e.Since.Equal(h.Time()) {
		t.Errorf("a follow newer than the horizon: IsFollowing(1, 3) = %+v, want since %v", e, h.Time())
	}
	if n, _, err := p.PurgeTombstones(f.ctx, horizon-1, 10); err != nil || n != 0 {
		t.Errorf("PurgeTombstones below the horizon = %d, %v", n, err)
	}
	if err := p.RaiseTombstoneHorizon(f.ctx, horizon-1); err != nil {
		t.Fatal(err)
	}
	if got, _ := p.TombstoneHorizon(f.ctx); got != horizon {
		t.Errorf("TombstoneHorizon after a lower purge and raise = %d, want %d", got, horizon)
	}
	if err := p.RaiseTombstoneHorizon(f.ctx, h+1); err != nil {
		t.Fatal(err)
	}
	if got, _ := p.TombstoneHorizon(f.ctx); got != h+1 {
		t.Errorf("TombstoneHorizon after a raise = %d, want %d", got, h+1)
	}
}

// testHorizonHiddenKept: the edges of a hidden user are kept off with
// their versions, like tombstones, but are not tombstones: a purge keeps
// them, and the user's return restores them with their original times.
func (s suite) testHorizonHiddenKept(t *testing.T) {
	f, p, _ := s.horizonFixture(t)
	j, ok := f.g.(followgraph.JobRunner)
	if !ok {
		t.Skip("engine does not implement followgraph.JobRunner")
	}
	RunJobs(t, j, 0)
	since := f.follow(10, 11).Since
	f.advance(1)
	f.mute(11, 10, 0)
	f.advance(1)
	f.setState(11, followgraph.StateDeactivated)
	f.advance(1000)
	f.purge(p, followgraph.VersionAt(f.now()), 100)
	f.setState(11, followgraph.StateActive)
	if e := f.edge(10, 11); !e.Following || !e.Since.Equal(since) {
		t.Errorf("after the purge and the user's return, IsFollowing(10, 11) = %+v, want since %v", e, since)
	}
	if l := f.link(followgraph.KindMute, 11, 10); !l.On {
		t.Errorf("after the purge and the user's return, the mute 11→10 is %+v, want on", l)
	}
}
