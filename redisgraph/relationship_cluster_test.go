package redisgraph

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/graphtest"
	"github.com/followgraph/followgraph/redisgraph/internal/layout"
	"github.com/followgraph/followgraph/redisgraph/internal/redistest"
	"github.com/followgraph/followgraph/redisgraph/internal/wire"
)

// linkKey is an edge of a kind.
type linkKey struct {
	kind         fg.Kind
	user, target fg.UserID
}

// redisLinks reads the edges among users from Redis, each side on its own:
// the members of every kind's sorted sets of each user (follows out and
// in, blocks out and in, requests out and in), keyed by the edge they
// stand for. It checks each user's counters against the sizes of its sets.
func redisLinks(tb testing.TB, g *testGraph, users []fg.UserID) (out, in map[linkKey]int64) {
	tb.Helper()
	ctx := tb.Context()
	out, in = map[linkKey]int64{}, map[linkKey]int64{}
	type set struct {
		kind    layout.Key
		counter string
		k       fg.Kind
		in      bool
	}
	var sets []set
	for _, s := range layout.Sides {
		if s.Kind != fg.KindMute {
			sets = append(sets, set{s.Set, s.Counter, s.Kind, s.In})
		}
	}
	for _, u := range users {
		for _, s := range sets {
			zs, err := g.c.Do(ctx, g.c.B().Zrange().Key(g.ks.User(u, s.kind)).Min("0").Max("-1").Withscores().Build()).AsZScores()
			must(tb, err)
			n, err := g.c.Do(ctx, g.c.B().Hget().Key(g.ks.User(u, layout.Counters)).Field(s.counter).Build()).ToString()
			if err != nil {
				n = "0"
			}
			if strconv.Itoa(len(zs)) != n {
				tb.Errorf("user %d: %s holds %d, its counter %s says %s", u, s.kind, len(zs), s.counter, n)
			}
			for _, z := range zs {
				x, _ := wire.MemberID(z.Member)
				if s.in {
					in[linkKey{s.k, x, u}] = int64(z.Score)
				} else {
					out[linkKey{s.k, u, x}] = int64(z.Score)
				}
			}
		}
	}
	return out, in
}

// modelLinks replays the events of the outbox streams of users by their
// effects, each edge keeping the effect of its highest version, as every
// applier does, and returns the edges that are on.
func modelLinks(tb testing.TB, g *testGraph, users []fg.UserID) map[linkKey]bool {
	tb.Helper()
	type state struct {
		v  fg.Version
		on bool
	}
	m := map[linkKey]state{}
	for _, es := range outboxEvents(tb, g, users) {
		for _, e := range es {
			for eff := range e.Effects {
				k := linkKey{eff.Kind, eff.User, eff.Target}
				if s, ok := m[k]; !ok || s.v < e.Version {
					m[k] = state{e.Version, eff.On}
				}
			}
		}
	}
	on := map[linkKey]bool{}
	for k, s := range m {
		if s.on && k.kind != fg.KindPrivate && k.kind != fg.KindMute {
			on[k] = true
		}
	}
	return on
}

// checkConverged checks, once every change is settled, that both sides of
// every edge agree (with the follow times), that the counters are the sizes
// of the sets, that no follow or request stands between two users one of
// whom blocks the other, and that Redis holds what the outbox's events
// say.
func checkConverged(tb testing.TB, g *testGraph, users []fg.UserID) {
	tb.Helper()
	out, in := redisLinks(tb, g, users)
	for k, ms := range out {
		if got, ok := in[k]; !ok || got != ms {
			tb.Errorf("%s %d→%d is on the user's side (at %d), not on the target's (%d, %v)", k.kind, k.user, k.target, ms, got, ok)
		}
	}
	for k := range in {
		if _, ok := out[k]; !ok {
			tb.Errorf("%s %d→%d is on the target's side only", k.kind, k.user, k.target)
		}
	}
	for k := range out {
		if k.kind == fg.KindBlock {
			continue
		}
		_, b1 := out[linkKey{fg.KindBlock, k.user, k.target}]
		_, b2 := out[linkKey{fg.KindBlock, k.target, k.user}]
		if b1 || b2 {
			tb.Errorf("%s %d→%d stands beside a block between the two", k.kind, k.user, k.target)
		}
	}
	checkFlags(tb, g, users, out)
	model := modelLinks(tb, g, users)
	for k := range model {
		if _, ok := out[k]; !ok {
			tb.Errorf("the outbox's events leave %s %d→%d on; Redis has it off", k.kind, k.user, k.target)
		}
	}
	for k := range out {
		if !model[k] {
			tb.Errorf("Redis has %s %d→%d on; the outbox's events leave it off", k.kind, k.user, k.target)
		}
	}
}

