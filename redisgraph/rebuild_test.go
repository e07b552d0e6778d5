package redisgraph

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/graphgen"
	"github.com/followgraph/followgraph/memgraph"
)

// The source of the Rebuild and Reconcile tests: a memgraph.Graph, as the
// operator commands load from the durable store and the log.
var _ Source = (*memgraph.Graph)(nil)

// sourceEpoch is where the source graphs' versions start: well in the
// past, so that live writes of the tests are newer.
var sourceEpoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()

// sourceGraph returns a memgraph holding a generated graph of about n
// edges, then changes: a third of the edges of every seventh user
// unfollowed (tombstones), some followed again, some in the same
// millisecond (versions with a counter), a user with more followers and
// one following more users than a chunk of calls holds, and an edge whose
// version is an hour ahead of now (its follower's clock must follow).
func sourceGraph(tb testing.TB, n int) *memgraph.Graph {
	tb.Helper()
	g := memgraph.New()
	cfg := graphgen.Default(n, 3)
	cfg.Start, cfg.End = sourceEpoch, sourceEpoch+int64(24*time.Hour/time.Millisecond)
	var events []fg.Event
	for e := range graphgen.Edges(cfg) {
		events = append(events, fg.NewEvent(e.Follower, e.Followee, fg.OpFollow, fg.VersionAt(e.Millis)))
	}
	rng := rand.New(rand.NewPCG(4, 4))
	later := fg.VersionAt(sourceEpoch + int64(48*time.Hour/time.Millisecond))
	for _, e := range slices.Clone(events) {
		if e.User%7 != 0 || rng.IntN(3) != 0 {
			continue
		}
		later += 1 << fg.VersionCounterBits
		events = append(events, fg.NewEvent(e.User, e.Target, fg.OpUnfollow, later))
		switch rng.IntN(4) {
		case 0: // followed again, in the next millisecond
			events = append(events, fg.NewEvent(e.User, e.Target, fg.OpFollow, later+1<<fg.VersionCounterBits))
		case 1: // followed again, in the same millisecond
			events = append(events, fg.NewEvent(e.User, e.Target, fg.OpFollow, later+1))
		}
	}
	for i := range 1300 {
		later++
		events = append(events,
			fg.NewEvent(fg.UserID(1_000_000+i), bigFollowed, fg.OpFollow, later),
			fg.NewEvent(bigFollower, fg.UserID(2_000_000+i), fg.OpFollow, later))
	}
	events = append(events, fg.NewEvent(bigFollower, bigFollowed, fg.OpFollow, aheadVersion))
	if err := g.Load(context.Background(), slices.Values(events)); err != nil {
		tb.Fatal(err)
	}
	return g
}

const (
	bigFollowed = fg.UserID(900_001) // followed by 1300
	bigFollower = fg.UserID(900_002) // follows 1301, one of them at aheadVersion
)

// aheadVersion is an hour ahead of the time the tests run.
var aheadVersion = fg.VersionAt(time.Now().Add(time.Hour).UnixMilli())

// touchSource records the users of src on g, whose keys are deleted when
// the test ends.
func touchSource(g *testGraph, src Source) {
	for u := range src.Users() {
		g.touch(u)
	}
}

