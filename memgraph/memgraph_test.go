package memgraph

import (
	"cmp"
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/graphtest"
)

func TestConformance(t *testing.T) {
	graphtest.Run(t, func(tb testing.TB, o graphtest.Options) fg.Graph {
		return New(WithClock(o.Now), WithMaxFollowing(o.MaxFollowing), WithHook(o.Hook), WithRefused(o.Refused), WithRegion(o.Region))
	})
}

// TestRegionRange: New refuses, by a panic, a region other than 0 (none)
// to followgraph.MaxRegion.
func TestRegionRange(t *testing.T) {
	for _, r := range []int{-1, fg.MaxRegion + 1} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("New(WithRegion(%d)) did not panic", r)
				}
			}()
			New(WithRegion(r))
		}()
	}
	New(WithRegion(fg.MaxRegion))
}

// model is a plain map of edges to follow times: the reference answers.
type model map[[2]fg.UserID]int64

// list returns the ids matching keep with their times, newest first.
func (m model) list(keep func(u, t fg.UserID) (fg.UserID, bool)) []fg.Entry {
	var es []fg.Entry
	for e, ms := range m {
		if id, ok := keep(e[0], e[1]); ok {
			es = append(es, fg.Entry{ID: id, Since: fg.Millis(ms)})
		}
	}
	slices.SortFunc(es, func(a, b fg.Entry) int {
		if c := b.Since.Compare(a.Since); c != 0 {
			return c
		}
		return cmp.Compare(b.ID, a.ID)
	})
	return es
}

func (m model) following(u fg.UserID) []fg.Entry {
	return m.list(func(a, b fg.UserID) (fg.UserID, bool) { return b, a == u })
}

func (m model) followers(u fg.UserID) []fg.Entry {
	return m.list(func(a, b fg.UserID) (fg.UserID, bool) { return a, b == u })
}

// all pages through a list with the given page size.
func all(tb testing.TB, size int, get func(fg.PageRequest) (fg.Page, error)) []fg.Entry {
	tb.Helper()
	var es []fg.Entry
	req := fg.PageRequest{Limit: size}
	for {
		p, err := get(req)
		if err != nil {
			tb.Fatal(err)
		}
		es = append(es, p.Entries...)
		if p.Next == "" {
			return es
		}
		req.Cursor = p.Next
	}
}

func allSet(tb testing.TB, size int, get func(fg.PageRequest) (fg.SetPage, error)) (int64, []fg.Entry) {
	tb.Helper()
	var count int64 = -1
	es := all(tb, size, func(r fg.PageRequest) (fg.Page, error) {
		p, err := get(r)
		if count >= 0 && p.Count != count {
			tb.Fatalf("count changed between pages: %d then %d", count, p.Count)
		}
		count = p.Count
		return fg.Page{Entries: p.Entries, Next: p.Next}, err
	})
	return count, es
}

func equalEntries(tb testing.TB, what string, got, want []fg.Entry) {
	tb.Helper()
	if len(got) != len(want) {
		tb.Fatalf("%s: %d entries, want %d", what, len(got), len(want))
	}
	for i := range got {
		if got[i].ID != want[i].ID || !got[i].Since.Equal(want[i].Since) {
			tb.Fatalf("%s: entry %d is %v, want %v", what, i, got[i], want[i])
		}
	}
}

