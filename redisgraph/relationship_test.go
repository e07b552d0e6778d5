package redisgraph

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/memgraph"
)

// testClock is a clock a test moves.
type testClock struct{ ms atomic.Int64 }

func newTestClock() *testClock {
	c := &testClock{}
	c.ms.Store(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC).UnixMilli())
	return c
}

func (c *testClock) now() time.Time      { return fg.Millis(c.ms.Load()) }
func (c *testClock) add(d time.Duration) { c.ms.Add(d.Milliseconds()) }

func must(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}

func wantCode(tb testing.TB, err error, code string, what string) {
	tb.Helper()
	if fg.ErrorCode(err) != code {
		tb.Errorf("%s: error %v, want code %s", what, err, code)
	}
}

// countsOf returns the counts of id.
func countsOf(tb testing.TB, g fg.Graph, id fg.UserID) fg.Counts {
	tb.Helper()
	cs, err := g.Counts(tb.Context(), []fg.UserID{id})
	must(tb, err)
	return cs[0]
}

// ids returns the ids of a page's entries.
func ids(p fg.Page) []fg.UserID {
	out := make([]fg.UserID, len(p.Entries))
	for i, e := range p.Entries {
		out[i] = e.ID
	}
	return out
}

// TestRelationships runs the other kinds through one Graph on a
// standalone Redis and on a Cluster: what each op changes, on both sides,
// with the counts; what it refuses; the flags of Relations.
func TestRelationships(t *testing.T) {
	for _, m := range modes {
		t.Run(m.Name, func(t *testing.T) {
			clock := newTestClock()
			var events []fg.Event
			var mu sync.Mutex
			g := newTestGraph(t, m.Client(t), WithClock(clock.now), WithMaxFollowing(3),
				WithHook(func(_ context.Context, e fg.Event) error {
					mu.Lock()
					defer mu.Unlock()
					events = append(events, e)
					return nil
				}))
			ctx := t.Context()
			hooked := func() []fg.Event {
				mu.Lock()
				defer mu.Unlock()
				out := events
				events = nil
				return out
			}

			t.Run("Block", func(t *testing.T) {
				_, err := g.Follow(ctx, 1, 2)
				must(t, err)
				_, err = g.Follow(ctx, 2, 1)
				must(t, err)
				must(t, errOf(g.SetPrivate(ctx, 3, true)))
				r, err := g.Follow(ctx, 1, 3)
				must(t, err)
				if !r.Requested {
					t.Fatalf("Follow(1, 3) of a private 3 = %+v, want a request", r)
				}
				_, err = g.Follow(ctx, 3, 1)
				must(t, err)
				hooked()
				clock.add(time.Second)

				b, err := g.Block(ctx, 1, 2)
				must(t, err)
				if !b.Created || !b.Since.Equal(clock.now()) {
					t.Errorf("Block(1, 2) = %+v, want created at %v", b, clock.now())
				}
				if es := hooked(); len(es) != 1 || es[0].Op != fg.OpBlock || es[0].User != 1 || es[0].Target != 2 {
					t.Errorf("the hook saw %v, want the one block", es)
				}
				if c := countsOf(t, g, 1); c.FollowingCount != 0 || c.FollowerCount != 1 {
					t.Errorf("Counts(1) after the block = %+v, want following 0, followers 1 (3)", c)
				}
				if c := countsOf(t, g, 2); c.FollowingCount != 0 || c.FollowerCount != 0 {
					t.Errorf("Counts(2) after the block = %+v, want none", c)
				}
				for _, p := range [][2]fg.UserID{{1, 2}, {2, 1}} {
					_, err := g.Follow(ctx, p[0], p[1])
					wantCode(t, err, fg.EBlocked, "Follow while blocked")
				}
				again, err := g.Block(ctx, 1, 2)
				must(t, err)
				if again.Created || !again.Since.Equal(b.Since) {
					t.Errorf("Block(1, 2) again = %+v, want not created, since %v", again, b.Since)
				}
				l, err := g.Link(ctx, fg.KindBlock, 1, 2)
				must(t, err)
				if !l.On || !l.Since.Equal(b.Since) {
					t.Errorf("Link(block, 1, 2) = %+v", l)
				}
				p, err := g.Links(ctx, fg.ListBlocks, 1, fg.PageRequest{})
				must(t, err)
				if !slices.Equal(ids(p), []fg.UserID{2}) {
					t.Errorf("Links(blocks, 1) = %v, want [2]", ids(p))
				}
				rel, err := g.Relations(ctx, 2, []fg.UserID{1, 2})
				must(t, err)
				if !rel[0].BlockedBy || rel[0].Blocking || rel[0].Relation != fg.RelationNone {
					t.Errorf("Relations(2, 1) = %+v, want blocked by, none", rel[0])
				}

				// A block ends the requests both ways too.
				_, err = g.Block(ctx, 3, 1)
				must(t, err)
				if c := countsOf(t, g, 3); c.FollowRequests != 0 || c.FollowingCount != 0 {
					t.Errorf("Counts(3) after blocking 1 = %+v, want no request, no follow", c)
				}
				if c := countsOf(t, g, 1); c.FollowerCount != 0 {
					t.Errorf("Counts(1) after 3 blocked it = %+v, want no follower", c)
				}
				_, err = g.Follow(ctx, 1, 3)
				wantCode(t, err, fg.EBlocked, "Follow(1, 3) after 3 blocked 1")

				removed, err := g.Unblock(ctx, 1, 2)
				must(t, err)
				if !removed {
					t.Error("Unblock(1, 2) = false")
				}
				if removed, err = g.Unblock(ctx, 1, 2); err != nil || removed {
					t.Errorf("Unblock(1, 2) again = %v, %v; want false", removed, err)
				}
				if c := countsOf(t, g, 1); c.FollowingCount != 0 {
					t.Errorf("Counts(1) after the unblock = %+v: it restores nothing", c)
				}
				_, err = g.Follow(ctx, 1, 2)
				must(t, err)
				_, err = g.Block(ctx, 1, 1)
				wantCode(t, err, fg.ESelfFollow, "Block(1, 1)")
			})

			t.Run("Mute", func(t *testing.T) {
				r, err := g.Mute(ctx, 10, 11, time.Hour)
				must(t, err)
				if !r.Created || !r.Expires.Equal(clock.now().Add(time.Hour)) {
					t.Errorf("Mute(10, 11, 1h) = %+v", r)
				}
				clock.add(time.Minute)
				again, err := g.Mute(ctx, 10, 11, 2*time.Hour)
				must(t, err)
				if again.Created || !again.Since.Equal(r.Since) || !again.Expires.Equal(clock.now().Add(2*time.Hour)) {
					t.Errorf("Mute(10, 11, 2h) again = %+v, want the since of %+v and a new expiry", again, r)
				}
				rel, err := g.Relations(ctx, 10, []fg.UserID{11})
				must(t, err)
				if !rel[0].Muting {
					t.Errorf("Relations(10, 11) = %+v, want muting", rel[0])
				}
				_, err = g.Mute(ctx, 10, 12, 0)
				must(t, err)
				clock.add(3 * time.Hour) // 11's mute expires
				if l, err := g.Link(ctx, fg.KindMute, 10, 11); err != nil || l.On {
					t.Errorf("Link(mute, 10, 11) after its expiry = %+v, %v; want off", l, err)
				}
				p, err := g.Links(ctx, fg.ListMutes, 10, fg.PageRequest{Limit: 1})
				must(t, err)
				if !slices.Equal(ids(p), []fg.UserID{12}) || p.Next != "" {
					t.Errorf("Links(mutes, 10) = %v next %q, want [12] only", ids(p), p.Next)
				}
				if removed, err := g.Unmute(ctx, 10, 11); err != nil || removed {
					t.Errorf("Unmute of an expired mute = %v, %v; want false", removed, err)
				}
				if removed, err := g.Unmute(ctx, 10, 12); err != nil || !removed {
					t.Errorf("Unmute(10, 12) = %v, %v; want true", removed, err)
				}
				_, err = g.Mute(ctx, 10, 13, -time.Second)
				wantCode(t, err, fg.EInvalidArgument, "Mute for a negative duration")
				if c := countsOf(t, g, 10); c.FollowingCount != 0 {
					t.Errorf("Counts(10) = %+v: a mute changes no count", c)
				}
			})

			t.Run("Requests", func(t *testing.T) {
				must(t, errOf(g.SetPrivate(ctx, 20, true)))
				if s, err := g.Settings(ctx, 20); err != nil || !s.Private {
					t.Errorf("Settings(20) = %+v, %v; want private", s, err)
				}
				for _, u := range []fg.UserID{21, 22, 23} {
					r, err := g.Follow(ctx, u, 20)
					must(t, err)
					if !r.Requested || !r.Created {
						t.Errorf("Follow(%d, 20) = %+v, want a new request", u, r)
					}
				}
				r, err := g.Follow(ctx, 21, 20)
				must(t, err)
				if !r.Requested || r.Created {
					t.Errorf("Follow(21, 20) again = %+v, want the pending request", r)
				}
				if c := countsOf(t, g, 20); c.FollowRequests != 3 || c.FollowerCount != 0 {
					t.Errorf("Counts(20) = %+v, want 3 requests, no follower", c)
				}
				p, err := g.Links(ctx, fg.ListFollowRequests, 20, fg.PageRequest{})
				must(t, err)
				if len(p.Entries) != 3 {
					t.Errorf("Links(follow-requests, 20) = %v", ids(p))
				}
				rel, err := g.Relations(ctx, 21, []fg.UserID{20})
				must(t, err)
				if !rel[0].Requested || rel[0].Relation != fg.RelationNone {
					t.Errorf("Relations(21, 20) = %+v, want requested", rel[0])
				}
				// Requests count toward the following limit (3).
				_, err = g.Follow(ctx, 21, 24)
				must(t, err)
				_, err = g.Follow(ctx, 21, 25)
				must(t, err)
				_, err = g.Follow(ctx, 21, 26)
				wantCode(t, err, fg.EFollowingLimit, "Follow over the limit, a request included")

				a, err := g.Approve(ctx, 20, 21)
				must(t, err)
				if !a.Created || !a.Since.Equal(clock.now()) {
					t.Errorf("Approve(20, 21) = %+v", a)
				}
				if a, err = g.Approve(ctx, 20, 21); err != nil || a.Created {
					t.Errorf("Approve(20, 21) again = %+v, %v; want not created", a, err)
				}
				_, err = g.Approve(ctx, 20, 24)
				wantCode(t, err, fg.ENoRequest, "Approve with no request")
				if e, err := g.IsFollowing(ctx, 21, 20); err != nil || !e.Following {
					t.Errorf("IsFollowing(21, 20) after the approval = %+v, %v", e, err)
				}
				if removed, err := g.RemoveFollower(ctx, 20, 22); err != nil || !removed {
					t.Errorf("RemoveFollower(20, 22) of a request = %v, %v; want true", removed, err)
				}
				if removed, err := g.Unfollow(ctx, 23, 20); err != nil || !removed {
					t.Errorf("Unfollow(23, 20) of a request = %v, %v; want true", removed, err)
				}
				if c := countsOf(t, g, 20); c.FollowRequests != 0 || c.FollowerCount != 1 {
					t.Errorf("Counts(20) = %+v, want no request, follower 21", c)
				}
				if c := countsOf(t, g, 21); c.FollowingCount != 3 {
					t.Errorf("Counts(21) = %+v, want following 20, 24, 25", c)
				}
			})

			t.Run("PublicApprovesAll", func(t *testing.T) {
				const n = approveChunk + 20
				must(t, errOf(g.SetPrivate(ctx, 30, true)))
				for i := range n {
					_, err := g.Follow(ctx, fg.UserID(1000+i), 30)
					must(t, err)
				}
				if c := countsOf(t, g, 30); c.FollowRequests != n {
					t.Fatalf("Counts(30) = %+v, want %d requests", c, n)
				}
				must(t, errOf(g.SetPrivate(ctx, 30, false)))
				if c := countsOf(t, g, 30); c.FollowRequests != 0 || c.FollowerCount != n {
					t.Errorf("Counts(30) after going public = %+v, want %d followers, no request", c, n)
				}
				if c := countsOf(t, g, 1000); c.FollowingCount != 1 {
					t.Errorf("Counts(1000) = %+v, want following 30", c)
				}
				r, err := g.Follow(ctx, 2000, 30)
				must(t, err)
				if r.Requested {
					t.Error("Follow of a public account made a request")
				}
			})

			t.Run("Suggestions", func(t *testing.T) {
				// 40 follows 41, who follows 42..44, and 46, who follows
				// 45; 40 blocks 42, is blocked by 43, mutes 44: only 45
				// is suggested.
				for _, e := range [][2]fg.UserID{{40, 41}, {40, 46}, {41, 42}, {41, 43}, {41, 44}, {46, 45}} {
					_, err := g.Follow(ctx, e[0], e[1])
					must(t, err)
				}
				_, err := g.Block(ctx, 40, 42)
				must(t, err)
				_, err = g.Block(ctx, 43, 40)
				must(t, err)
				_, err = g.Mute(ctx, 40, 44, 0)
				must(t, err)
				s, err := g.Suggestions(ctx, 40, 10)
				must(t, err)
				if len(s) != 1 || s[0].ID != 45 {
					t.Errorf("Suggestions(40) = %+v, want 45 only", s)
				}
			})
		})
	}
}

