package redisgraph

import (
	"context"
	"fmt"
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

// TestArchiveFollows: the archive step hides every follow of user 1, both
// directions, on both sides and in both counts, and shows them again as
// they were, versions (with and without a counter) and tombstones of its
// own included; the follows of user 2 with the same counterparts never
// change, and each step run a second time changes nothing.
func TestArchiveFollows(t *testing.T) {
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
	// Tombstones of user 1's own, which the step must leave as they are.
	for i := range 5 {
		c := fg.UserID(5000 + i)
		events = append(events, fg.NewEvent(1, c, fg.OpFollow, fg.VersionAt(base+int64(i))),
			fg.NewEvent(1, c, fg.OpUnfollow, fg.VersionAt(base+int64(1000+i))))
	}
	if err := g.Apply(ctx, events); err != nil {
		t.Fatal(err)
	}
	users := []fg.UserID{1, 2}
	for i := range n {
		users = append(users, fg.UserID(first+i))
	}
	for i := range 5 {
		users = append(users, fg.UserID(5000+i))
	}
	before := archiveSnapshot(t, g, users)

	for run, want := range []int64{n + 100, 0} {
		got, err := g.archiveFollows(ctx, 1, true)
		if err != nil || got != want {
			t.Fatalf("hide, run %d = %d, %v; want %d", run+1, got, err, want)
		}
	}
	hidden := archiveSnapshot(t, g, users)
	for _, u := range users {
		s := hidden[u]
		if s.counts[0] != int64(len(s.out)) || s.counts[1] != int64(len(s.in)) {
			t.Errorf("user %d after the hide: counts %v, lists of %d and %d", u, s.counts, len(s.out), len(s.in))
		}
		if u == 1 {
			if len(s.out)+len(s.in) != 0 {
				t.Errorf("user 1 after the hide still lists %d and %d", len(s.out), len(s.in))
			}
			continue
		}
		for _, list := range [][]string{s.out, s.in} {
			if slices.Contains(list, member(1)) {
				t.Errorf("user %d lists user 1 after the hide", u)
			}
		}
		if u == 2 && !reflect.DeepEqual(s, before[u]) {
			t.Errorf("user 2 changed by user 1's hide:\n%+v\nwas\n%+v", s, before[u])
		}
	}

	// A batch naming a follower twice, as an HSCAN may, shows it once.
	twice := []string{member(first), member(first)}
	if got, err := g.archiveBatch(ctx, 1, archiveDirs[0], false, twice); err != nil || got != 1 {
		t.Fatalf("show of a batch naming %d twice = %d, %v; want 1", first, got, err)
	}
	for run, want := range []int64{n + 99, 0} {
		got, err := g.archiveFollows(ctx, 1, false)
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

// archiveView is what of a user's follows the archive step changes: the
// two sorted sets with their scores, the two versions hashes, the counters.
type archiveView struct {
	out, in []string
	ov, iv  map[string]string
	counts  [2]int64
	scores  []string
}

func archiveSnapshot(t *testing.T, g *testGraph, users []fg.UserID) map[fg.UserID]archiveView {
	t.Helper()
	ctx := context.Background()
	views := make(map[fg.UserID]archiveView, len(users))
	for _, u := range users {
		var cmds rueidis.Commands
		for _, k := range []string{kindOut, kindIn} {
			cmds = append(cmds, g.c.B().Zrange().Key(g.key(u, k)).Min("0").Max("-1").Withscores().Build())
		}
		for _, k := range []string{kindOutVer, kindInVer} {
			cmds = append(cmds, g.c.B().Hgetall().Key(g.key(u, k)).Build())
		}
		cmds = append(cmds, g.c.B().Hmget().Key(g.key(u, kindCounters)).Field("nout", "nin").Build())
		res := g.c.DoMulti(ctx, cmds...)
		var v archiveView
		var lists [2][]string
		for i := range 2 {
			zs, err := res[i].AsZScores()
			if err != nil {
				t.Fatal(err)
			}
			for _, z := range zs {
				lists[i] = append(lists[i], z.Member)
				v.scores = append(v.scores, fmt.Sprint(i, z.Member, z.Score))
			}
		}
		v.out, v.in = lists[0], lists[1]
		var err error
		if v.ov, err = res[2].AsStrMap(); err != nil {
			t.Fatal(err)
		}
		if v.iv, err = res[3].AsStrMap(); err != nil {
			t.Fatal(err)
		}
		hs, err := res[4].ToArray()
		if err != nil {
			t.Fatal(err)
		}
		for i, h := range hs {
			if s, err := h.ToString(); err == nil {
				v.counts[i], _ = strconv.ParseInt(s, 10, 64)
			}
		}
		views[u] = v
	}
	return views
}