// allEntries pages through a list with pages of the largest size.
func allEntries(tb testing.TB, get func(fg.PageRequest) (fg.Page, error)) []fg.Entry {
	tb.Helper()
	var es []fg.Entry
	req := fg.PageRequest{Limit: fg.MaxLimit}
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

// checkSame checks that got answers as want does, for each of users: both
// lists in full and the counts.
func checkSame(tb testing.TB, want, got fg.Graph, users []fg.UserID) {
	tb.Helper()
	ctx := tb.Context()
	for chunk := range slices.Chunk(users, fg.MaxCountIDs) {
		wc, err := want.Counts(ctx, chunk)
		if err != nil {
			tb.Fatal(err)
		}
		gc, err := got.Counts(ctx, chunk)
		if err != nil {
			tb.Fatal(err)
		}
		for i := range wc {
			if wc[i] != gc[i] {
				tb.Errorf("Counts(%d) = %+v, want %+v", chunk[i], gc[i], wc[i])
			}
		}
	}
	errors := 0
	for _, u := range users {
		for _, l := range []struct {
			name      string
			want, got func(fg.PageRequest) (fg.Page, error)
		}{
			{"Following",
				func(r fg.PageRequest) (fg.Page, error) { return want.Following(ctx, u, r) },
				func(r fg.PageRequest) (fg.Page, error) { return got.Following(ctx, u, r) }},
			{"Followers",
				func(r fg.PageRequest) (fg.Page, error) { return want.Followers(ctx, u, r) },
				func(r fg.PageRequest) (fg.Page, error) { return got.Followers(ctx, u, r) }},
		} {
			w, g := allEntries(tb, l.want), allEntries(tb, l.got)
			if !slices.EqualFunc(w, g, func(a, b fg.Entry) bool { return a.ID == b.ID && a.Since.Equal(b.Since) }) {
				tb.Errorf("%s(%d): %d entries, want %d the same as the source's", l.name, u, len(g), len(w))
				if errors++; errors > 10 {
					tb.FailNow()
				}
			}
		}
	}
}

// TestRebuild rebuilds a generated graph with tombstones into an empty
// prefix, and checks that Redis then answers as the source does, that the
// tombstones and clocks came along, and that a second Rebuild changes
// nothing.
func TestRebuild(t *testing.T) {
	src := sourceGraph(t, 20_000)
	users := slices.Collect(src.Users())
	for _, m := range modes {
		t.Run(m.Name, func(t *testing.T) {
			g := newTestGraph(t, m.Client(t))
			touchSource(g, src)
			ctx := t.Context()
			st, err := g.Rebuild(ctx, src, RebuildOptions{Batch: 100})
			if err != nil {
				t.Fatal(err)
			}
			var edges int64
			for _, u := range users {
				for range src.OutEdges(u) {
					edges++
				}
			}
			if st.Users != int64(len(users)) || st.Edges != edges || st.Written != 2*edges {
				t.Errorf("Rebuild = %+v, want %d users, %d edges, each side written", st, len(users), edges)
			}
			t.Logf("%+v", st)
			checkSame(t, src, g, users)

			st, err = g.Rebuild(ctx, src, RebuildOptions{})
			if err != nil || st.Written != 0 {
				t.Errorf("Rebuild again = %+v, %v; want nothing written", st, err)
			}

			// The tombstones: a replayed older follow changes neither side.
			var tomb fg.Event
			for _, u := range users {
				for e := range src.OutEdges(u) {
					if e.Op == fg.OpUnfollow && tomb.Version == 0 {
						tomb = e
					}
				}
			}
			if err := g.Apply(ctx, []fg.Event{fg.NewEvent(tomb.User, tomb.Target, fg.OpFollow, tomb.Version-1)}); err != nil {
				t.Fatal(err)
			}
			checkSame(t, src, g, []fg.UserID{tomb.User, tomb.Target})

			// The clock: a change after the rebuild gets a version above
			// the source's edge of the future.
			if ok, err := g.Unfollow(ctx, bigFollower, bigFollowed); err != nil || !ok {
				t.Fatalf("Unfollow = %v, %v", ok, err)
			}
			res, err := g.Follow(ctx, bigFollower, bigFollowed)
			if err != nil {
				t.Fatal(err)
			}
			if res.Since.Before(aheadVersion.Time()) {
				t.Errorf("Follow after the rebuild: since %v, want no earlier than the source's version's time %v", res.Since, aheadVersion.Time())
			}
		})
	}
}

// TestRebuildKeepsNewerWrites rebuilds over a Redis that the service
// keeps writing, before and during the rebuild: the newer live changes
// win over the source's older states, on both sides, with the counters
// matching the lists.
func TestRebuildKeepsNewerWrites(t *testing.T) {
	src := sourceGraph(t, 5_000)
	users := slices.Collect(src.Users())
	for _, m := range modes {
		t.Run(m.Name, func(t *testing.T) {
			g := newTestGraph(t, m.Client(t))
			touchSource(g, src)
			ctx := t.Context()
			// The live writes: the edges of a few users, live or not in the
			// source, followed and unfollowed at random by the service.
			var edges []edgeKey
			for _, u := range users[:40] {
				for e := range src.OutEdges(u) {
					edges = append(edges, edgeKey{e.User, e.Target})
				}
			}
			edges = append(edges, edgeKey{users[0], 77_777_777}) // unknown to the source
			last := make(map[edgeKey]int64)                      // of the last change made: the follow time, or -1
			var mu sync.Mutex
			write := func(rng *rand.Rand) {
				e := edges[rng.IntN(len(edges))]
				mu.Lock() // serialized per test, so that the last change of each edge is known
				defer mu.Unlock()
				if rng.IntN(2) == 0 {
					res, err := g.Follow(ctx, e.user, e.target)
					if err != nil {
						t.Error(err)
					} else if res.Created {
						last[e] = res.Since.UnixMilli()
					}
				} else {
					removed, err := g.Unfollow(ctx, e.user, e.target)
					if err != nil {
						t.Error(err)
					} else if removed {
						last[e] = -1
					}
				}
			}
			rng := rand.New(rand.NewPCG(5, 5))
			for range 300 { // before the rebuild: Redis holds newer states of these
				write(rng)
			}
			stop, stopped := make(chan struct{}), make(chan struct{})
			go func() { // and during it
				defer close(stopped)
				rng := rand.New(rand.NewPCG(6, 6))
				for {
					select {
					case <-stop:
						return
					default:
						write(rng)
					}
				}
			}()
			_, err := g.Rebuild(ctx, src, RebuildOptions{Batch: 50, Concurrency: 2})
			close(stop)
			<-stopped
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d edges written by the service", len(last))

			// Expected: the source, with the last live change of each
			// edge the service wrote over it. Those are newer than the
			// source's (their times are now); an unfollow's version is
			// unknown here, so it is given one above them all.
			want := memgraph.New()
			var events []fg.Event
			for _, u := range users {
				events = slices.AppendSeq(events, src.OutEdges(u))
			}
			unfollowed := fg.VersionAt(time.Now().Add(time.Hour).UnixMilli())
			for e, ms := range last {
				if ms < 0 {
					events = append(events, fg.NewEvent(e.user, e.target, fg.OpUnfollow, unfollowed))
				} else {
					events = append(events, fg.NewEvent(e.user, e.target, fg.OpFollow, fg.VersionAt(ms)))
				}
			}
			if err := want.Load(ctx, slices.Values(events)); err != nil {
				t.Fatal(err)
			}
			checkSame(t, want, g, append(slices.Clone(users), 77_777_777))
		})
	}
}

// TestRebuildBelowHorizon: a rebuild from a source older than Redis's
// purge (a store restored from a backup) does not bring back an edge
// whose tombstone Redis removed: the source's live edge, below both
// users' tombstone horizons and with no record left in Redis, is refused
// on each side and counted; an edge Redis keeps a record of is rebuilt as
// before.
func TestRebuildBelowHorizon(t *testing.T) {
	for _, m := range modes {
		t.Run(m.Name, func(t *testing.T) {
			g := newTestGraph(t, m.Client(t))
			g.touch(1, 2, 3)
			ctx := t.Context()
			followed, err := g.Follow(ctx, 1, 2)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := g.Unfollow(ctx, 1, 2); err != nil {
				t.Fatal(err)
			}
			if _, err := g.Follow(ctx, 1, 3); err != nil {
				t.Fatal(err)
			}
			bound := fg.VersionAt(time.Now().Add(time.Second).UnixMilli())
			for more := true; more; {
				if _, more, err = g.PurgeTombstones(ctx, bound, 100); err != nil {
					t.Fatal(err)
				}
			}
			old := memgraph.New() // the source as it was before the unfollow
			if err := old.Load(ctx, slices.Values([]fg.Event{
				fg.NewEvent(1, 2, fg.OpFollow, fg.VersionAt(followed.Since.UnixMilli())),
				fg.NewEvent(1, 3, fg.OpFollow, fg.VersionAt(followed.Since.UnixMilli())),
			})); err != nil {
				t.Fatal(err)
			}
			st, err := g.Rebuild(ctx, old, RebuildOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if st.Refused != 2 {
				t.Errorf("Rebuild = %+v, want the two sides of 1→2 refused", st)
			}
			if e, err := g.IsFollowing(ctx, 1, 2); err != nil || e.Following {
				t.Errorf("after the rebuild, IsFollowing(1, 2) = %+v, %v; want off", e, err)
			}
			if e, err := g.IsFollowing(ctx, 1, 3); err != nil || !e.Following {
				t.Errorf("after the rebuild, IsFollowing(1, 3) = %+v, %v; want on", e, err)
			}
			if c, err := g.Counts(ctx, []fg.UserID{2}); err != nil || len(c) != 1 || c[0].FollowerCount != 0 {
				t.Errorf("after the rebuild, Counts(2) = %+v, %v; want no follower", c, err)
			}
		})
	}
}