func errOf[T any](_ T, err error) error { return err }

// TestRebuildLinks rebuilds the other kinds from a memgraph holding them,
// on a standalone Redis and a Cluster, and reads them back: both sides,
// the counts, a mute's expiry, the private setting. Rebuilding again
// writes nothing.
func TestRebuildLinks(t *testing.T) {
	ctx := t.Context()
	clock := newTestClock()
	ms := clock.ms.Load() - 10_000
	v := func(i int64) fg.Version { return fg.VersionAt(ms + i) }
	mute := fg.NewEvent(5, 6, fg.OpMute, v(7))
	mute.Since, mute.Expires = fg.Millis(ms+6), clock.now().Add(time.Hour)
	events := []fg.Event{
		fg.NewEvent(1, 2, fg.OpFollow, v(1)),
		fg.NewEvent(2, 1, fg.OpFollow, v(1)),
		fg.NewEvent(1, 2, fg.OpBlock, v(2)), // ends both follows
		fg.NewEvent(3, 4, fg.OpRequest, v(3)),
		fg.NewEvent(4, 0, fg.OpPrivate, v(2)),
		fg.NewEvent(3, 5, fg.OpBlock, v(4)),
		fg.NewEvent(3, 5, fg.OpUnblock, v(5)),
		mute,
	}
	for _, m := range modes {
		t.Run(m.Name, func(t *testing.T) {
			src := memgraph.New()
			must(t, src.Load(ctx, slices.Values(events)))
			g := newTestGraph(t, m.Client(t), WithClock(clock.now))
			touchSource(g, src)
			st, err := g.Rebuild(ctx, src, RebuildOptions{})
			must(t, err)
			check := func() {
				t.Helper()
				rel, err := g.Relations(ctx, 2, []fg.UserID{1})
				must(t, err)
				if r := rel[0]; !r.BlockedBy || r.Relation != fg.RelationNone {
					t.Errorf("Relations(2, 1) = %+v, want blocked by, none", r)
				}
				if c := countsOf(t, g, 4); c.FollowRequests != 1 {
					t.Errorf("Counts(4) = %+v, want 1 request", c)
				}
				if s, err := g.Settings(ctx, 4); err != nil || !s.Private {
					t.Errorf("Settings(4) = %+v, %v; want private", s, err)
				}
				rel, err = g.Relations(ctx, 3, []fg.UserID{4, 5})
				must(t, err)
				if !rel[0].Requested || rel[1].Blocking {
					t.Errorf("Relations(3, [4 5]) = %+v, want requested 4, not blocking 5", rel)
				}
				l, err := g.Link(ctx, fg.KindMute, 5, 6)
				must(t, err)
				if !l.On || !l.Since.Equal(mute.Since) || !l.Expires.Equal(mute.Expires) {
					t.Errorf("Link(mute, 5, 6) = %+v, want since %v until %v", l, mute.Since, mute.Expires)
				}
				_, err = g.Follow(ctx, 2, 1)
				wantCode(t, err, fg.EBlocked, "Follow(2, 1) after the rebuild")
			}
			check()
			written := st.Written
			if st, err = g.Rebuild(ctx, src, RebuildOptions{}); err != nil || st.Written != 0 {
				t.Errorf("Rebuild again = %+v, %v; want nothing written (the first wrote %d)", st, err, written)
			}
			check()
		})
	}
}
