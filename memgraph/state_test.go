package memgraph

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/graphtest"
)

// TestState_WalkKeepsArchived: a hidden user's hidden edges are stored,
// so the walks that rebuild or reconcile another engine yield them as
// they are (a follow as a follow, with its version), and the state too.
func TestState_WalkKeepsArchived(t *testing.T) {
	ctx := context.Background()
	g := New()
	graphtest.RunJobs(t, g, 0)
	mustDo(t, second(g.Follow(ctx, 1, 2)))
	mustDo(t, second(g.Follow(ctx, 3, 1)))
	mustDo(t, second(g.Block(ctx, 1, 4)))
	before := walkAll(g, 1, 2, 3)
	mustDo(t, second(g.SetState(ctx, 1, fg.StateSuspended)))
	graphtest.WaitJobs(t, g)
	if c, _ := g.Counts(ctx, []fg.UserID{2, 3}); c[0].FollowerCount != 0 || c[1].FollowingCount != 0 {
		t.Fatalf("Counts(2, 3) = %+v: 1's edges are still shown", c)
	}
	after := walkAll(g, 1, 2, 3)
	var state []fg.Event
	after = slices.DeleteFunc(after, func(e fg.Event) bool {
		if e.Op == fg.OpState {
			state = append(state, e)
			return true
		}
		return false
	})
	if !slices.Equal(after, before) {
		t.Errorf("walk while 1 is hidden =\n%v\nwant what it was before\n%v", after, before)
	}
	if len(state) != 1 || state[0].State != fg.StateSuspended {
		t.Errorf("walk's state events = %v, want one of suspended", state)
	}
}

// TestState_HookRefused: a state change whose hook fails leaves no
// trace: no state, no job.
func TestState_HookRefused(t *testing.T) {
	ctx := context.Background()
	fail := errors.New("log down")
	refuse := false
	g := New(WithHook(func(context.Context, fg.Event) error {
		if refuse {
			return fail
		}
		return nil
	}))
	graphtest.RunJobs(t, g, 0)
	mustDo(t, second(g.Follow(ctx, 1, 2)))
	refuse = true
	if _, err := g.SetState(ctx, 1, fg.StateDeactivated); !errors.Is(err, fail) {
		t.Fatalf("SetState with a failing hook: %v", err)
	}
	if a, _ := g.State(ctx, 1); a != (fg.AccountState{ID: 1}) {
		t.Errorf("State(1) after a refused change = %+v", a)
	}
	if c, _ := g.Counts(ctx, []fg.UserID{2}); c[0].FollowerCount != 1 {
		t.Errorf("Counts(2) = %+v: the refused change hid 1", c)
	}
}

// TestState_Rate: a job obeys its rate.
func TestState_Rate(t *testing.T) {
	ctx := context.Background()
	g := New()
	for u := fg.UserID(2); u <= 401; u++ {
		mustDo(t, second(g.Follow(ctx, u, 1)))
	}
	graphtest.RunJobs(t, g, 1000)
	start := time.Now()
	mustDo(t, second(g.SetState(ctx, 1, fg.StateDeactivated)))
	graphtest.WaitJobs(t, g)
	// 400 edges at 1000/s take at least 0.3 s (the first step is free).
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("400 edges at 1000 a second took %v", d)
	}
	if st := g.JobStats(); st.Changed != 400 || st.Pending != 0 {
		t.Errorf("JobStats = %+v, want 400 changed, none pending", st)
	}
}

func walkAll(g *Graph, users ...fg.UserID) []fg.Event {
	var es []fg.Event
	for _, u := range users {
		for e := range g.OutEdges(u) {
			es = append(es, e)
		}
		for e := range g.InEdges(u) {
			es = append(es, e)
		}
		for e := range g.LinkEvents(u) {
			es = append(es, e)
		}
	}
	slices.SortFunc(es, func(a, b fg.Event) int { return cmp.Compare(a.Version, b.Version) })
	return es
}

func second[T any](_ T, err error) error { return err }

func mustDo(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// BenchmarkJob_2MFollowers: deactivate then reactivate a user with 2M
// followers, unthrottled (the account states' target: each job ≤ 20 s).
// One iteration is both jobs; each is reported.
func BenchmarkJob_2MFollowers(b *testing.B) {
	const n = 2_000_000
	ctx := context.Background()
	g := New()
	if err := g.Load(ctx, func(yield func(fg.Event) bool) {
		v := fg.VersionAt(time.Now().Add(-time.Hour).UnixMilli())
		for i := range fg.UserID(n) {
			if !yield(fg.NewEvent(2+i, 1, fg.OpFollow, v+fg.Version(i))) {
				return
			}
		}
	}); err != nil {
		b.Fatal(err)
	}
	graphtest.RunJobs(b, g, 0)
	var hide, restore time.Duration
	b.ResetTimer()
	for range b.N {
		for _, st := range []fg.State{fg.StateDeactivated, fg.StateActive} {
			start := time.Now()
			if _, err := g.SetState(ctx, 1, st); err != nil {
				b.Fatal(err)
			}
			graphtest.WaitJobs(b, g)
			if st.Active() {
				restore += time.Since(start)
			} else {
				hide += time.Since(start)
			}
		}
	}
	b.StopTimer()
	if c, _ := g.Counts(ctx, []fg.UserID{1}); c[0].FollowerCount != n {
		b.Fatalf("Counts(1) = %+v after the jobs, want %d followers", c, n)
	}
	b.ReportMetric(hide.Seconds()/float64(b.N), "s/deactivate")
	b.ReportMetric(restore.Seconds()/float64(b.N), "s/reactivate")
}

// BenchmarkNoEdgeChange compares, on the generated 10M-edge graph, a
// change of state of a user with no edges (deactivate, then active again:
// two events, two jobs with nothing to do) with a follow and an unfollow
// of two such users (the account states' target: as fast as a follow).
func BenchmarkNoEdgeChange(b *testing.B) {
	g, ctx := baseGraph(b), context.Background()
	graphtest.RunJobs(b, g, 0)
	next := fg.UserID(3_000_000_000_000) + fg.UserID(followSeed.Add(1))<<32 // users of no edge, new on every run
	b.Run("State", func(b *testing.B) {
		for b.Loop() {
			next++
			for _, st := range []fg.State{fg.StateDeactivated, fg.StateActive} {
				if _, err := g.SetState(ctx, next, st); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("Follow", func(b *testing.B) {
		for b.Loop() {
			next += 2
			if _, err := g.Follow(ctx, next, next+1); err != nil {
				b.Fatal(err)
			}
			if _, err := g.Unfollow(ctx, next, next+1); err != nil {
				b.Fatal(err)
			}
		}
	})
}
