package redisgraph

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/memgraph"
	"github.com/followgraph/followgraph/redisgraph/internal/layout"
	"github.com/followgraph/followgraph/redisgraph/internal/redistest"
	"github.com/followgraph/followgraph/redisgraph/internal/wire"
)

// diffKey identifies a reported difference.
type diffKey struct {
	user, other fg.UserID
	side        layout.Side
	kind        DiffKind
}

func (k diffKey) String() string {
	return fmt.Sprintf("%d %s %d: %s", k.user, k.side, k.other, k.kind)
}

// reconcile runs Reconcile and returns its stats and what it reported.
func reconcile(tb testing.TB, g *testGraph, src Source, opts ReconcileOptions) (ReconcileStats, map[diffKey]Diff) {
	tb.Helper()
	var mu sync.Mutex
	diffs := map[diffKey]Diff{}
	opts.Report = func(d Diff) {
		mu.Lock()
		defer mu.Unlock()
		k := diffKey{d.User, d.Other, d.Side, d.Kind}
		if _, ok := diffs[k]; ok {
			tb.Errorf("reported twice: %v", d)
		}
		diffs[k] = d
	}
	st, err := g.Reconcile(tb.Context(), src, opts)
	if err != nil {
		tb.Fatal(err)
	}
	var n int64
	for _, c := range st.Diffs {
		n += c
	}
	if n != int64(len(diffs)) {
		tb.Errorf("Reconcile counted %d differences, reported %d", n, len(diffs))
	}
	return st, diffs
}

// rebuilt returns a graph under a prefix of its own on c, holding src.
func rebuilt(tb testing.TB, c rueidis.Client, src Source) *testGraph {
	tb.Helper()
	g := newTestGraph(tb, c)
	touchSource(g, src)
	if _, err := g.Rebuild(tb.Context(), src, RebuildOptions{}); err != nil {
		tb.Fatal(err)
	}
	return g
}

// liveEdge returns the first live edge of user's side s in src, skipping
// the users in avoid at the other end.
func liveEdge(tb testing.TB, src Source, user fg.UserID, s layout.Side, avoid ...fg.UserID) fg.Event {
	tb.Helper()
	edges, other := src.OutEdges(user), func(e fg.Event) fg.UserID { return e.Target }
	if s.In {
		edges, other = src.InEdges(user), func(e fg.Event) fg.UserID { return e.User }
	}
	for e := range edges {
		if e.Op == fg.OpFollow && !slices.Contains(avoid, other(e)) {
			return e
		}
	}
	tb.Fatalf("user %d has no live edge on its %s side", user, s)
	return fg.Event{}
}

