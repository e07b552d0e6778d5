package redisgraph

import (
	"context"
	"errors"
	"math/rand/v2"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/rueidis"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/redisgraph/internal/redistest"
)

var errInjected = errors.New("injected failure of a second step")

// edgeKey is user→target.
type edgeKey struct{ user, target fg.UserID }

// outboxEvents returns the events in the outbox streams of users, in
// stream order, by stream.
func outboxEvents(tb testing.TB, g *testGraph, users []fg.UserID) map[string][]fg.Event {
	tb.Helper()
	out := make(map[string][]fg.Event)
	for _, u := range users {
		key := g.ks.Outbox(u)
		if _, ok := out[key]; ok {
			continue
		}
		out[key] = nil
		after := ""
		for {
			es, err := g.outbox.Read(tb.Context(), key, after, 100)
			if err != nil {
				tb.Fatal(err)
			}
			if len(es) == 0 {
				break
			}
			for _, e := range es {
				out[key] = append(out[key], e.Event)
			}
			after = es[len(es)-1].ID
		}
	}
	return out
}

// latest returns, for each edge, the event of the highest version.
func latest(streams map[string][]fg.Event) map[edgeKey]fg.Event {
	m := make(map[edgeKey]fg.Event)
	for _, es := range streams {
		for _, e := range es {
			k := edgeKey{e.User, e.Target}
			if l, ok := m[k]; !ok || e.Version > l.Version {
				m[k] = e
			}
		}
	}
	return m
}

// checkGraph checks that both sides of every edge among users, and the
// counters, agree with want: the follow time of each live edge.
func checkGraph(tb testing.TB, g fg.Graph, users []fg.UserID, want map[edgeKey]int64) {
	tb.Helper()
	ctx := tb.Context()
	counts, err := g.Counts(ctx, users)
	if err != nil {
		tb.Fatal(err)
	}
	for i, u := range users {
		var wantOut, wantIn []fg.Entry
		for e, ms := range want {
			if e.user == u {
				wantOut = append(wantOut, fg.Entry{ID: e.target, Since: fg.Millis(ms)})
			}
			if e.target == u {
				wantIn = append(wantIn, fg.Entry{ID: e.user, Since: fg.Millis(ms)})
			}
		}
		for _, l := range []struct {
			name string
			read func(fg.PageRequest) (fg.Page, error)
			want []fg.Entry
		}{
			{"Following", func(r fg.PageRequest) (fg.Page, error) { return g.Following(ctx, u, r) }, wantOut},
			{"Followers", func(r fg.PageRequest) (fg.Page, error) { return g.Followers(ctx, u, r) }, wantIn},
		} {
			p, err := l.read(fg.PageRequest{Limit: fg.MaxLimit})
			if err != nil {
				tb.Fatal(err)
			}
			slices.SortFunc(l.want, func(a, b fg.Entry) int {
				if a.Key().Before(b.Key()) {
					return -1
				}
				return 1
			})
			if !slices.EqualFunc(p.Entries, l.want, func(a, b fg.Entry) bool { return a.ID == b.ID && a.Since.Equal(b.Since) }) {
				tb.Errorf("%s(%d) = %v, want %v", l.name, u, p.Entries, l.want)
			}
		}
		if c := counts[i]; c.FollowingCount != int64(len(wantOut)) || c.FollowerCount != int64(len(wantIn)) {
			tb.Errorf("Counts(%d) = %+v, want %d following and %d followers", u, c, len(wantOut), len(wantIn))
		}
	}
}

