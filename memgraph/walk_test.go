package memgraph

import (
	"cmp"
	"context"
	"iter"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	fg "github.com/followgraph/followgraph"
)

// walked returns what a walk of g yields: every user, and the events of
// both sides of each, sorted, checking that each side holds each edge
// once and only edges of its user.
func walked(tb testing.TB, g *Graph) (users []fg.UserID, out, in []fg.Event) {
	tb.Helper()
	seen := map[fg.UserID]bool{}
	for u := range g.Users() {
		if seen[u] {
			tb.Errorf("Users yielded %d twice", u)
		}
		seen[u] = true
		users = append(users, u)
		for _, side := range []struct {
			name   string
			seq    func(fg.UserID) iter.Seq[fg.Event]
			own    func(fg.Event) fg.UserID
			events *[]fg.Event
		}{
			{"OutEdges", g.OutEdges, func(e fg.Event) fg.UserID { return e.User }, &out},
			{"InEdges", g.InEdges, func(e fg.Event) fg.UserID { return e.Target }, &in},
		} {
			edges := map[[2]fg.UserID]bool{}
			for e := range side.seq(u) {
				if side.own(e) != u || edges[[2]fg.UserID{e.User, e.Target}] || e.Validate() != nil {
					tb.Errorf("%s(%d) yielded %+v: not its own, twice, or invalid", side.name, u, e)
				}
				edges[[2]fg.UserID{e.User, e.Target}] = true
				*side.events = append(*side.events, e)
			}
		}
	}
	slices.Sort(users)
	byEdge := func(a, b fg.Event) int {
		return cmp.Or(cmp.Compare(a.User, b.User), cmp.Compare(a.Target, b.Target))
	}
	slices.SortFunc(out, byEdge)
	slices.SortFunc(in, byEdge)
	return users, out, in
}

// lastEvents returns, for each edge of events, the event of its highest
// version, sorted by edge, and the users they name.
func lastEvents(events []fg.Event) ([]fg.UserID, []fg.Event) {
	last := map[[2]fg.UserID]fg.Event{}
	users := map[fg.UserID]bool{}
	for _, e := range events {
		k := [2]fg.UserID{e.User, e.Target}
		if l, ok := last[k]; !ok || e.Version > l.Version {
			last[k] = e
		}
		users[e.User], users[e.Target] = true, true
	}
	want := slices.SortedFunc(maps.Values(last), func(a, b fg.Event) int {
		return cmp.Or(cmp.Compare(a.User, b.User), cmp.Compare(a.Target, b.Target))
	})
	return slices.Sorted(maps.Keys(users)), want
}

// randomEvents returns follows and unfollows among a few users, several
// per edge, some in one millisecond (versions with a counter), in random
// order; user 1 has more followers than a chunk holds, and user 2 follows
// more, so that walks go past one chunk.
func randomEvents(seed uint64) []fg.Event {
	rng := rand.New(rand.NewPCG(seed, 1))
	base := fg.VersionAt(1_700_000_000_000)
	var events []fg.Event
	for i := range 3000 {
		u, t := fg.UserID(2+rng.IntN(60)), fg.UserID(1+rng.IntN(60))
		switch {
		case i < 1500:
			u, t = fg.UserID(100+i), 1 // user 1's followers, a few chunks
		case i < 2500:
			u, t = 2, fg.UserID(10000+i) // whom user 2 follows, a few chunks
		}
		if u == t {
			continue
		}
		op := fg.OpFollow
		if rng.IntN(3) == 0 {
			op = fg.OpUnfollow
		}
		v := base + fg.Version(rng.IntN(1000))<<fg.VersionCounterBits + fg.Version(rng.IntN(3))
		events = append(events, fg.NewEvent(u, t, op, v))
	}
	return events
}

