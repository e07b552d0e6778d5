package redisgraph

import (
	"context"
	"reflect"
	"slices"
	"strconv"
	"testing"

	"github.com/redis/rueidis"

	fg "github.com/followgraph/followgraph"
)

// TestApply_RefusesStates: until Redis has account states, replaying a
// state other than active fails the batch before anything of it is
// written; active, every user's state here, passes.
func TestApply_RefusesStates(t *testing.T) {
	ctx := context.Background()
	g := newTestGraph(t, modes[0].client(t))
	v := fg.VersionAt(1_700_000_000_000)
	err := g.Apply(ctx, []fg.Event{fg.NewEvent(2, 1, fg.OpFollow, v+1), fg.NewStateEvent(1, fg.StateDeactivated, v+2)})
	if fg.ErrorCode(err) != fg.EUnavailable {
		t.Fatalf("Apply of a deactivated state = %v, want unavailable", err)
	}
	if c, _ := g.Counts(ctx, []fg.UserID{1}); c[0].FollowerCount != 0 {
		t.Errorf("Counts(1) = %+v: the refused batch wrote its follow", c)
	}
	if err := g.Apply(ctx, []fg.Event{fg.NewEvent(2, 1, fg.OpFollow, v+1), fg.NewEvent(1, 0, fg.OpState, v+3)}); err != nil {
		t.Fatalf("Apply of an active state: %v", err)
	}
	if c, _ := g.Counts(ctx, []fg.UserID{1}); c[0].FollowerCount != 1 {
		t.Errorf("Counts(1) = %+v after the follow", c)
	}
}

// TestArchive: the archive step hides every follow, block and request of
// user 1, both ways, on both sides, in both counts and flags, and shows
// them again as they were, versions (with and without a counter) and
// tombstones of its own included; the edges of user 2 with the same
// counterparts never change, and each step run a second time changes
// nothing.
func TestArchive(t *testing.T) {
	ctx := context.Background()
	g := newTestGraph(t, standaloneClient(t))
	const first, n = 1000, 300
	base := int64(1_700_000_000_000)
	var events []fg.Event
	for i := range n {
		c := fg.UserID(first + i)
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
		users = append(users, fg.UserID(first+i))
	}
	for i := range 10 {
		users = append(users, fg.UserID(6000+i), fg.UserID(6100+i), fg.UserID(7000+i), fg.UserID(7100+i))
	}
	for i := range 5 {
		users = append(users, fg.UserID(5000+i))
	}
	before := archiveSnapshot(t, g, users)
	edges := int64(n + 100 + links)

	for run, want := range []int64{edges, 0} {
		got, err := g.archive(ctx, 1, true)
		if err != nil || got != want {
			t.Fatalf("hide, run %d = %d, %v; want %d", run+1, got, err, want)
		}
	}
	hidden := archiveSnapshot(t, g, users)
	for _, u := range users {
		s := hidden[u]
		for i, k := range archiveKinds {
			if s.counts[i] != int64(len(s.sets[i])) {
				t.Errorf("user %d after the hide: %s of %d members, its counter %d", u, k.z, len(s.sets[i]), s.counts[i])
			}
			if u == 1 && len(s.sets[i]) != 0 {
				t.Errorf("user 1 after the hide: %s of %d members", k.z, len(s.sets[i]))
			}
			if slices.ContainsFunc(s.sets[i], func(z rueidis.ZScore) bool { return z.Member == member(1) }) {
				t.Errorf("user %d lists user 1 in %s after the hide", u, k.z)
			}
		}
		if len(s.flags) != 0 && u == 1 || slices.ContainsFunc(s.flags, func(z rueidis.ZScore) bool { return z.Member == member(1) }) {
			t.Errorf("user %d after the hide has flags of user 1 (user 1: any): %v", u, s.flags)
		}
		if u == 2 && !reflect.DeepEqual(s, before[u]) {
			t.Errorf("user 2 changed by user 1's hide:\n%+v\nwas\n%+v", s, before[u])
		}
	}

	// A batch naming a follower twice, as an HSCAN may, shows it once.
	twice := []string{member(first), member(first)}
	if got, err := g.archiveBatch(ctx, 1, archiveSides[0], false, twice); err != nil || got != 1 {
		t.Fatalf("show of a batch naming %d twice = %d, %v; want 1", first, got, err)
	}
	for run, want := range []int64{edges - 1, 0} {
		got, err := g.archive(ctx, 1, false)
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
	// A follow over one of the tombstones the steps kept is still made.
	if r, err := g.Follow(ctx, 1, 5000); err != nil || !r.Created {
		t.Errorf("Follow(1, 5000) over its tombstone = %+v, %v", r, err)
	}
}

// archiveKinds are the sides the archive step changes, by their keys'
// kinds and counters.
var archiveKinds = []struct{ z, vh, counter string }{
	{kindOut, kindOutVer, "nout"}, {kindIn, kindInVer, "nin"},
	{kindBlockOut, "bov", "nbo"}, {kindBlockIn, "biv", "nbi"},
	{kindReqOut, "rov", "nro"}, {kindReqIn, "riv", "nri"},
}

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
			cmds = append(cmds, zrange(g.key(u, k.z)), g.c.B().Hgetall().Key(g.key(u, k.vh)).Build())
			counters[i] = k.counter
		}
		cmds = append(cmds, g.c.B().Hmget().Key(g.key(u, kindCounters)).Field(counters...).Build(), zrange(g.key(u, kindFlags)))
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