// TestReconcile compares a rebuilt copy with its source (no difference),
// damages the copy in every way a key can be wrong, and checks that each
// damage is reported, that Fix repairs them all (after which Redis answers
// as the source again), and that a change newer than the source is
// reported as ahead and left alone.
func TestReconcile(t *testing.T) {
	src := sourceGraph(t, 5_000)
	users := slices.Collect(src.Users())
	for _, m := range modes {
		t.Run(m.Name, func(t *testing.T) {
			c := m.Client(t)
			g := rebuilt(t, c, src)
			ctx := t.Context()
			st, diffs := reconcile(t, g, src, ReconcileOptions{})
			if st.Differences() != 0 || len(diffs) != 0 || st.Users != int64(len(users)) || st.Edges == 0 {
				t.Fatalf("Reconcile of a rebuilt copy = %+v, %v; want no difference, %d users", st, diffs, len(users))
			}

			// The damage, and what it must show as.
			want := map[diffKey]bool{}
			do := func(cmds ...rueidis.Completed) {
				t.Helper()
				for _, r := range c.DoMulti(ctx, cmds...) {
					if err := r.Error(); err != nil {
						t.Fatal(err)
					}
				}
			}
			old := float64(sourceEpoch - 1000) // older than every version of the source

			// A deleted key: every live edge of a's following side is missing.
			a := users[1]
			do(c.B().Del().Key(g.ks.User(a, layout.Out)).Build())
			for e := range src.OutEdges(a) {
				if e.Op == fg.OpFollow {
					want[diffKey{a, e.Target, layout.Following, DiffMissing}] = true
				}
			}
			want[diffKey{a, 0, layout.Following, DiffCounter}] = true

			// One side of an edge removed: b's follower x is missing, and
			// b's counter no longer counts its set.
			b := users[2]
			x := liveEdge(t, src, b, layout.Followers, a).User
			do(c.B().Zrem().Key(g.ks.User(b, layout.In)).Member(wire.Member(x)).Build())
			want[diffKey{b, x, layout.Followers, DiffMissing}] = true
			want[diffKey{b, 0, layout.Followers, DiffCounter}] = true

			// An invented member, with a time older than the source's
			// versions; and the counter made to count it.
			cu, invented := users[3], fg.UserID(99_999_999)
			g.touch(invented)
			do(c.B().Zadd().Key(g.ks.User(cu, layout.Out)).ScoreMember().ScoreMember(old, wire.Member(invented)).Build(),
				c.B().Hincrby().Key(g.ks.User(cu, layout.Counters)).Field("nout").Increment(1).Build())
			want[diffKey{cu, invented, layout.Following, DiffExtra}] = true

			// A wrong counter.
			d := users[4]
			do(c.B().Hset().Key(g.ks.User(d, layout.Counters)).FieldValue().FieldValue("nin", "999").Build())
			want[diffKey{d, 0, layout.Followers, DiffCounter}] = true

			// A lost counters hash: both counters, and the clock.
			e := users[5]
			do(c.B().Del().Key(g.ks.User(e, layout.Counters)).Build())
			want[diffKey{e, 0, layout.Following, DiffCounter}] = true
			want[diffKey{e, 0, layout.Followers, DiffCounter}] = true
			want[diffKey{e, 0, layout.Following, DiffClock}] = true

			// A follow time changed on one side; a tombstone lost.
			f := users[6]
			y := liveEdge(t, src, f, layout.Following, a, b, cu, d, e).Target
			do(c.B().Zadd().Key(g.ks.User(f, layout.Out)).ScoreMember().ScoreMember(old, wire.Member(y)).Build())
			want[diffKey{f, y, layout.Following, DiffSince}] = true
			var tomb fg.Event
			for _, u := range users[7:] {
				for ev := range src.OutEdges(u) {
					if ev.Op == fg.OpUnfollow && tomb.Version == 0 {
						tomb = ev
					}
				}
			}
			do(c.B().Hdel().Key(g.ks.User(tomb.User, layout.OutVersions)).Field(wire.Member(tomb.Target)).Build())
			want[diffKey{tomb.User, tomb.Target, layout.Following, DiffTombstone}] = true

			// A user only Redis has, following someone.
			ghost := fg.UserID(88_888_888)
			g.touch(ghost)
			do(c.B().Zadd().Key(g.ks.User(ghost, layout.Out)).ScoreMember().ScoreMember(old, wire.Member(a)).Build(),
				c.B().Hset().Key(g.ks.User(ghost, layout.Counters)).FieldValue().FieldValue("nout", "1").Build())
			want[diffKey{ghost, a, layout.Following, DiffExtra}] = true

			// Without a horizon, the states that look newer than the
			// source's (the invented members) are taken for changes the
			// source has not seen: ahead, and left alone.
			st, diffs = reconcile(t, g, src, ReconcileOptions{Fix: true})
			for _, k := range []diffKey{{cu, invented, layout.Following, DiffAhead}, {ghost, a, layout.Following, DiffAhead}} {
				if d, ok := diffs[k]; !ok || d.Fixed {
					t.Errorf("without a horizon: %v: reported %v, want it reported and not fixed", k, d)
				}
			}
			for k := range want {
				if k.kind == DiffExtra {
					continue
				}
				if d, ok := diffs[k]; !ok || !d.Fixed {
					t.Errorf("without a horizon: %v: reported %v (fixed %v), want it fixed", k, ok, d.Fixed)
				}
			}

			// Damage again what was fixed, and reconcile with a horizon
			// of now: every difference is reported, and fixed.
			do(c.B().Del().Key(g.ks.User(a, layout.Out)).Build(),
				c.B().Zrem().Key(g.ks.User(b, layout.In)).Member(wire.Member(x)).Build(),
				c.B().Hset().Key(g.ks.User(d, layout.Counters)).FieldValue().FieldValue("nin", "999").Build(),
				c.B().Del().Key(g.ks.User(e, layout.Counters)).Build(),
				c.B().Zadd().Key(g.ks.User(f, layout.Out)).ScoreMember().ScoreMember(old, wire.Member(y)).Build(),
				c.B().Hdel().Key(g.ks.User(tomb.User, layout.OutVersions)).Field(wire.Member(tomb.Target)).Build())
			horizon := time.Now()
			st, diffs = reconcile(t, g, src, ReconcileOptions{Fix: true, Horizon: horizon})
			for k := range want {
				if d, ok := diffs[k]; !ok || !d.Fixed {
					t.Errorf("%v: reported %v (fixed %v), want it fixed", k, ok, d.Fixed)
				}
			}
			for k, d := range diffs {
				// a's repaired following side changed a's followees'
				// followers sides in nothing: they were intact.
				if !want[k] && !(k.kind == DiffCounter && k.user == cu) {
					t.Errorf("unexpected difference %v", d)
				}
			}
			if st.Fixed != st.Differences() {
				t.Errorf("Reconcile with Fix = %+v: not all fixed", st)
			}
			var lines []string
			for _, d := range diffs {
				lines = append(lines, d.String())
			}
			slices.Sort(lines)
			t.Logf("%d differences, e.g.\n%s", len(lines), strings.Join(lines[:min(len(lines), 6)], "\n"))

			st, diffs = reconcile(t, g, src, ReconcileOptions{Horizon: horizon})
			if st.Differences() != 0 || st.Diffs[DiffAhead] != 0 {
				t.Errorf("Reconcile after the repairs = %+v, %v; want no difference", st, diffs)
			}
			checkSame(t, src, g, append(slices.Clone(users), ghost, invented))

			// A change newer than the source is ahead, and stays.
			z := liveEdge(t, src, f, layout.Following, y)
			if ok, err := g.Unfollow(ctx, f, z.Target); err != nil || !ok {
				t.Fatalf("Unfollow = %v, %v", ok, err)
			}
			st, diffs = reconcile(t, g, src, ReconcileOptions{Fix: true, Horizon: horizon})
			for _, k := range []diffKey{{f, z.Target, layout.Following, DiffAhead}, {z.Target, f, layout.Followers, DiffAhead}} {
				if d, ok := diffs[k]; !ok || d.Fixed {
					t.Errorf("after a newer change: %v: reported %v, want it reported and not fixed", k, d)
				}
			}
			if st.Differences() != 0 {
				t.Errorf("after a newer change: Reconcile = %+v, want only the change, ahead", st)
			}
			if edge, err := g.IsFollowing(ctx, f, z.Target); err != nil || edge.Following {
				t.Errorf("IsFollowing after Reconcile = %+v, %v; want the unfollow kept", edge, err)
			}
		})
	}
}

