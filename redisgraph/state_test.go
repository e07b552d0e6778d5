package redisgraph

import (
	"context"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/graphtest"
	"github.com/followgraph/followgraph/memgraph"
	"github.com/followgraph/followgraph/redisgraph/internal/jobs"
	"github.com/followgraph/followgraph/redisgraph/internal/layout"
	"github.com/followgraph/followgraph/redisgraph/internal/redistest"
	"github.com/followgraph/followgraph/redisgraph/internal/wire"
	"github.com/followgraph/followgraph/redisgraph/outbox"
)

// TestArchive: the archive step hides every follow, block and request of
// user 1, both ways, on both sides, in both counts and flags, and shows
// them again as they were, versions (with and without a counter) and
// tombstones of its own included; the edges of user 2 with the same
// counterparts never change, and each step run a second time changes
// nothing. On a Cluster it takes two steps a batch, the counterparts'
// sides first, to the same ends.
func TestArchive(t *testing.T) {
	for _, m := range modes {
		t.Run(m.Name, func(t *testing.T) { testArchive(t, newTestGraph(t, m.Client(t))) })
	}
}

// TestArchiveTouchesFirst: a read of this Graph that sees a job's batch
// in Redis (State's Pending falling to 0) before the batch's reply arrives
// must not answer a counters hash cached from before the batch: the
// batch's users are touched before it is sent. In the moment between its
// reply and its return, every user of the batch is touched and Counts
// of the counterparts answers what Redis holds. It failed when the users were touched only
// once the batch returned.
func TestArchiveTouchesFirst(t *testing.T) {
	for _, m := range modes {
		t.Run(m.Name, func(t *testing.T) {
			ctx := context.Background()
			var g *testGraph
			batches := 0
			g = newTestGraph(t, m.Client(t), withArchiveReplied(func(user fg.UserID, ms []string) {
				batches++
				ids := []fg.UserID{user}
				for _, m := range ms {
					c, _ := wire.MemberID(m)
					ids = append(ids, c)
				}
				for _, id := range ids {
					if g.known.Get(id) != math.MaxInt64 {
						t.Errorf("user %d of a batch is not touched when the batch's reply arrives", id)
					}
				}
				// The counterparts' (user 1, suspended, counts nothing).
				got, err := g.Counts(ctx, ids[1:])
				if err != nil {
					t.Fatal(err)
				}
				for i, id := range ids[1:] {
					vals, err := g.c.Do(ctx, g.c.B().Hmget().Key(g.ks.User(id, layout.Counters)).Field("nout", "nin").Build()).ToArray()
					if err != nil {
						t.Fatal(err)
					}
					out, _ := vals[0].AsInt64()
					in, _ := vals[1].AsInt64()
					if got[i].FollowingCount != out || got[i].FollowerCount != in {
						t.Errorf("Counts(%d) in the batch's reply = %d following, %d followers; Redis holds %d, %d", id, got[i].FollowingCount, got[i].FollowerCount, out, in)
					}
				}
			}))
			for _, e := range [][2]fg.UserID{{1, 2}, {3, 1}} {
				if _, err := g.Follow(ctx, e[0], e[1]); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := g.Counts(ctx, []fg.UserID{1, 2, 3}); err != nil { // cached
				t.Fatal(err)
			}
			if _, err := g.SetState(ctx, 1, fg.StateSuspended); err != nil {
				t.Fatal(err)
			}
			if n, err := g.jobs.Archive(ctx, 1, layout.StepHide); err != nil || n != 2 {
				t.Fatalf("hide = %d, %v; want 2", n, err)
			}
			if batches == 0 {
				t.Fatal("no batch ran")
			}
		})
	}
}

func testArchive(t *testing.T, g *testGraph) {
	ctx := context.Background()
	const first = 1000
	users, edges := archiveFixture(t, g, first)
	before := archiveSnapshot(t, g, users)

	if _, err := g.jobs.Archive(ctx, 1, layout.StepHide); err != jobs.ErrStateChanged {
		t.Fatalf("hide of an active user: %v, want %v", err, jobs.ErrStateChanged)
	}
	if _, err := g.SetState(ctx, 1, fg.StateSuspended); err != nil {
		t.Fatal(err)
	}
	for run, want := range []int64{edges, 0} {
		got, err := g.jobs.Archive(ctx, 1, layout.StepHide)
		if err != nil || got != want {
			t.Fatalf("hide, run %d = %d, %v; want %d", run+1, got, err, want)
		}
	}
	checkArchived(t, archiveSnapshot(t, g, users), before, 1)

	// A batch naming a follower twice, as an HSCAN may, shows it once.
	twice := []string{wire.Member(first), wire.Member(first)}
	if _, err := g.jobs.ArchiveBatch(ctx, 1, jobs.Sides[0], layout.StepShow, twice); err != jobs.ErrStateChanged {
		t.Fatalf("show of a suspended user: %v, want %v", err, jobs.ErrStateChanged)
	}
	if _, err := g.SetState(ctx, 1, fg.StateActive); err != nil {
		t.Fatal(err)
	}
	if got, err := g.jobs.ArchiveBatch(ctx, 1, jobs.Sides[0], layout.StepShow, twice); err != nil || got != 1 {
		t.Fatalf("show of a batch naming %d twice = %d, %v; want 1", first, got, err)
	}
	for run, want := range []int64{edges - 1, 0} {
		got, err := g.jobs.Archive(ctx, 1, layout.StepShow)
		if err != nil || got != want {
			t.Fatalf("show, run %d = %d, %v; want %d", run+1, got, err, want)
		}
	}
	after := archiveSnapshot(t, g, users)
	for _, u := range users {
		if !reflect.DeepEqual(after[u], before[u]) {
			t.Errorf("user %d after the restore:\n%+v\nwas\n%+v", u, after[u], before[u])
		}
	}
	checkNoHiddenEdges(t, g, users...)
	// A follow over one of the tombstones the steps kept is still made.
	if r, err := g.Follow(ctx, 1, 5000); err != nil || !r.Created {
		t.Errorf("Follow(1, 5000) over its tombstone = %+v, %v", r, err)
	}
}

// archiveFixture applies to g the edges of TestArchive: user 1 followed by
// 300 users from first on (a third at versions whose counter is not 0),
// following 100 of them, and 10 blocks and requests each way; user 2 has
// the same with the same counterparts but for the follows out; and user 1
// has tombstones of its own. It returns the users and user 1's edges.
func archiveFixture(t *testing.T, g *testGraph, first fg.UserID) ([]fg.UserID, int64) {
	t.Helper()
	ctx := context.Background()
	const n = 300
	base := int64(1_700_000_000_000)
	var events []fg.Event
	for i := range n {
		c := first + fg.UserID(i)
		v := fg.VersionAt(base + int64(i))
		if i%3 == 0 {
			v += fg.Version(i + 1) // a version whose counter is not zero
		}
		events = append(events, fg.NewEvent(c, 1, fg.OpFollow, v), fg.NewEvent(c, 2, fg.OpFollow, v+1))
		if i < 100 {
			events = append(events, fg.NewEvent(1, c, fg.OpFollow, fg.VersionAt(base+int64(n+i))))
		}
	}
	// Ten of each other kind, each way; user 2 has the same with the
	// same counterparts.
	links := 0
	for i := range 10 {
		v := fg.VersionAt(base + int64(2000+i))
		for _, u := range []fg.UserID{1, 2} {
			events = append(events,
				fg.NewEvent(u, fg.UserID(6000+i), fg.OpBlock, v+fg.Version(i%2)),
				fg.NewEvent(fg.UserID(6100+i), u, fg.OpBlock, v),
				fg.NewEvent(u, fg.UserID(7000+i), fg.OpRequest, v),
				fg.NewEvent(fg.UserID(7100+i), u, fg.OpRequest, v+fg.Version(i%2)))
		}
		links += 4
	}
	// Tombstones of user 1's own, which the step must leave as they are.
	for i := range 5 {
		c := fg.UserID(5000 + i)
		events = append(events, fg.NewEvent(1, c, fg.OpFollow, fg.VersionAt(base+int64(i))),
			fg.NewEvent(1, c, fg.OpUnfollow, fg.VersionAt(base+int64(1000+i))),
			fg.NewEvent(1, c, fg.OpBlock, fg.VersionAt(base+int64(1100+i))),
			fg.NewEvent(1, c, fg.OpUnblock, fg.VersionAt(base+int64(1200+i))))
	}
	if err := g.Apply(ctx, events); err != nil {
		t.Fatal(err)
	}
	users := []fg.UserID{1, 2}
	for i := range n {
		users = append(users, first+fg.UserID(i))
	}
	for i := range 10 {
		users = append(users, fg.UserID(6000+i), fg.UserID(6100+i), fg.UserID(7000+i), fg.UserID(7100+i))
	}
	for i := range 5 {
		users = append(users, fg.UserID(5000+i))
	}
	return users, int64(n + 100 + links)
}

// checkArchived checks a snapshot of users taken once user's edges are
// hidden or dropped: every list has its count, user lists nobody and is
// listed by nobody, in no flags either, and user 2 is as it was before.
func checkArchived(t *testing.T, hidden, before map[fg.UserID]archiveView, user fg.UserID) {
	t.Helper()
	for u, s := range hidden {
		for i, k := range archiveKinds {
			if s.counts[i] != int64(len(s.sets[i])) {
				t.Errorf("user %d after the hide: %s of %d members, its counter %d", u, k.z, len(s.sets[i]), s.counts[i])
			}
			if u == user && len(s.sets[i]) != 0 {
				t.Errorf("user %d after the hide: %s of %d members", user, k.z, len(s.sets[i]))
			}
			if slices.ContainsFunc(s.sets[i], func(z rueidis.ZScore) bool { return z.Member == wire.Member(user) }) {
				t.Errorf("user %d lists user %d in %s after the hide", u, user, k.z)
			}
		}
		if len(s.flags) != 0 && u == user || slices.ContainsFunc(s.flags, func(z rueidis.ZScore) bool { return z.Member == wire.Member(user) }) {
			t.Errorf("user %d after the hide has flags of user %d (user %d: any): %v", u, user, user, s.flags)
		}
		if u == 2 && !reflect.DeepEqual(s, before[u]) {
			t.Errorf("user 2 changed by user %d's hide:\n%+v\nwas\n%+v", user, s, before[u])
		}
	}
}

// archiveKinds are the sides the archive step changes, by their keys'
// kinds and counters.
var archiveKinds = func() []struct {
	z, vh   layout.Key
	counter string
} {
	var out []struct {
		z, vh   layout.Key
		counter string
	}
	for _, s := range jobs.Sides {
		out = append(out, struct {
			z, vh   layout.Key
			counter string
		}{s.Set, s.Versions, s.Counter})
	}
	return out
}()

// archiveView is what of a user's edges the archive step changes: the
// sorted sets with their scores, the versions hashes and the counters of
// archiveKinds, and the flags set.
type archiveView struct {
	sets     [][]rueidis.ZScore
	versions []map[string]string
	counts   []int64
	flags    []rueidis.ZScore
}

func archiveSnapshot(t *testing.T, g *testGraph, users []fg.UserID) map[fg.UserID]archiveView {
	t.Helper()
	ctx := context.Background()
	views := make(map[fg.UserID]archiveView, len(users))
	zrange := func(key string) rueidis.Completed {
		return g.c.B().Zrange().Key(key).Min("0").Max("-1").Withscores().Build()
	}
	for _, u := range users {
		var cmds rueidis.Commands
		counters := make([]string, len(archiveKinds))
		for i, k := range archiveKinds {
			cmds = append(cmds, zrange(g.ks.User(u, k.z)), g.c.B().Hgetall().Key(g.ks.User(u, k.vh)).Build())
			counters[i] = k.counter
		}
		cmds = append(cmds, g.c.B().Hmget().Key(g.ks.User(u, layout.Counters)).Field(counters...).Build(), zrange(g.ks.User(u, layout.Flags)))
		res := g.c.DoMulti(ctx, cmds...)
		var v archiveView
		for i := range archiveKinds {
			zs, err := res[2*i].AsZScores()
			if err != nil {
				t.Fatal(err)
			}
			vs, err := res[2*i+1].AsStrMap()
			if err != nil {
				t.Fatal(err)
			}
			v.sets, v.versions = append(v.sets, zs), append(v.versions, vs)
		}
		hs, err := res[len(res)-2].ToArray()
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range hs {
			c, _ := h.ToString()
			n, _ := strconv.ParseInt(c, 10, 64)
			v.counts = append(v.counts, n)
		}
		if v.flags, err = res[len(res)-1].AsZScores(); err != nil {
			t.Fatal(err)
		}
		views[u] = v
	}
	return views
}

// TestSetState_Writes: a state set by SetState holds at once, in State, Counts and the writes: a
// user who is not active writes nothing (user_inactive), is followed by
// nobody (target_inactive), and a deleted one's state is final and it is
// blocked or muted by nobody; its event reaches the hook and decodes from
// the outbox as it went in. A follow hidden by the archive step is ended
// by the follower as stored: the restore does not bring it back, and no
// count moves twice.
func TestSetState_Writes(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	var hooked []fg.Event
	g := newTestGraph(t, redistest.Standalone(t), WithHook(func(_ context.Context, e fg.Event) error {
		mu.Lock()
		defer mu.Unlock()
		hooked = append(hooked, e)
		return nil
	}))
	code := fg.ErrorCode
	for _, f := range [][2]fg.UserID{{1, 2}, {3, 1}, {4, 1}} {
		if _, err := g.Follow(ctx, f[0], f[1]); err != nil {
			t.Fatal(err)
		}
	}
	g.touch(1, 6)
	before := time.Now().Add(-time.Second)
	st, err := g.SetState(ctx, 1, fg.StateDeactivated)
	if err != nil || st.State != fg.StateDeactivated || st.Since.Before(before) || st.Pending != 3 {
		t.Fatalf("SetState(1, deactivated) = %+v, %v; want deactivated since now, 3 edges pending", st, err)
	}
	if got, err := g.State(ctx, 1); err != nil || got != st {
		t.Errorf("State(1) = %+v, %v; want %+v", got, err, st)
	}
	if again, err := g.SetState(ctx, 1, fg.StateDeactivated); err != nil || again != st {
		t.Errorf("SetState(1, deactivated) again = %+v, %v; want %+v, unchanged", again, err, st)
	}
	if c, err := g.Counts(ctx, []fg.UserID{1}); err != nil || c[0] != (fg.Counts{ID: 1, State: fg.StateDeactivated}) {
		t.Errorf("Counts(1) = %+v, %v; want no edges, deactivated", c, err)
	}
	for _, w := range []struct {
		name string
		err  error
		want string
	}{
		{"Follow(1, 5)", second(g.Follow(ctx, 1, 5)), fg.EUserInactive},
		{"Follow(1, 2) again", second(g.Follow(ctx, 1, 2)), fg.EUserInactive},
		{"Unfollow(1, 2)", second(g.Unfollow(ctx, 1, 2)), fg.EUserInactive},
		{"Block(1, 5)", second(g.Block(ctx, 1, 5)), fg.EUserInactive},
		{"Mute(1, 5)", second(g.Mute(ctx, 1, 5, 0)), fg.EUserInactive},
		{"SetPrivate(1)", second(g.SetPrivate(ctx, 1, true)), fg.EUserInactive},
		{"Follow(5, 1)", second(g.Follow(ctx, 5, 1)), fg.ETargetInactive},
		{"Follow(3, 1), already following", second(g.Follow(ctx, 3, 1)), fg.ETargetInactive},
	} {
		if fg.ErrorCode(w.err) != w.want {
			t.Errorf("%s = %v, want %s", w.name, w.err, w.want)
		}
	}

	// The archive step hides 1's follows; 3 ends its follow of 1 as stored.
	if n, err := g.jobs.Archive(ctx, 1, layout.StepHide); err != nil || n != 3 {
		t.Fatalf("hide = %d, %v; want 3", n, err)
	}
	if removed, err := g.Unfollow(ctx, 3, 1); err != nil || !removed {
		t.Fatalf("Unfollow(3, 1) of a hidden follow = %v, %v; want removed", removed, err)
	}
	if c, _ := g.Counts(ctx, []fg.UserID{3}); c[0].FollowingCount != 0 {
		t.Errorf("Counts(3) = %+v after ending its hidden follow: counted twice", c[0])
	}
	if st, err := g.SetState(ctx, 1, fg.StateActive); err != nil || st.State != fg.StateActive || st.Pending != 2 {
		t.Fatalf("SetState(1, active) = %+v, %v; want 2 edges pending (3's follow ended)", st, err)
	}
	if n, err := g.jobs.Archive(ctx, 1, layout.StepShow); err != nil || n != 2 {
		t.Fatalf("show = %d, %v; want 2 (not 3's, ended)", n, err)
	}
	if e, err := g.IsFollowing(ctx, 3, 1); err != nil || e.Following {
		t.Errorf("IsFollowing(3, 1) after the restore = %+v, %v: the ended follow came back", e, err)
	}
	c, _ := g.Counts(ctx, []fg.UserID{1, 3, 4})
	if c[0].FollowerCount != 1 || c[0].FollowingCount != 1 || c[1].FollowingCount != 0 || c[2].FollowingCount != 1 {
		t.Errorf("Counts(1, 3, 4) after the restore = %+v", c)
	}
	if _, err := g.Follow(ctx, 1, 5); err != nil {
		t.Errorf("Follow(1, 5) by 1, active again: %v", err)
	}

	// Deleted is final, and nobody blocks or mutes a deleted user.
	if _, err := g.SetState(ctx, 6, fg.StateDeleted); err != nil {
		t.Fatal(err)
	}
	for _, w := range []struct {
		name string
		err  error
	}{
		{"SetState(6, active)", second(g.SetState(ctx, 6, fg.StateActive))},
		{"Block(7, 6)", second(g.Block(ctx, 7, 6))},
		{"Mute(7, 6)", second(g.Mute(ctx, 7, 6, 0))},
		{"Follow(7, 6)", second(g.Follow(ctx, 7, 6))},
	} {
		if code(w.err) != fg.ETargetInactive {
			t.Errorf("%s = %v, want target_inactive", w.name, w.err)
		}
	}

	// Each change of state, once, to the hook, and as the outbox has it.
	mu.Lock()
	var states []fg.Event
	for _, e := range hooked {
		if e.Op == fg.OpState {
			states = append(states, e)
		}
	}
	mu.Unlock()
	want := []fg.State{fg.StateDeactivated, fg.StateActive, fg.StateDeleted}
	if len(states) != len(want) {
		t.Fatalf("the hook took %d state events, want %d: %+v", len(states), len(want), states)
	}
	for i, e := range states {
		if e.State != want[i] || e.Validate() != nil {
			t.Errorf("state event %d = %+v, want %s", i, e, want[i])
		}
		f := map[string]string{"u": e.User.String(), "t": "0", "op": "state", "state": e.State.String(), "v": wire.VersionHex(e.Version)}
		if d, err := outbox.Decode(f); err != nil || !reflect.DeepEqual(d, e) {
			t.Errorf("outbox.Decode(%v) = %+v, %v; want %+v", f, d, err, e)
		}
	}
}

// second returns the error of a call's two results.
func second[T any](_ T, err error) error { return err }

// TestSetState_Pairs: an edge turned on with a hidden user is hidden at
// once (a block of one, an approval of its request), and an edge between
// two hidden users comes back with the second of them; one with a deleted
// user is ended on both sides, by the deleted user's drop or by the
// other's restore, whichever comes first.
func TestSetState_Pairs(t *testing.T) {
	ctx := context.Background()
	g := newTestGraph(t, redistest.Standalone(t))
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	job := func(u fg.UserID, s fg.State, steps ...string) {
		t.Helper()
		_, err := g.SetState(ctx, u, s)
		must(err)
		for _, step := range steps {
			_, err := g.jobs.Archive(ctx, u, step)
			must(err)
		}
	}
	_, err := g.SetPrivate(ctx, 8, true)
	must(err)
	for _, f := range [][2]fg.UserID{{1, 8}, {9, 1}, {11, 12}, {13, 14}} {
		_, err := g.Follow(ctx, f[0], f[1])
		must(err)
	}
	g.touch(1, 9, 11, 12, 13, 14)
	job(1, fg.StateDeactivated, layout.StepHide) // 1's request to 8 and 9's follow hidden
	job(9, fg.StateSuspended, layout.StepHide)   // nothing left of 9's follow of 1 to hide

	_, err = g.Block(ctx, 5, 1)
	must(err)
	if r, err := g.Approve(ctx, 8, 1); err != nil || !r.Created {
		t.Fatalf("Approve(8, 1) of a hidden request = %+v, %v", r, err)
	}
	rel, err := g.Relations(ctx, 5, []fg.UserID{1})
	must(err)
	c, err := g.Counts(ctx, []fg.UserID{8})
	must(err)
	if rel[0].Blocking || c[0].FollowerCount != 0 || len(linksList(t, g, fg.ListBlocks, 5)) != 0 {
		t.Errorf("while 1 is hidden: Relations(5, [1]) = %+v, Counts(8) = %+v, 5's blocks %v: want no block shown, no follower",
			rel[0], c[0], linksList(t, g, fg.ListBlocks, 5))
	}

	job(1, fg.StateActive, layout.StepShow)
	rel, err = g.Relations(ctx, 5, []fg.UserID{1})
	must(err)
	c, err = g.Counts(ctx, []fg.UserID{1, 8})
	must(err)
	if !rel[0].Blocking || c[0].FollowingCount != 1 || c[1].FollowerCount != 1 || c[0].FollowerCount != 0 {
		t.Errorf("1 active again: Relations(5, [1]) = %+v, Counts(1, 8) = %+v; want the block, 1 → 8, and not 9 → 1 (9 is hidden)", rel[0], c)
	}
	job(9, fg.StateActive, layout.StepShow)
	if e, err := g.IsFollowing(ctx, 9, 1); err != nil || !e.Following {
		t.Errorf("IsFollowing(9, 1) with both active again = %+v, %v", e, err)
	}

	// 11 hidden, 12 deleted: 11's restore ends the follow. 13 hidden, 14
	// deleted: 14's drop does.
	job(11, fg.StateDeactivated, layout.StepHide)
	job(12, fg.StateDeleted)
	job(11, fg.StateActive, layout.StepShow)
	job(13, fg.StateDeactivated, layout.StepHide)
	job(14, fg.StateDeleted, layout.StepHide, layout.StepDrop)
	job(13, fg.StateActive, layout.StepShow)
	c, err = g.Counts(ctx, []fg.UserID{11, 13})
	must(err)
	for i, f := range [][2]fg.UserID{{11, 12}, {13, 14}} {
		if e, err := g.IsFollowing(ctx, f[0], f[1]); err != nil || e.Following || c[i].FollowingCount != 0 {
			t.Errorf("IsFollowing(%d, %d) of a deleted user = %+v, %v; Counts = %+v", f[0], f[1], e, err, c[i])
		}
	}
	checkNoHiddenEdges(t, g, 1, 5, 8, 9, 11, 12, 13, 14)
}

// checkNoHiddenEdges checks that no versions hash of users keeps a hidden
// edge of the archive step, and that their counts of hidden edges (nh)
// say none.
func checkNoHiddenEdges(t *testing.T, g *testGraph, users ...fg.UserID) {
	t.Helper()
	for _, u := range users {
		if hidden, nh := hiddenEdgesOf(t, g, u); hidden != 0 || nh != 0 {
			t.Errorf("user %d keeps %d hidden edges, and counts %d", u, hidden, nh)
		}
	}
}

// checkHiddenCounted checks that user's count of its hidden edges (h's
// nh) is the number of hidden versions in its versions hashes.
func checkHiddenCounted(t *testing.T, g *testGraph, user fg.UserID) {
	t.Helper()
	if hidden, nh := hiddenEdgesOf(t, g, user); nh != hidden {
		t.Errorf("user %d counts %d hidden edges, has %d", user, nh, hidden)
	}
}

// hiddenEdgesOf returns how many hidden edges of the archive step user's
// versions hashes hold, and its count of them (h's nh).
func hiddenEdgesOf(t *testing.T, g *testGraph, user fg.UserID) (hidden, nh int64) {
	t.Helper()
	ctx := context.Background()
	for _, k := range archiveKinds {
		vs, err := g.c.Do(ctx, g.c.B().Hvals().Key(g.ks.User(user, k.vh)).Build()).AsStrSlice()
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range vs {
			if strings.HasPrefix(v, "h") {
				hidden++
			}
		}
	}
	nh, err := g.c.Do(ctx, g.c.B().Hget().Key(g.ks.User(user, layout.Counters)).Field("nh").Build()).AsInt64()
	if err != nil && !rueidis.IsRedisNil(err) {
		t.Fatal(err)
	}
	return hidden, nh
}

// linksList returns the ids of user's list (one page).
func linksList(t *testing.T, g *testGraph, list string, user fg.UserID) []fg.UserID {
	t.Helper()
	p, err := g.Links(context.Background(), list, user, fg.PageRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []fg.UserID
	for _, e := range p.Entries {
		ids = append(ids, e.ID)
	}
	return ids
}

// TestRunJobs: the runner takes a user out of the jobs set once its job
// is done, hides and restores every edge kind of the archive step at
// its rate, resumes a job stopped midway (its runner cancelled) where the
// hidden edges say, and a state flipped back and forth while others follow and
// unfollow the user ends with every count equal to its list and every
// follow on both sides.
func TestRunJobs(t *testing.T) {
	ctx := context.Background()
	g := newTestGraph(t, redistest.Standalone(t))
	const followers = 400
	var events []fg.Event
	base := fg.VersionAt(1_700_000_000_000)
	for i := range followers {
		c := fg.UserID(1000 + i)
		events = append(events, fg.NewEvent(c, 1, fg.OpFollow, base+fg.Version(i)<<20))
		if i < 50 {
			events = append(events, fg.NewEvent(1, c, fg.OpFollow, base+fg.Version(i)<<20+1),
				fg.NewEvent(fg.UserID(3000+i), 1, fg.OpBlock, base+fg.Version(i)<<20))
		}
	}
	if err := g.Apply(ctx, events); err != nil {
		t.Fatal(err)
	}
	users := []fg.UserID{1}
	for i := range followers {
		users = append(users, fg.UserID(1000+i))
	}
	for i := range 50 {
		users = append(users, fg.UserID(3000+i))
	}
	before := archiveSnapshot(t, g, users)
	edges := int64(followers + 100)

	run := func(rate int) (stop func()) {
		ctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- g.RunJobs(ctx, rate) }()
		return func() {
			cancel()
			if err := <-done; err != context.Canceled {
				t.Errorf("RunJobs = %v, want %v", err, context.Canceled)
			}
		}
	}
	wait := func(u fg.UserID) fg.AccountState {
		t.Helper()
		var st fg.AccountState
		if err := redistest.WaitFor(30*time.Second, func() bool {
			var err error
			st, err = g.State(ctx, u)
			inJobs := g.c.Do(ctx, g.c.B().Zscore().Key(g.ks.Jobs(u)).Member(u.String()).Build()).Error() == nil
			return err == nil && !inJobs
		}); err != nil {
			t.Fatalf("the job of user %d did not end: %+v", u, st)
		}
		return st
	}

	// At 1000 edges a second, stopped after 0.2 s and run again.
	began := time.Now()
	if st, err := g.SetState(ctx, 1, fg.StateSuspended); err != nil || st.Pending != edges {
		t.Fatalf("SetState(1, suspended) = %+v, %v; want %d pending", st, err, edges)
	}
	stop := run(1000)
	time.Sleep(200 * time.Millisecond)
	stop()
	if st, _ := g.State(ctx, 1); st.Pending == 0 || st.Pending == edges {
		t.Fatalf("State(1) after 0.2 s of its job at 1000/s = %+v: want it midway", st)
	}
	stop = run(1000)
	if st := wait(1); st.Pending != 0 || st.State != fg.StateSuspended {
		t.Errorf("State(1) after its job = %+v", st)
	}
	if took := time.Since(began); took < 400*time.Millisecond {
		t.Errorf("%d edges at 1000/s took %v", edges, took)
	}
	if js := g.JobStats(); js.Changed != edges {
		t.Errorf("JobStats = %+v, want %d changed", js, edges)
	}
	stop()
	for u, s := range archiveSnapshot(t, g, users) {
		for i, k := range archiveKinds {
			if s.counts[i] != int64(len(s.sets[i])) || u == 1 && len(s.sets[i]) != 0 {
				t.Errorf("user %d after the hide: %s of %d, counted %d", u, k.z, len(s.sets[i]), s.counts[i])
			}
		}
	}

	// Flipped under follows and unfollows of 1 by others, unthrottled.
	stop = run(0)
	var wg sync.WaitGroup
	flipping := make(chan struct{})
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-flipping:
					return
				default:
				}
				c := fg.UserID(2000 + w*10 + i%10)
				g.touch(c)
				var err error
				if i%3 == 2 {
					_, err = g.Graph.Unfollow(ctx, c, 1)
				} else {
					_, err = g.Graph.Follow(ctx, c, 1)
				}
				if err != nil && fg.ErrorCode(err) != fg.ETargetInactive {
					t.Errorf("follow or unfollow of 1 by %d: %v", c, err)
					return
				}
			}
		}()
	}
	for i := range 21 { // ending active
		s := fg.StateActive
		if i%2 == 1 {
			s = fg.StateDeactivated
		}
		if _, err := g.SetState(ctx, 1, s); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(i%4) * 5 * time.Millisecond)
	}
	close(flipping)
	wg.Wait()
	wait(1)
	stop()
	for i := range 40 {
		users = append(users, fg.UserID(2000+i))
	}
	after := archiveSnapshot(t, g, users)
	for u, s := range after {
		for i, k := range archiveKinds {
			if s.counts[i] != int64(len(s.sets[i])) {
				t.Errorf("user %d after the flips: %s of %d, counted %d", u, k.z, len(s.sets[i]), s.counts[i])
			}
		}
		if u == 1 || u >= 2000 && u < 3000 {
			continue
		}
		if !reflect.DeepEqual(s, before[u]) {
			t.Errorf("user %d after the flips:\n%+v\nwas\n%+v", u, s, before[u])
		}
	}
	// Every follow of 1 on both sides: 1's followers are those whose
	// following lists 1.
	var followersOf1 []string
	for _, z := range after[1].sets[1] {
		followersOf1 = append(followersOf1, z.Member)
	}
	for u, s := range after {
		lists := slices.ContainsFunc(s.sets[0], func(z rueidis.ZScore) bool { return z.Member == wire.Member(1) })
		if lists != slices.Contains(followersOf1, wire.Member(u)) {
			t.Errorf("user %d lists 1 in its following: %v; 1 lists it in its followers: %v", u, lists, !lists)
		}
	}
	checkNoHiddenEdges(t, g, users...)
}