// TestClusterBlockMeetsFollow makes a follow and a block of the same pair
// meet between their steps, each way round, with the same clock reading
// on both users' sides (so the block's version does not pass the
// follow's): no follow survives the block.
func TestClusterBlockMeetsFollow(t *testing.T) {
	var hold atomic.Int32 // the op whose second steps fail, 0 for none
	g := newTestGraph(t, redistest.Cluster(t), WithClock(newTestClock().now), withSecondStepFault(func(e fg.Event) error {
		if fg.Op(hold.Load()) == e.Op {
			return errInjected
		}
		return nil
	}))
	ctx := t.Context()
	users := []fg.UserID{1, 2, 3, 4}

	// 1 follows 2; its second step is left to the outbox; 2 blocks 1.
	hold.Store(int32(fg.OpFollow))
	if r, err := g.Follow(ctx, 1, 2); err != nil || !r.Created {
		t.Fatalf("Follow(1, 2) = %+v, %v", r, err)
	}
	hold.Store(0)
	_, err := g.Block(ctx, 2, 1)
	must(t, err)
	_, err = g.Repair(ctx) // the follow's second step meets the block, and is undone
	must(t, err)
	if e, err := g.IsFollowing(ctx, 1, 2); err != nil || e.Following {
		t.Errorf("IsFollowing(1, 2) after the block and Repair = %+v, %v; want not", e, err)
	}

	// 4 blocks 3; its second step is left to the outbox; 3 follows 4,
	// which its own side allows, and the second step meets the block.
	hold.Store(int32(fg.OpBlock))
	_, err = g.Block(ctx, 4, 3)
	must(t, err)
	hold.Store(0)
	_, err = g.Follow(ctx, 3, 4)
	wantCode(t, err, fg.EBlocked, "Follow(3, 4) whose second step meets 4's block")
	if e, err := g.IsFollowing(ctx, 3, 4); err != nil || e.Following {
		t.Errorf("IsFollowing(3, 4) = %+v, %v; want undone", e, err)
	}
	_, err = g.Repair(ctx)
	must(t, err)
	checkConverged(t, g, users)
	for _, c := range []struct{ user, other fg.UserID }{{1, 2}, {3, 4}} {
		rel, err := g.Relations(ctx, c.user, []fg.UserID{c.other})
		must(t, err)
		if r := rel[0]; !r.BlockedBy || r.Relation != fg.RelationNone {
			t.Errorf("Relations(%d, %d) = %+v, want blocked by, none", c.user, c.other, r)
		}
	}
}

// TestClusterRelationshipConvergence races follows, unfollows, blocks,
// unblocks, approvals, removals and the private setting among a few users
// from many goroutines while second steps fail at random, some every
// retry. After Repair both sides of every edge of every kind agree, the
// counters are the sizes of the sets, no follow or request stands beside
// a block, and Redis holds what the events in the outbox say.
func TestClusterRelationshipConvergence(t *testing.T) {
	var failing atomic.Bool
	failing.Store(true)
	g := newTestGraph(t, redistest.Cluster(t), withSecondStepFault(func(fg.Event) error {
		if failing.Load() && rand.IntN(10) < 5 {
			return errInjected
		}
		return nil
	}))
	ctx := t.Context()
	users := []fg.UserID{1, 2, 3, 1 << 40, fg.MaxUserID}
	g.touch(users...)
	const workers, ops = 12, 120
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 15))
			for range ops {
				a, b := users[rng.IntN(len(users))], users[rng.IntN(len(users))]
				if a == b {
					continue
				}
				if err := graphtest.RandomWrite(ctx, g, rng, a, b); err != nil {
					t.Errorf("%d, %d: %v", a, b, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	failing.Store(false)
	for i := range 3 { // a Repair may undo follows that met blocks: their undos are settled by the next
		if _, err := g.Repair(ctx); err != nil {
			t.Fatalf("Repair %d: %v", i, err)
		}
	}
	checkConverged(t, g, users)
	if t.Failed() {
		for _, es := range outboxEvents(t, g, users) {
			for _, e := range es {
				t.Log(fmt.Sprint(e))
			}
		}
	}
}

// checkFlags checks each user's flags set (keys.go) against the edges of
// the other kinds (redisLinks' out, whose sides agree) and its mutes.
func checkFlags(tb testing.TB, g *testGraph, users []fg.UserID, out map[linkKey]int64) {
	tb.Helper()
	ctx := tb.Context()
	for _, u := range users {
		want := map[fg.UserID]int{}
		for k := range out {
			switch {
			case k.kind == fg.KindBlock && k.user == u:
				want[k.target] |= layout.FlagBlocking
			case k.kind == fg.KindBlock && k.target == u:
				want[k.user] |= layout.FlagBlockedBy
			case k.kind == fg.KindRequest && k.user == u:
				want[k.target] |= layout.FlagRequested
			case k.kind == fg.KindRequest && k.target == u:
				want[k.user] |= layout.FlagRequestedBy
			}
		}
		mutes, err := g.c.Do(ctx, g.c.B().Zrange().Key(g.ks.User(u, layout.MuteOut)).Min("0").Max("-1").Build()).AsStrSlice()
		must(tb, err)
		for _, m := range mutes {
			x, _ := wire.MemberID(m)
			want[x] |= layout.FlagMuting
		}
		zs, err := g.c.Do(ctx, g.c.B().Zrange().Key(g.ks.User(u, layout.Flags)).Min("0").Max("-1").Withscores().Build()).AsZScores()
		must(tb, err)
		got := map[fg.UserID]int{}
		for _, z := range zs {
			x, _ := wire.MemberID(z.Member)
			got[x] = int(z.Score)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			tb.Errorf("user %d: flags %v, want %v from its sets", u, got, want)
		}
	}
}
