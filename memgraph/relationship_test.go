package memgraph

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/graphtest"
)

// describe writes every answer g gives about users: counts, settings,
// the follow lists, the lists of Links, and the relations among them.
func describe(tb testing.TB, g *Graph, users []fg.UserID) string {
	tb.Helper()
	ctx := context.Background()
	var b strings.Builder
	counts, err := g.Counts(ctx, users)
	if err != nil {
		tb.Fatal(err)
	}
	fmt.Fprintf(&b, "%+v\n", counts)
	for _, u := range users {
		st, _ := g.Settings(ctx, u)
		fmt.Fprintf(&b, "%d: %+v following %v followers %v", u, st,
			all(tb, 7, func(r fg.PageRequest) (fg.Page, error) { return g.Following(ctx, u, r) }),
			all(tb, 7, func(r fg.PageRequest) (fg.Page, error) { return g.Followers(ctx, u, r) }))
		for _, list := range []string{fg.ListBlocks, fg.ListMutes, fg.ListFollowRequests} {
			fmt.Fprintf(&b, " %s %v", list, all(tb, 3, func(r fg.PageRequest) (fg.Page, error) { return g.Links(ctx, list, u, r) }))
		}
		rel, err := g.Relations(ctx, u, users)
		if err != nil {
			tb.Fatal(err)
		}
		fmt.Fprintf(&b, " relations %+v\n", rel)
	}
	return b.String()
}

// TestGraph_LoadLinks: Load of the events of every kind that a graph's
// hook saw, in any order, builds the graph Apply builds from them and the
// graph that made them; so does Load of what a walk of it yields.
func TestGraph_LoadLinks(t *testing.T) {
	ctx := context.Background()
	now := time.UnixMilli(1_800_000_000_000).UTC()
	clock := func() time.Time { return now }
	var events []fg.Event
	src := New(WithClock(clock), WithHook(func(_ context.Context, e fg.Event) error {
		events = append(events, e)
		return nil
	}))
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 12
	var users []fg.UserID
	for id := fg.UserID(1); id <= n; id++ {
		users = append(users, id)
	}
	for range 3000 {
		a, b := users[rng.IntN(n)], users[rng.IntN(n)]
		if a == b {
			continue
		}
		if err := graphtest.RandomWrite(ctx, src, rng, a, b); err != nil {
			t.Fatal(err)
		}
		now = now.Add(time.Duration(rng.IntN(3)) * time.Millisecond)
	}
	want := describe(t, src, users)

	rng.Shuffle(len(events), func(i, j int) { events[i], events[j] = events[j], events[i] })
	loaded := New(WithClock(clock))
	if err := loaded.Load(ctx, slices.Values(events)); err != nil {
		t.Fatal(err)
	}
	if got := describe(t, loaded, users); got != want {
		t.Errorf("Load of the hook's events:\n%s\nwant\n%s", got, want)
	}
	applied := New(WithClock(clock))
	if err := applied.Apply(ctx, events); err != nil {
		t.Fatal(err)
	}
	if got := describe(t, applied, users); got != want {
		t.Errorf("Apply of the hook's events:\n%s\nwant\n%s", got, want)
	}
	// The walk's events rebuild it too.
	var walked []fg.Event
	for u := range src.Users() {
		walked = slices.AppendSeq(walked, src.OutEdges(u))
		walked = slices.AppendSeq(walked, src.LinkEvents(u))
	}
	rebuilt := New(WithClock(clock))
	if err := rebuilt.Load(ctx, slices.Values(walked)); err != nil {
		t.Fatal(err)
	}
	if got := describe(t, rebuilt, users); got != want {
		t.Errorf("Load of the walk's events:\n%s\nwant\n%s", got, want)
	}
	if s, l := src.Stats(), loaded.Stats(); s != l {
		t.Errorf("Stats of the loaded graph %+v, of the source %+v", l, s)
	}
}