// TestGraph_LargeLists drives lists far past one chunk and past the bitmap
// threshold, with ties, unfollows from the middle and refollows, and
// checks every list and set query against the model. The conformance
// suite's graphs are small; this is where chunk splits, merges, bitmaps and
// both page strategies of set queries are proven.
func TestGraph_LargeLists(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	ms := int64(1_700_000_000_000)
	g := New(WithClock(func() time.Time { return time.UnixMilli(ms) }))
	m := model{}
	const users = 3000
	celebs := []fg.UserID{1, 2, 3, 4}
	pick := func() fg.UserID {
		if rng.IntN(2) == 0 {
			return celebs[rng.IntN(len(celebs))]
		}
		return fg.UserID(1 + rng.IntN(users))
	}
	for i := range 40000 {
		if rng.IntN(3) == 0 {
			ms += int64(rng.IntN(3))
		}
		u, x := pick(), pick()
		if i%5 == 0 {
			u = celebs[rng.IntN(len(celebs))] // celebrities follow many too
		}
		if u == x {
			continue
		}
		if rng.IntN(4) == 0 {
			removed, err := g.Unfollow(ctx, u, x)
			_, had := m[[2]fg.UserID{u, x}]
			if err != nil || removed != had {
				t.Fatalf("unfollow %d→%d: removed %v err %v, want removed %v", u, x, removed, err, had)
			}
			delete(m, [2]fg.UserID{u, x})
			continue
		}
		res, err := g.Follow(ctx, u, x)
		since, had := m[[2]fg.UserID{u, x}]
		if !had {
			since = ms
			m[[2]fg.UserID{u, x}] = ms
		}
		if err != nil || res.Created == had || res.Since.UnixMilli() != since {
			t.Fatalf("follow %d→%d: %+v %v, want created %v since %d", u, x, res, err, !had, since)
		}
	}
	for _, c := range celebs {
		if n := len(m.followers(c)); n < 2*chunkMax {
			t.Fatalf("celebrity %d has %d followers: the test must exceed two chunks", c, n)
		}
	}
	check := func(u fg.UserID) {
		equalEntries(t, "following", all(t, 333, func(r fg.PageRequest) (fg.Page, error) { return g.Following(ctx, u, r) }), m.following(u))
		equalEntries(t, "followers", all(t, 1000, func(r fg.PageRequest) (fg.Page, error) { return g.Followers(ctx, u, r) }), m.followers(u))
	}
	for _, c := range celebs {
		check(c)
	}
	for range 50 {
		check(fg.UserID(1 + rng.IntN(users)))
	}
	in := func(set []fg.Entry) map[fg.UserID]bool {
		ids := make(map[fg.UserID]bool, len(set))
		for _, e := range set {
			ids[e.ID] = true
		}
		return ids
	}
	filter := func(es []fg.Entry, keep map[fg.UserID]bool) []fg.Entry {
		return slices.DeleteFunc(slices.Clone(es), func(e fg.Entry) bool { return !keep[e.ID] })
	}
	pairs := [][2]fg.UserID{{1, 2}, {3, 4}, {1, 77}, {77, 1}, {5, 6}}
	for _, p := range pairs {
		u, o := p[0], p[1]
		for _, size := range []int{1, 50, 1000} {
			want := filter(m.following(u), in(m.followers(u)))
			n, got := allSet(t, size, func(r fg.PageRequest) (fg.SetPage, error) { return g.Mutuals(ctx, u, r) })
			equalEntries(t, "mutuals", got, want)
			if n != int64(len(want)) {
				t.Fatalf("mutuals of %d: count %d, want %d", u, n, len(want))
			}
			want = filter(m.following(u), in(m.following(o)))
			n, got = allSet(t, size, func(r fg.PageRequest) (fg.SetPage, error) { return g.CommonFollowing(ctx, u, o, r) })
			equalEntries(t, "common-following", got, want)
			if n != int64(len(want)) {
				t.Fatalf("common-following: count %d, want %d", n, len(want))
			}
			want = filter(m.followers(u), in(m.followers(o)))
			n, got = allSet(t, size, func(r fg.PageRequest) (fg.SetPage, error) { return g.CommonFollowers(ctx, u, o, r) })
			equalEntries(t, "common-followers", got, want)
			if n != int64(len(want)) {
				t.Fatalf("common-followers: count %d, want %d", n, len(want))
			}
			want = filter(m.following(u), in(m.followers(o)))
			n, got = allSet(t, size, func(r fg.PageRequest) (fg.SetPage, error) { return g.KnownFollowers(ctx, u, o, r) })
			equalEntries(t, "known-followers", got, want)
			if n != int64(len(want)) {
				t.Fatalf("known-followers: count %d, want %d", n, len(want))
			}
		}
	}

	// Load of the same state, as events, builds the same graph.
	var events []fg.Event
	for e, ms := range m {
		events = append(events, fg.NewEvent(e[0], e[1], fg.OpFollow, fg.VersionAt(ms)))
	}
	loaded := New()
	if err := loaded.Load(ctx, slices.Values(events)); err != nil {
		t.Fatal(err)
	}
	for _, c := range append(celebs, 10, 11, 12) {
		equalEntries(t, "loaded following", all(t, 1000, func(r fg.PageRequest) (fg.Page, error) { return loaded.Following(ctx, c, r) }), m.following(c))
		equalEntries(t, "loaded followers", all(t, 1000, func(r fg.PageRequest) (fg.Page, error) { return loaded.Followers(ctx, c, r) }), m.followers(c))
	}
	if s := loaded.Stats(); s.Edges != len(m) {
		t.Fatalf("loaded %d edges, want %d", s.Edges, len(m))
	}
}