// TestReconcileRate repairs at a bounded rate: each repaired difference
// costs a token of a bucket of a second's worth, so the repairs take at
// least (fixed - burst) / rate. Edges repairs 8 edges and the counter at
// 4 a second (the last call 5 tokens, above the burst of 4); CounterAndClock
// 2 edges, the counter and the clock in one call of 4 tokens at 2 a second,
// twice the burst.
func TestReconcileRate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		edges  int
		rate   float64
		damage func(c rueidis.Client, g *testGraph) rueidis.Commands
		fixed  int64
	}{
		{"Edges", 8, 4, func(c rueidis.Client, g *testGraph) rueidis.Commands {
			return rueidis.Commands{c.B().Del().Key(g.ks.User(1, layout.Out)).Build()}
		}, 9},
		{"CounterAndClock", 2, 2, func(c rueidis.Client, g *testGraph) rueidis.Commands {
			return rueidis.Commands{
				c.B().Del().Key(g.ks.User(1, layout.Out)).Build(),
				c.B().Hset().Key(g.ks.User(1, layout.Counters)).FieldValue().FieldValue("nout", "999").Build(),
				c.B().Hdel().Key(g.ks.User(1, layout.Counters)).Field("clk").Build(),
			}
		}, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := memgraph.New()
			v := fg.VersionAt(sourceEpoch)
			var events []fg.Event
			for i := range tc.edges {
				events = append(events, fg.NewEvent(1, fg.UserID(10+i), fg.OpFollow, v+fg.Version(i)<<fg.VersionCounterBits))
			}
			if err := src.Apply(t.Context(), events); err != nil {
				t.Fatal(err)
			}
			c := redistest.Standalone(t)
			g := rebuilt(t, c, src)
			for _, r := range c.DoMulti(t.Context(), tc.damage(c, g)...) {
				if err := r.Error(); err != nil {
					t.Fatal(err)
				}
			}
			start := time.Now()
			st, _ := reconcile(t, g, src, ReconcileOptions{Fix: true, Rate: tc.rate})
			took := time.Since(start)
			burst := int64(tc.rate) // a second's worth
			least := time.Duration(float64(st.Fixed-burst) / tc.rate * float64(time.Second))
			if st.Fixed != tc.fixed || st.Differences() != tc.fixed || took < least {
				t.Errorf("Reconcile at %v repairs a second = %+v in %v; want %d fixed in %v or more", tc.rate, st, took, tc.fixed, least)
			}
			if st, _ := reconcile(t, g, src, ReconcileOptions{}); st.Differences() != 0 {
				t.Errorf("Reconcile after = %+v", st)
			}
		})
	}
}