// TestClusterConvergence races follows and unfollows of a few edges from
// many goroutines while second steps fail at random, some every retry.
// Changes of half of the edges are serialized by the test, so that it
// knows the last acknowledged change of each; the others race freely.
// After Repair, both sides and the counters hold, for each edge, the state
// of its last acknowledged change (for the racing edges: that of the
// highest version, which the outbox tells), and the outbox holds each
// acknowledged change once.
func TestClusterConvergence(t *testing.T) {
	var faults atomic.Int64
	var failing atomic.Bool // whether second steps fail at random
	failing.Store(true)
	reg := prometheus.NewRegistry()
	g := newTestGraph(t, redistest.Cluster(t), WithRegisterer(reg), withSecondStepFault(func(fg.Event) error {
		if failing.Load() && rand.IntN(10) < 6 {
			faults.Add(1)
			return errInjected
		}
		return nil
	}))
	users := []fg.UserID{1, 2, 3, 4, 1 << 40, fg.MaxUserID}
	var edges []edgeKey
	for _, a := range users {
		for _, b := range users {
			if a != b {
				edges = append(edges, edgeKey{a, b})
			}
		}
	}
	// The serialized edges (even indexes), with their last acknowledged
	// change: the follow time, or -1 when unfollowed.
	locks := make([]sync.Mutex, len(edges))
	last := make([]int64, len(edges))
	for i := range last {
		last[i] = -1
	}
	const workers, ops = 16, 200
	var acked atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for range ops {
				i := rng.IntN(len(edges))
				e := edges[i]
				if i%2 == 0 {
					locks[i].Lock()
				}
				var err error
				if rng.IntN(2) == 0 {
					var res fg.FollowResult
					if res, err = g.Follow(t.Context(), e.user, e.target); err == nil {
						if res.Created {
							acked.Add(1)
						}
						if i%2 == 0 {
							last[i] = res.Since.UnixMilli()
						}
					}
				} else {
					var removed bool
					if removed, err = g.Unfollow(t.Context(), e.user, e.target); err == nil {
						if removed {
							acked.Add(1)
						}
						if i%2 == 0 {
							last[i] = -1
						}
					}
				}
				if i%2 == 0 {
					locks[i].Unlock()
				}
				if err != nil {
					t.Errorf("%d→%d: %v", e.user, e.target, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	failing.Store(false)
	deferred := counter(t, reg, metricDeferred)
	if deferred == 0 {
		t.Logf("no second step failed every retry (%d injected failures)", faults.Load())
	}
	repaired, err := g.Repair(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if float64(repaired) > deferred {
		t.Errorf("Repair changed %d second steps, but only %v were deferred", repaired, deferred)
	}
	t.Logf("%d changes, %d injected failures, %v second steps deferred, %d repaired", acked.Load(), faults.Load(), deferred, repaired)

	streams := outboxEvents(t, g, users)
	n := 0
	for _, es := range streams {
		n += len(es)
	}
	if int64(n) != acked.Load() {
		t.Errorf("the outbox holds %d events, want one for each of the %d changes acknowledged", n, acked.Load())
	}
	want := make(map[edgeKey]int64)
	for e, ev := range latest(streams) {
		if ev.Op == fg.OpFollow {
			want[e] = ev.Version.Millis()
		}
	}
	for i, e := range edges {
		ms, ok := want[e]
		if !ok {
			ms = -1
		}
		if i%2 == 0 && ms != last[i] {
			t.Errorf("%d→%d: the last acknowledged change left follow time %d, the outbox's latest event %d (-1: none)",
				e.user, e.target, last[i], ms)
		}
	}
	checkGraph(t, g, users, want)

	// Repair again changes nothing.
	if n, err := g.Repair(t.Context()); err != nil || n != 0 {
		t.Errorf("Repair after Repair = %d, %v; want 0, nil", n, err)
	}
}

// TestClusterCrashBetweenSteps leaves second steps undone, as a crash
// between the two steps would, and checks what readers see meanwhile: the
// follower's side shows the change, the followee's side does not yet. Then
// Repair, or the same write again, completes it.
func TestClusterCrashBetweenSteps(t *testing.T) {
	var crashed atomic.Bool // whether every second step is lost
	reg := prometheus.NewRegistry()
	g := newTestGraph(t, redistest.Cluster(t), WithRegisterer(reg), withSecondStepFault(func(fg.Event) error {
		if crashed.Load() {
			return errInjected
		}
		return nil
	}))
	ctx := t.Context()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}

	// 5 follows 6 in full; then every second step is lost.
	_, err := g.Follow(ctx, 5, 6)
	must(err)
	crashed.Store(true)
	res, err := g.Follow(ctx, 1, 2)
	must(err)
	if !res.Created {
		t.Fatal("Follow(1, 2).Created = false")
	}
	_, err = g.Follow(ctx, 3, 4)
	must(err)
	_, err = g.Unfollow(ctx, 3, 4) // both second steps lost
	must(err)
	_, err = g.Unfollow(ctx, 5, 6)
	must(err)
	_, err = g.Follow(ctx, 7, 8)
	must(err)
	if d := counter(t, reg, metricDeferred); d != 5 {
		t.Errorf("%s = %v, want 5", metricDeferred, d)
	}

	// Between the steps: the follower's side has changed.
	e, err := g.IsFollowing(ctx, 1, 2)
	must(err)
	if !e.Following || !e.Since.Equal(res.Since) {
		t.Errorf("IsFollowing(1, 2) between the steps = %+v, want following since %v", e, res.Since)
	}
	rel, err := g.Relations(ctx, 1, []fg.UserID{2})
	must(err)
	if rel[0].Relation != fg.RelationFollowing {
		t.Errorf("Relations(1, [2]) between the steps = %v, want following", rel[0].Relation)
	}
	// The followee's side has not.
	rel, err = g.Relations(ctx, 2, []fg.UserID{1})
	must(err)
	if rel[0].Relation != fg.RelationNone {
		t.Errorf("Relations(2, [1]) between the steps = %v, want none", rel[0].Relation)
	}
	c, err := g.Counts(ctx, []fg.UserID{1, 2, 5, 6})
	must(err)
	want := []fg.Counts{{ID: 1, FollowingCount: 1}, {ID: 2}, {ID: 5}, {ID: 6, FollowerCount: 1}}
	if !slices.Equal(c, want) {
		t.Errorf("Counts between the steps = %+v, want %+v", c, want)
	}
	p, err := g.Followers(ctx, 6, fg.PageRequest{})
	must(err)
	if len(p.Entries) != 1 || p.Entries[0].ID != 5 {
		t.Errorf("Followers(6) between the steps = %v, want 5 still", p.Entries)
	}

	// The same write again completes its own second step.
	crashed.Store(false)
	res7, err := g.Follow(ctx, 7, 8)
	must(err)
	if res7.Created {
		t.Error("Follow(7, 8) again: Created = true, want false")
	}
	p, err = g.Followers(ctx, 8, fg.PageRequest{})
	must(err)
	if len(p.Entries) != 1 || p.Entries[0].ID != 7 || !p.Entries[0].Since.Equal(res7.Since) {
		t.Errorf("Followers(8) after Follow(7, 8) again = %v, want 7 since %v", p.Entries, res7.Since)
	}

	// The outbox lists what may be pending; settling 1's events (as the
	// relay does before it trims them) completes 1→2.
	pending, err := g.outbox.Pending(ctx)
	must(err)
	for _, u := range []fg.UserID{1, 3, 5, 7} {
		if !slices.Contains(pending, g.ks.Outbox(u)) {
			t.Errorf("PendingOutboxStreams() = %v, without %s, the stream of user %d", pending, g.ks.Outbox(u), u)
		}
	}
	entries, err := g.outbox.Read(ctx, g.ks.Outbox(1), "", 100)
	must(err)
	var ones []fg.Event
	for _, e := range entries {
		if e.Event.User == 1 {
			ones = append(ones, e.Event)
		}
	}
	must(g.outbox.Settle(ctx, ones))
	p, err = g.Followers(ctx, 2, fg.PageRequest{})
	must(err)
	if len(p.Entries) != 1 || p.Entries[0].ID != 1 || !p.Entries[0].Since.Equal(res.Since) {
		t.Errorf("Followers(2) after SettleOutbox = %v, want 1 since %v", p.Entries, res.Since)
	}

	// Repair brings the rest in line: 3→4 not followed, 5→6 not.
	n, err := g.Repair(ctx)
	must(err)
	if n != 3 { // 3→4 followed then unfollowed (in stream order), 5→6
		t.Errorf("Repair() = %d, want 3", n)
	}
	users := []fg.UserID{1, 2, 3, 4, 5, 6, 7, 8}
	checkGraph(t, g, users, map[edgeKey]int64{{1, 2}: res.Since.UnixMilli(), {7, 8}: res7.Since.UnixMilli()})
	for _, u := range users {
		if p, err := g.Mutuals(ctx, u, fg.PageRequest{}); err != nil || p.Count != 0 {
			t.Errorf("Mutuals(%d) = %+v, %v; want none", u, p, err)
		}
	}
}

// TestClusterApply applies events on a Cluster, where Apply writes the two
// sides in two steps.
func TestClusterApply(t *testing.T) {
	g := newTestGraph(t, redistest.Cluster(t))
	v := fg.VersionAt(1_700_000_000_000)
	events := []fg.Event{
		fg.NewEvent(1, 2, fg.OpFollow, v),
		fg.NewEvent(1, 2, fg.OpUnfollow, v+1),
		fg.NewEvent(1, 2, fg.OpFollow, v+2),
		fg.NewEvent(3, 1, fg.OpFollow, v+5),
	}
	for _, order := range [][]int{{0, 1, 2, 3}, {3, 2, 1, 0}, {1, 3, 0, 2}} {
		batch := make([]fg.Event, len(order))
		for i, j := range order {
			batch[i] = events[j]
		}
		if err := g.Apply(t.Context(), batch); err != nil {
			t.Fatal(err)
		}
		checkGraph(t, g, []fg.UserID{1, 2, 3}, map[edgeKey]int64{{1, 2}: v.Millis(), {3, 1}: v.Millis()})
		if t.Failed() {
			t.Fatalf("after Apply in order %v", order)
		}
	}
	if es := outboxEvents(t, g, []fg.UserID{1, 3}); len(es[g.ks.Outbox(1)])+len(es[g.ks.Outbox(3)]) != 0 {
		t.Errorf("Apply wrote events to the outbox: %v", es)
	}
}

// TestClusterJobStepFaults: on a Cluster, the second step of a batch of
// an account-state job (the user's side, once the counterparts' sides are
// written) fails at random, as a crash between the two would leave it.
// The runner, run again after each failure as serve runs it, resumes: the
// hide ends with every list agreeing with its count and user 1 in nobody's
// list or flags; the restore brings every edge back as it was, with its
// version and since; the delete then leaves no edge with user 1 anywhere.
func TestClusterJobStepFaults(t *testing.T) {
	var failed atomic.Int64
	var armed atomic.Bool // the next step fails: each job has at least one failure
	g := newTestGraph(t, redistest.Cluster(t), withJobStepFault(func(fg.UserID) error {
		if armed.CompareAndSwap(true, false) || rand.IntN(3) == 0 {
			failed.Add(1)
			return errInjected
		}
		return nil
	}))
	ctx := t.Context()
	users, _ := archiveFixture(t, g, 1000)
	before := archiveSnapshot(t, g, users)

	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { // as serve's runJobs: again after each failure
		defer close(done)
		for runCtx.Err() == nil {
			_ = g.RunJobs(runCtx, 0)
		}
	}()
	t.Cleanup(func() { stop(); <-done })

	for _, st := range []fg.State{fg.StateSuspended, fg.StateActive, fg.StateDeleted} {
		was := failed.Load()
		armed.Store(true)
		if _, err := g.SetState(ctx, 1, st); err != nil {
			t.Fatal(err)
		}
		if err := redistest.WaitFor(time.Minute, func() bool {
			_, err := g.c.Do(ctx, g.c.B().Zscore().Key(g.ks.Jobs(1)).Member("1").Build()).AsFloat64()
			return rueidis.IsRedisNil(err)
		}); err != nil {
			t.Fatalf("the %s job is not done after a minute", st)
		}
		if failed.Load() == was {
			t.Errorf("the %s job had no batch fail: the test tests nothing", st)
		}
		snap := archiveSnapshot(t, g, users)
		if st.Active() {
			for _, u := range users {
				if !reflect.DeepEqual(snap[u], before[u]) {
					t.Errorf("user %d after the restore:\n%+v\nwas\n%+v", u, snap[u], before[u])
				}
			}
			checkNoHiddenEdges(t, g, users...)
			continue
		}
		checkArchived(t, snap, before, 1)
		if st == fg.StateDeleted {
			checkNoHiddenEdges(t, g, users...)
		}
	}
}