func TestGraph_Hook(t *testing.T) {
	ctx := context.Background()
	t.Run("FailureLeavesNoTrace", func(t *testing.T) {
		fail := errors.New("log down")
		var seen []fg.Event
		g := New(WithHook(func(_ context.Context, e fg.Event) error {
			seen = append(seen, e)
			return fail
		}))
		if _, err := g.Follow(ctx, 1, 2); !errors.Is(err, fail) {
			t.Fatalf("follow with a failing hook: %v, want %v", err, fail)
		}
		if e, _ := g.IsFollowing(ctx, 1, 2); e.Following {
			t.Fatal("a follow whose hook failed is visible")
		}
		c, _ := g.Counts(ctx, []fg.UserID{1, 2})
		if c[0].FollowingCount != 0 || c[1].FollowerCount != 0 {
			t.Fatalf("counts moved: %+v", c)
		}
		if len(seen) != 1 || seen[0].Op != fg.OpFollow || seen[0].User != 1 || seen[0].Target != 2 {
			t.Fatalf("hook saw %+v", seen)
		}
	})
	t.Run("BeforeVisible", func(t *testing.T) {
		var g *Graph
		g = New(WithHook(func(_ context.Context, e fg.Event) error {
			if edge, _ := g.IsFollowing(ctx, e.User, e.Target); edge.Following {
				t.Error("the change is visible before its hook returned")
			}
			return nil
		}))
		res, err := g.Follow(ctx, 1, 2)
		if err != nil || !res.Created {
			t.Fatal(res, err)
		}
		if edge, _ := g.IsFollowing(ctx, 1, 2); !edge.Following || !edge.Since.Equal(res.Since) {
			t.Fatalf("after the hook: %+v", edge)
		}
	})
	t.Run("SameEdgeWaits", func(t *testing.T) {
		release := make(chan struct{})
		var mu sync.Mutex
		var events []fg.Event
		g := New(WithHook(func(_ context.Context, e fg.Event) error {
			mu.Lock()
			events = append(events, e)
			first := len(events) == 1
			mu.Unlock()
			if first {
				<-release
			}
			return nil
		}))
		done := make(chan fg.FollowResult, 2)
		for range 2 {
			go func() {
				res, err := g.Follow(ctx, 1, 2)
				if err != nil {
					t.Error(err)
				}
				done <- res
			}()
		}
		time.Sleep(20 * time.Millisecond) // both reach the graph; one waits on the other's hook
		// Another edge is not held up by the pending one.
		if res, err := g.Follow(ctx, 3, 4); err != nil || !res.Created {
			t.Fatal(res, err)
		}
		close(release)
		a, b := <-done, <-done
		if a.Created == b.Created {
			t.Fatalf("two concurrent follows of one edge: created %v and %v, want exactly one", a.Created, b.Created)
		}
		if !a.Since.Equal(b.Since) {
			t.Fatalf("since differs: %v and %v", a.Since, b.Since)
		}
		if len(events) != 2 { // 1→2 once, 3→4 once
			t.Fatalf("%d events, want 2: %+v", len(events), events)
		}
	})
	t.Run("PendingCountsTowardLimit", func(t *testing.T) {
		release := make(chan struct{})
		g := New(WithMaxFollowing(1), WithHook(func(_ context.Context, e fg.Event) error {
			if e.Target == 2 {
				<-release
			}
			return nil
		}))
		errc := make(chan error)
		go func() { _, err := g.Follow(ctx, 1, 2); errc <- err }()
		time.Sleep(20 * time.Millisecond)
		if _, err := g.Follow(ctx, 1, 3); fg.ErrorCode(err) != fg.EFollowingLimit {
			t.Fatalf("second follow while the first is pending: %v, want %s", err, fg.EFollowingLimit)
		}
		close(release)
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	})
	t.Run("VersionsGrow", func(t *testing.T) {
		var events []fg.Event
		g := New(WithClock(func() time.Time { return time.UnixMilli(1000) }), WithHook(func(_ context.Context, e fg.Event) error {
			events = append(events, e)
			return nil
		}))
		g.Follow(ctx, 1, 2)
		g.Unfollow(ctx, 1, 2)
		g.Follow(ctx, 1, 2)
		g.Follow(ctx, 1, 2) // no change, no event
		if len(events) != 3 {
			t.Fatalf("%d events, want 3", len(events))
		}
		for i := 1; i < len(events); i++ {
			if events[i].Version <= events[i-1].Version {
				t.Fatalf("version %d after %d", events[i].Version, events[i-1].Version)
			}
		}
	})
}

func TestChunks(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var s chunks[uint32]
	var ref []uint32
	less := func(x uint32) func(uint32) bool { return func(e uint32) bool { return e < x } }
	for i := range 50000 {
		x := uint32(rng.IntN(5000))
		if i > 25000 && rng.IntN(3) != 0 { // then shrink, so merges happen
			p := s.search(less(x))
			j, found := slices.BinarySearch(ref, x)
			if found != (!s.isEnd(p) && s.at(p) == x) {
				t.Fatalf("search %d: found %v in the model", x, found)
			}
			if found {
				s.remove(p)
				ref = slices.Delete(ref, j, j+1)
			}
			continue
		}
		j, found := slices.BinarySearch(ref, x)
		if found {
			continue
		}
		s.insert(s.search(less(x)), x)
		ref = slices.Insert(ref, j, x)
	}
	var got []uint32
	s.each(func(x uint32) bool { got = append(got, x); return true })
	if !slices.Equal(got, ref) || s.len() != len(ref) {
		t.Fatalf("chunks hold %d elements (len %d), model %d, or differ", len(got), s.len(), len(ref))
	}
	var down []uint32
	s.descend(s.end(), func(x uint32) bool { down = append(down, x); return true })
	slices.Reverse(down)
	if !slices.Equal(down, ref) {
		t.Fatal("descend differs from the model")
	}
	for c := range s.count() {
		if ch := s.chunk(c); len(ch) == 0 || len(ch) > chunkMax {
			t.Fatalf("chunk %d of %d elements", c, len(ch))
		}
	}
}

func TestStates(t *testing.T) {
	graphtest.RunStates(t, func(tb testing.TB, o graphtest.Options) fg.Graph {
		return New(WithClock(o.Now), WithMaxFollowing(o.MaxFollowing), WithHook(o.Hook), WithRefused(o.Refused))
	})
}