// TestReconcileLinks reconciles the other kinds: a Redis and a memgraph
// that applied the same events agree, with no tombstone difference where
// a block ended follows and requests Redis had no record of; then a block
// lost on one side, a mute lost, a request lost on the side it is to, a
// wrong counter, a stale flag and a lost private flag are each reported
// and repaired, after which Redis answers as the source and a second
// reconcile finds nothing.
func TestReconcileLinks(t *testing.T) {
	for _, m := range modes {
		t.Run(m.Name, func(t *testing.T) {
			ctx := t.Context()
			v := fg.VersionAt(sourceEpoch)
			at := func(i int) fg.Version { return v + fg.Version(i)<<fg.VersionCounterBits }
			mute := fg.NewEvent(1, 3, fg.OpMute, at(6))
			mute.Since, mute.Expires = at(6).Time(), time.UnixMilli(time.Now().Add(time.Hour).UnixMilli())
			mute4 := fg.NewEvent(1, 4, fg.OpMute, at(8))
			mute4.Since = at(8).Time()
			events := []fg.Event{
				fg.NewEvent(1, 2, fg.OpFollow, at(1)),
				fg.NewEvent(2, 1, fg.OpFollow, at(2)),
				fg.NewEvent(3, 1, fg.OpFollow, at(3)),
				fg.NewEvent(1, 2, fg.OpBlock, at(4)),   // ends the follows between 1 and 2
				fg.NewEvent(10, 1, fg.OpBlock, at(5)),  // ends follows and requests that never were
				fg.NewEvent(5, 1, fg.OpBlock, at(5)+1), // and so, then unblocked
				fg.NewEvent(5, 1, fg.OpUnblock, at(7)),
				mute,
				mute4,
				fg.NewEvent(1, 0, fg.OpPrivate, at(9)),
				fg.NewEvent(6, 1, fg.OpRequest, at(10)),
				fg.NewEvent(7, 1, fg.OpRequest, at(11)),
				fg.NewEvent(8, 1, fg.OpFollow, at(12)), // ends a request that never was
			}
			src := memgraph.New()
			c := m.Client(t)
			g := newTestGraph(t, c)
			for _, a := range []interface {
				Apply(context.Context, []fg.Event) error
			}{src, g} {
				if err := a.Apply(ctx, events); err != nil {
					t.Fatal(err)
				}
			}
			touchSource(g, src)
			users := slices.Collect(src.Users())
			if st, diffs := reconcile(t, g, src, ReconcileOptions{}); st.Differences() != 0 || st.Edges == 0 {
				t.Fatalf("Reconcile of the same events = %+v, %v; want no difference", st, diffs)
			}

			do := func(cmds ...rueidis.Completed) {
				t.Helper()
				for _, r := range c.DoMulti(ctx, cmds...) {
					if err := r.Error(); err != nil {
						t.Fatal(err)
					}
				}
			}
			damage := func() {
				do(c.B().Zrem().Key(g.ks.User(2, layout.BlockIn)).Member(wire.Member(1)).Build(),
					c.B().Hset().Key(g.ks.User(1, layout.Counters)).FieldValue().FieldValue("nbo", "99").Build(),
					c.B().Zrem().Key(g.ks.User(1, layout.MuteOut)).Member(wire.Member(3)).Build(),
					c.B().Hdel().Key(g.ks.User(1, "mov")).Field(wire.Member(3)).Build(),
					c.B().Zrem().Key(g.ks.User(1, layout.ReqIn)).Member(wire.Member(6)).Build(),
					c.B().Zadd().Key(g.ks.User(1, layout.Flags)).ScoreMember().ScoreMember(layout.FlagMuting, wire.Member(9)).Build(),
					c.B().Hdel().Key(g.ks.User(1, layout.Counters)).Field("p", "pv", "clk").Build())
			}
			damage()
			want := map[diffKey]bool{
				{2, 1, layout.BlockedBy, DiffMissing}:  true,
				{2, 0, layout.BlockedBy, DiffCounter}:  true,
				{1, 0, layout.Blocks, DiffCounter}:     true,
				{1, 3, layout.Mutes, DiffMissing}:      true,
				{1, 0, layout.Mutes, DiffCounter}:      true,
				{1, 6, layout.RequestsIn, DiffMissing}: true,
				{1, 0, layout.RequestsIn, DiffCounter}: true,
				{1, 9, layout.Following, DiffFlags}:    true,
				{1, 0, layout.Private, DiffMissing}:    true,
				{1, 0, layout.Following, DiffClock}:    true,
			}
			for _, opts := range []ReconcileOptions{{}, {Fix: true, Horizon: time.Now()}} {
				st, diffs := reconcile(t, g, src, opts)
				for k := range want {
					if d, ok := diffs[k]; !ok || d.Fixed != opts.Fix {
						t.Errorf("Fix %v: %v: reported %v (fixed %v), want it reported", opts.Fix, k, ok, d.Fixed)
					}
				}
				for k, d := range diffs {
					if !want[k] {
						t.Errorf("Fix %v: unexpected difference %v", opts.Fix, d)
					}
				}
				if opts.Fix && st.Fixed != st.Differences() {
					t.Errorf("Reconcile with Fix = %+v: not all fixed", st)
				}
				// The clock must pass every version on 1's keys: the last,
				// 7's request to 1, from 7's clock.
				if d := diffs[diffKey{1, 0, layout.Following, DiffClock}]; d.Expected.Version != at(11) {
					t.Errorf("Fix %v: %v; want the clock at least %016x", opts.Fix, d, uint64(at(11)))
				}
			}
			if st, diffs := reconcile(t, g, src, ReconcileOptions{Horizon: time.Now()}); st.Differences() != 0 {
				t.Errorf("Reconcile after the repairs = %+v, %v; want no difference", st, diffs)
			}
			checkSame(t, src, g, users)
			for _, u := range users {
				wr, err := src.Relations(ctx, u, users)
				if err != nil {
					t.Fatal(err)
				}
				gr, err := g.Relations(ctx, u, users)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(wr, gr) {
					t.Errorf("Relations(%d) = %+v, want %+v", u, gr, wr)
				}
			}
			for _, u := range []fg.UserID{1, 2} {
				ws, _ := src.Settings(ctx, u)
				gs, err := g.Settings(ctx, u)
				if err != nil || gs != ws {
					t.Errorf("Settings(%d) = %+v, %v; want %+v", u, gs, err, ws)
				}
			}
			if l, err := g.Link(ctx, fg.KindMute, 1, 3); err != nil || !l.On || !l.Since.Equal(mute.Since) || !l.Expires.Equal(mute.Expires) {
				t.Errorf("Link(mute, 1, 3) after the repair = %+v, %v; want the mute of %+v", l, err, mute)
			}
		})
	}
}