// TestGraph_HookLinks: a block is invisible while its hook runs, whole
// once it returned, and waits for a follow of the other way that awaits
// its hook; a pending request counts toward the following limit, and a
// pending approval of one counts once.
func TestGraph_HookLinks(t *testing.T) {
	ctx := context.Background()
	t.Run("BlockBeforeVisible", func(t *testing.T) {
		var g *Graph
		g = New(WithHook(func(_ context.Context, e fg.Event) error {
			if e.Op != fg.OpBlock {
				return nil
			}
			if l, _ := g.Link(ctx, fg.KindBlock, 1, 2); l.On {
				t.Error("the block is visible before its hook returned")
			}
			for _, p := range [][2]fg.UserID{{1, 2}, {2, 1}} {
				if edge, _ := g.IsFollowing(ctx, p[0], p[1]); !edge.Following {
					t.Errorf("the follow %d→%d is gone before the block's hook returned", p[0], p[1])
				}
			}
			return nil
		}))
		g.Follow(ctx, 1, 2)
		g.Follow(ctx, 2, 1)
		if res, err := g.Block(ctx, 1, 2); err != nil || !res.Created {
			t.Fatal(res, err)
		}
		c, _ := g.Counts(ctx, []fg.UserID{1, 2})
		if c[0] != (fg.Counts{ID: 1}) || c[1] != (fg.Counts{ID: 2}) {
			t.Fatalf("counts after the block: %+v", c)
		}
	})
	t.Run("BlockWaitsForReverseFollow", func(t *testing.T) {
		release := make(chan struct{})
		g := New(WithHook(func(_ context.Context, e fg.Event) error {
			if e.Op == fg.OpFollow {
				<-release
			}
			return nil
		}))
		var wg sync.WaitGroup
		wg.Go(func() {
			if _, err := g.Follow(ctx, 2, 1); err != nil {
				t.Error(err)
			}
		})
		time.Sleep(20 * time.Millisecond) // the follow 2→1 awaits its hook
		blocked := make(chan error)
		go func() { _, err := g.Block(ctx, 1, 2); blocked <- err }()
		select {
		case err := <-blocked:
			t.Fatalf("Block(1, 2) returned (%v) while the follow 2→1 awaited its hook", err)
		case <-time.After(20 * time.Millisecond):
		}
		close(release)
		wg.Wait()
		if err := <-blocked; err != nil {
			t.Fatal(err)
		}
		if edge, _ := g.IsFollowing(ctx, 2, 1); edge.Following {
			t.Fatal("the follow 2→1 survived the block made after it")
		}
	})
	t.Run("PendingRequestCountsTowardLimit", func(t *testing.T) {
		release := make(chan struct{})
		g := New(WithMaxFollowing(1), WithHook(func(_ context.Context, e fg.Event) error {
			if e.Op == fg.OpRequest {
				<-release
			}
			return nil
		}))
		if _, err := g.SetPrivate(ctx, 2, true); err != nil {
			t.Fatal(err)
		}
		errc := make(chan error)
		go func() { _, err := g.Follow(ctx, 1, 2); errc <- err }()
		time.Sleep(20 * time.Millisecond)
		if _, err := g.Follow(ctx, 1, 3); fg.ErrorCode(err) != fg.EFollowingLimit {
			t.Fatalf("a follow while a request is pending: %v, want %s", err, fg.EFollowingLimit)
		}
		close(release)
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	})
	t.Run("PendingApprovalCountsOnce", func(t *testing.T) {
		release := make(chan struct{})
		g := New(WithMaxFollowing(2), WithHook(func(_ context.Context, e fg.Event) error {
			if e.Op == fg.OpFollow && e.Target == 2 {
				<-release
			}
			return nil
		}))
		if _, err := g.SetPrivate(ctx, 2, true); err != nil {
			t.Fatal(err)
		}
		if res, err := g.Follow(ctx, 1, 2); err != nil || !res.Requested {
			t.Fatal(res, err)
		}
		errc := make(chan error)
		go func() { _, err := g.Approve(ctx, 2, 1); errc <- err }()
		time.Sleep(20 * time.Millisecond) // the approval awaits its hook
		if _, err := g.Follow(ctx, 1, 3); err != nil {
			t.Fatalf("a second follow of a limit of 2 while the first request's approval is pending: %v", err)
		}
		close(release)
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	})
}