func TestGraph_Walk(t *testing.T) {
	events := randomEvents(1)
	users, want := lastEvents(events)
	for _, build := range []struct {
		name string
		fill func(*Graph) error
	}{
		{"Apply", func(g *Graph) error { return g.Apply(context.Background(), events) }},
		{"Load", func(g *Graph) error { return g.Load(context.Background(), slices.Values(events)) }},
	} {
		t.Run(build.name, func(t *testing.T) {
			g := New()
			if err := build.fill(g); err != nil {
				t.Fatal(err)
			}
			gotUsers, out, in := walked(t, g)
			if !slices.Equal(gotUsers, users) {
				t.Errorf("Users() = %v, want %v", gotUsers, users)
			}
			if !slices.Equal(out, want) {
				t.Errorf("OutEdges of every user: %d events, want %d (the last of each edge)", len(out), len(want))
			}
			if !slices.Equal(in, want) {
				t.Errorf("InEdges of every user: %d events, want %d (the last of each edge)", len(in), len(want))
			}
			var in1, out2 int
			for e := range g.InEdges(1) {
				if e.Op == fg.OpFollow {
					in1++
				}
			}
			for e := range g.OutEdges(2) {
				if e.Op == fg.OpFollow {
					out2++
				}
			}
			if in1 <= chunkMax || out2 <= chunkMax {
				t.Errorf("user 1 has %d followers, user 2 follows %d: the test means them to span chunks", in1, out2)
			}

			// Changes after a walk show in the next: a new tombstone (which
			// makes the tombstone index stale), a follow over one, a new user.
			var live, dead fg.Event
			for _, e := range want {
				if e.Op == fg.OpFollow && live.Version == 0 {
					live = e
				}
				if e.Op == fg.OpUnfollow && dead.Version == 0 {
					dead = e
				}
			}
			ctx := context.Background()
			if ok, err := g.Unfollow(ctx, live.User, live.Target); err != nil || !ok {
				t.Fatal(ok, err)
			}
			if _, err := g.Follow(ctx, dead.User, dead.Target); err != nil {
				t.Fatal(err)
			}
			if _, err := g.Follow(ctx, 7000, 7001); err != nil {
				t.Fatal(err)
			}
			_, out, in = walked(t, g)
			state := func(events []fg.Event) map[[2]fg.UserID]fg.Op {
				m := map[[2]fg.UserID]fg.Op{}
				for _, e := range events {
					m[[2]fg.UserID{e.User, e.Target}] = e.Op
				}
				return m
			}
			for _, side := range []map[[2]fg.UserID]fg.Op{state(out), state(in)} {
				if side[[2]fg.UserID{live.User, live.Target}] != fg.OpUnfollow ||
					side[[2]fg.UserID{dead.User, dead.Target}] != fg.OpFollow ||
					side[[2]fg.UserID{7000, 7001}] != fg.OpFollow {
					t.Errorf("after the changes, a walk does not show them")
				}
			}
		})
	}
}

// TestGraph_WalkWhileWriting walks while another goroutine writes, for
// the race detector; the events must still be valid and their user's.
func TestGraph_WalkWhileWriting(t *testing.T) {
	g := New()
	if err := g.Apply(context.Background(), randomEvents(2)); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		rng := rand.New(rand.NewPCG(3, 3))
		for range 20000 {
			u, t := fg.UserID(1+rng.IntN(80)), fg.UserID(1+rng.IntN(80))
			if rng.IntN(2) == 0 {
				g.Follow(context.Background(), u, t)
			} else {
				g.Unfollow(context.Background(), u, t)
			}
		}
	}()
	for range 5 {
		for u := range g.Users() {
			for e := range g.OutEdges(u) {
				if e.User != u || e.Validate() != nil {
					t.Fatalf("OutEdges(%d) yielded %+v", u, e)
				}
			}
			for e := range g.InEdges(u) {
				if e.Target != u || e.Validate() != nil {
					t.Fatalf("InEdges(%d) yielded %+v", u, e)
				}
			}
		}
	}
	<-done
}