// TestReconcileLiveWrites: Redis after live writes and the graph of their
// events agree. A block writes the ends of the requests both ways; after
// an unblock, a follow of the same pair takes change.lua's fast way,
// which leaves those ends as they were, and a follow does not move the
// followee's clock: the expected graph raises the end of the request to
// the follow's version, which must not count toward the followee's
// clock (the follow of that direction stands for it, as for the end
// itself).
func TestReconcileLiveWrites(t *testing.T) {
	for _, m := range modes {
		t.Run(m.Name, func(t *testing.T) {
			ctx := t.Context()
			g := newTestGraph(t, m.Client(t))
			_, err := g.Block(ctx, 1, 2)
			must(t, err)
			_, err = g.Unblock(ctx, 1, 2)
			must(t, err)
			_, err = g.Block(ctx, 1, 3) // 1 has a block: the follow's script looks 2 up in rf(1)
			must(t, err)
			_, err = g.Follow(ctx, 1, 2)
			must(t, err)
			var events []fg.Event
			for _, es := range outboxEvents(t, g, []fg.UserID{1, 2, 3}) {
				events = append(events, es...)
			}
			slices.SortFunc(events, func(a, b fg.Event) int { return cmp.Compare(a.Version, b.Version) })
			src := memgraph.New()
			must(t, src.Apply(ctx, events))
			if st, diffs := reconcile(t, g, src, ReconcileOptions{}); st.Differences() != 0 || st.Edges == 0 {
				t.Fatalf("Reconcile against the events of the writes = %+v, %v; want no difference", st, diffs)
			}
		})
	}
}