// TestRebuildReconcile_States: a memgraph with a hidden user, a deleted
// one and their edges of every kind, its jobs done, rebuilt into Redis
// with Redis's jobs then done, answers as the source (the states, and the
// hidden edges hidden), and Reconcile finds no difference, reading the
// archive's hidden edges as the stored edges the source walks. A second
// rebuild, into the keys that hold the hidden edges now, changes nothing,
// and a repair of a hidden follow that the source has ended since leaves
// a tombstone for its hidden version on both sides, without showing
// anything.
func TestRebuildReconcile_States(t *testing.T) {
	for _, m := range modes {
		t.Run(m.Name, func(t *testing.T) { testRebuildReconcileStates(t, m.Client(t)) })
	}
}

func testRebuildReconcileStates(t *testing.T, c rueidis.Client) {
	ctx := t.Context()
	v := fg.VersionAt(sourceEpoch)
	at := func(i int) fg.Version { return v + fg.Version(i)<<fg.VersionCounterBits }
	src := memgraph.New()
	events := []fg.Event{
		fg.NewEvent(1, 2, fg.OpFollow, at(1)),
		fg.NewEvent(2, 1, fg.OpFollow, at(2)),
		fg.NewEvent(3, 1, fg.OpFollow, at(3)),
		fg.NewEvent(1, 4, fg.OpBlock, at(4)),
		fg.NewEvent(5, 1, fg.OpRequest, at(5)),
		fg.NewEvent(3, 6, fg.OpFollow, at(6)),
		fg.NewEvent(6, 2, fg.OpFollow, at(7)),
		fg.NewStateEvent(1, fg.StateDeactivated, at(8)),
		fg.NewStateEvent(6, fg.StateDeleted, at(9)),
	}
	if err := src.Apply(ctx, events); err != nil {
		t.Fatal(err)
	}
	graphtest.RunJobs(t, src, 0)
	graphtest.WaitJobs(t, src)
	g := newTestGraph(t, c)
	touchSource(g, src)
	if _, err := g.Rebuild(ctx, src, RebuildOptions{}); err != nil {
		t.Fatal(err)
	}
	graphtest.RunJobs(t, g, 0)
	if err := redistest.WaitFor(30*time.Second, func() bool {
		n, err := g.jobs.Count(ctx)
		return err == nil && n == 0
	}); err != nil {
		t.Fatal("the jobs of the rebuilt states did not end")
	}
	ids := []fg.UserID{1, 2, 3, 4, 5, 6}
	want, err := src.Counts(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := g.Counts(ctx, ids); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Counts after the rebuild = %+v, %v\nwant %+v", got, err, want)
	}
	for _, u := range []fg.UserID{1, 6} {
		a, _ := src.State(ctx, u)
		if b, err := g.State(ctx, u); err != nil || b.State != a.State || !b.Since.Equal(a.Since) {
			t.Errorf("State(%d) after the rebuild = %+v, %v; want %+v", u, b, err, a)
		}
	}
	if st, diffs := reconcile(t, g, src, ReconcileOptions{}); st.Differences() != 0 {
		t.Errorf("Reconcile with hidden edges = %+v, %v; want no difference", st, diffs)
	}

	// Rebuilt again, into keys that hold the hidden edges now: nothing
	// changes.
	if _, err := g.Rebuild(ctx, src, RebuildOptions{}); err != nil {
		t.Fatalf("Rebuild over the hidden edges: %v", err)
	}
	if st, diffs := reconcile(t, g, src, ReconcileOptions{}); st.Differences() != 0 {
		t.Errorf("Reconcile after the second rebuild = %+v, %v; want no difference", st, diffs)
	}
	// The source ends 3's hidden follow of 1; the repair writes its
	// tombstone over both hidden versions, and shows nothing.
	if ok, err := src.Unfollow(ctx, 3, 1); err != nil || !ok {
		t.Fatalf("Unfollow(3, 1) in the source = %v, %v", ok, err)
	}
	if st, _ := reconcile(t, g, src, ReconcileOptions{Fix: true}); st.Differences() == 0 {
		t.Error("Reconcile found no difference after the source ended 3→1")
	}
	if st, diffs := reconcile(t, g, src, ReconcileOptions{}); st.Differences() != 0 {
		t.Errorf("Reconcile after the repair = %+v, %v; want no difference", st, diffs)
	}
	if got, err := g.Counts(ctx, ids); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Counts after the repair = %+v, %v\nwant %+v", got, err, want)
	}
	for _, u := range ids {
		checkHiddenCounted(t, g, u)
	}
}
