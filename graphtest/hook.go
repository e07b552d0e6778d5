package graphtest

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/followgraph/followgraph"
)

// recorder is a hook that records the events it receives and returns the
// error it was told to fail with. It is safe for concurrent use.
type recorder struct {
	mu     sync.Mutex
	events []followgraph.Event
	fail   error
	delay  time.Duration // how long it waits before it records an event
}

func (r *recorder) hook(_ context.Context, e followgraph.Event) error {
	r.mu.Lock()
	delay := r.delay
	r.mu.Unlock()
	time.Sleep(delay)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
	return r.fail
}

// failWith makes the hook return err from now on (nil: succeed).
func (r *recorder) failWith(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fail = err
}

// slow makes the hook wait d before it records an event, so that an
// engine that did not wait for its hook returns before the event is there.
func (r *recorder) slow(d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.delay = d
}

// take returns the events recorded since the last take.
func (r *recorder) take() []followgraph.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	es := r.events
	r.events = nil
	return es
}

// hooked builds a fresh engine, as fixture does, with a recorder as its hook.
func (s suite) hooked(tb testing.TB, maxFollowing int) (*fixture, *recorder) {
	tb.Helper()
	r := &recorder{}
	return s.fixtureWith(tb, Options{MaxFollowing: maxFollowing, Hook: r.hook}), r
}

// checkOneEvent reports unless es is one valid event of op on
// user→target at millisecond ms, and returns it.
func checkOneEvent(tb testing.TB, what string, es []followgraph.Event, op followgraph.Op, user, target followgraph.UserID, ms int64) followgraph.Event {
	tb.Helper()
	if len(es) != 1 {
		tb.Fatalf("%s: the hook had seen %d events %s when the write returned, want one %s event", what, len(es), formatEvents(es), op)
	}
	e := es[0]
	if e.Op != op || e.User != user || e.Target != target || e.Version.Millis() != ms {
		tb.Errorf("%s: the hook saw %s, want %s %d→%d at %s", what, formatEvents([]followgraph.Event{e}), op, user, target, formatTime(followgraph.Millis(ms)))
	}
	if err := e.Validate(); err != nil {
		tb.Errorf("%s: the hook saw an invalid event %s: %v", what, formatEvents([]followgraph.Event{e}), err)
	}
	return e
}

// checkNoEvent reports unless es is empty.
func checkNoEvent(tb testing.TB, what string, es []followgraph.Event) {
	tb.Helper()
	if len(es) != 0 {
		tb.Errorf("%s changed nothing, but the hook saw %s", what, formatEvents(es))
	}
}

// checkLater reports unless e's version is above prev's.
func checkLater(tb testing.TB, what string, e, prev followgraph.Event) {
	tb.Helper()
	if e.Version <= prev.Version {
		tb.Errorf("%s: version %d is not above the edge's previous version %d", what, e.Version, prev.Version)
	}
}

// testHookEveryChange: the hook sees each effective change once, by the
// time the write returns (the hook is slow, so an engine that did not wait
// for it would return first), with the event of that change: its user,
// target and op, a version above the edge's previous one, and the write's
// time, which for a follow is the returned Since. A write that changes
// nothing makes no event.
func (s suite) testHookEveryChange(t *testing.T) {
	f, r := s.hooked(t, 0)
	r.slow(2 * time.Millisecond)

	res := f.follow(1, 2)
	follow := checkOneEvent(t, "Follow(1, 2)", r.take(), followgraph.OpFollow, 1, 2, f.now())
	checkTime(t, "Follow(1, 2).Since, its event's time", res.Since, follow.Time.UnixMilli())

	f.advance(5)
	f.follow(1, 2)
	checkNoEvent(t, "Follow(1, 2) when 1 already follows 2", r.take())
	f.unfollow(2, 1)
	checkNoEvent(t, "Unfollow(2, 1), the other way of an edge", r.take())
	f.unfollow(3, 4)
	checkNoEvent(t, "Unfollow(3, 4) of users with no edges", r.take())

	f.unfollow(1, 2)
	unfollow := checkOneEvent(t, "Unfollow(1, 2)", r.take(), followgraph.OpUnfollow, 1, 2, f.now())
	checkLater(t, "Unfollow(1, 2)", unfollow, follow)
	f.unfollow(1, 2)
	checkNoEvent(t, "Unfollow(1, 2) of an edge already removed", r.take())

	f.advance(5)
	res = f.follow(1, 2)
	refollow := checkOneEvent(t, "Follow(1, 2) again", r.take(), followgraph.OpFollow, 1, 2, f.now())
	checkLater(t, "Follow(1, 2) again", refollow, unfollow)
	checkTime(t, "Follow(1, 2).Since again, its event's time", res.Since, refollow.Time.UnixMilli())
	checkEdge(t, "IsFollowing(1, 2)", f.edge(1, 2), followgraph.Edge{Following: true, Since: refollow.Time})

	// Changes of one edge within one millisecond have versions of their own.
	f.follow(1, 3)
	follow = checkOneEvent(t, "Follow(1, 3)", r.take(), followgraph.OpFollow, 1, 3, f.now())
	f.unfollow(1, 3)
	unfollow = checkOneEvent(t, "Unfollow(1, 3) in the same millisecond", r.take(), followgraph.OpUnfollow, 1, 3, f.now())
	checkLater(t, "Unfollow(1, 3) in the same millisecond", unfollow, follow)
}

// testHookRefusedWrite: a write refused for its input or the following
// limit makes no event.
func (s suite) testHookRefusedWrite(t *testing.T) {
	f, r := s.hooked(t, 1)
	f.follow(1, 2)
	checkOneEvent(t, "Follow(1, 2)", r.take(), followgraph.OpFollow, 1, 2, f.now())

	for _, tt := range []struct {
		what  string
		write func() error
		code  string
	}{
		{"Follow(1, 3) when 1 follows the maximum of 1", func() error { _, err := f.g.Follow(f.ctx, 1, 3); return err }, followgraph.EFollowingLimit},
		{"Follow(2, 2)", func() error { _, err := f.g.Follow(f.ctx, 2, 2); return err }, followgraph.ESelfFollow},
		{"Follow(0, 2)", func() error { _, err := f.g.Follow(f.ctx, 0, 2); return err }, followgraph.EInvalidID},
		{"Unfollow(1, 0)", func() error { _, err := f.g.Unfollow(f.ctx, 1, 0); return err }, followgraph.EInvalidID},
	} {
		checkCode(t, tt.what, tt.write(), tt.code)
		checkNoEvent(t, tt.what, r.take())
	}
}

// testHookFailure: when the hook fails, the write fails with code
// unavailable (the hook's, passed on), having called the hook with its
// event. Its outcome is unknown, so the suite does not look at the graph;
// but a retry once the hook works again makes the write, and makes an
// event exactly when it reports a change.
func (s suite) testHookFailure(t *testing.T) {
	f, r := s.hooked(t, 0)
	refused := &followgraph.Error{Code: followgraph.EUnavailable, Message: "graphtest: the hook refuses the change"}

	r.failWith(refused)
	_, err := f.g.Follow(f.ctx, 1, 2)
	checkCode(t, "Follow(1, 2) whose hook failed", err, followgraph.EUnavailable)
	checkOneEvent(t, "Follow(1, 2) whose hook failed", r.take(), followgraph.OpFollow, 1, 2, f.now())

	r.failWith(nil)
	f.advance(5)
	res := f.follow(1, 2)
	if es := r.take(); res.Created {
		e := checkOneEvent(t, "Follow(1, 2) retried, Created", es, followgraph.OpFollow, 1, 2, f.now())
		checkTime(t, "Follow(1, 2).Since retried, its event's time", res.Since, e.Time.UnixMilli())
	} else {
		checkNoEvent(t, "Follow(1, 2) retried, not Created", es)
	}
	checkEdge(t, "IsFollowing(1, 2) after the retry", f.edge(1, 2), followgraph.Edge{Following: true, Since: res.Since})

	r.failWith(refused)
	f.advance(5)
	_, err = f.g.Unfollow(f.ctx, 1, 2)
	checkCode(t, "Unfollow(1, 2) whose hook failed", err, followgraph.EUnavailable)
	checkOneEvent(t, "Unfollow(1, 2) whose hook failed", r.take(), followgraph.OpUnfollow, 1, 2, f.now())

	r.failWith(nil)
	f.advance(5)
	if removed, es := f.unfollow(1, 2), r.take(); removed {
		checkOneEvent(t, "Unfollow(1, 2) retried, removed", es, followgraph.OpUnfollow, 1, 2, f.now())
	} else {
		checkNoEvent(t, "Unfollow(1, 2) retried, not removed", es)
	}
	checkEdge(t, "IsFollowing(1, 2) after the retry", f.edge(1, 2), followgraph.Edge{})
}

// testHookConcurrent: goroutines follow and unfollow a few edges at once.
// The hook sees exactly as many events of each edge as the writes report
// changes; in version order they alternate follow, unfollow, starting with
// a follow, and the last is the edge's state.
func (s suite) testHookConcurrent(t *testing.T) {
	const (
		workers = 8
		ops     = 60 // of each worker
		users   = 3  // 1 to users, and the edges among them
	)
	f, r := s.hooked(t, 0)
	var mu sync.Mutex
	changes := make(map[[2]followgraph.UserID]int)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 41))
			for i := range ops {
				user := followgraph.UserID(1 + rng.IntN(users))
				target := 1 + (user-1+followgraph.UserID(1+rng.IntN(users-1)))%users
				var changed bool
				var err error
				if rng.IntN(2) == 0 {
					var res followgraph.FollowResult
					res, err = f.g.Follow(f.ctx, user, target)
					changed = res.Created
				} else {
					changed, err = f.g.Unfollow(f.ctx, user, target)
				}
				if err != nil {
					t.Errorf("worker %d, write %d on %d→%d: %v", w, i, user, target, err)
					return
				}
				if changed {
					mu.Lock()
					changes[[2]followgraph.UserID{user, target}]++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	byEdge := make(map[[2]followgraph.UserID][]followgraph.Event)
	for _, e := range r.take() {
		k := [2]followgraph.UserID{e.User, e.Target}
		byEdge[k] = append(byEdge[k], e)
	}
	for user := followgraph.UserID(1); user <= users; user++ {
		for target := followgraph.UserID(1); target <= users; target++ {
			if user == target {
				continue
			}
			k := [2]followgraph.UserID{user, target}
			es := byEdge[k]
			slices.SortFunc(es, func(a, b followgraph.Event) int { return cmp.Compare(a.Version, b.Version) })
			if len(es) != changes[k] {
				t.Errorf("%d→%d: the writes reported %d changes, the hook saw %d events", user, target, changes[k], len(es))
				continue
			}
			for i, e := range es {
				want := followgraph.OpFollow
				if i%2 == 1 {
					want = followgraph.OpUnfollow
				}
				if e.Op != want || (i > 0 && e.Version <= es[i-1].Version) {
					t.Errorf("%d→%d: events %d and %d in version order are %s; want distinct versions, follow and unfollow in turn from a follow",
						user, target, i-1, i, formatEvents(es[max(i-1, 0):i+1]))
					break
				}
			}
			want := followgraph.Edge{}
			if len(es)%2 == 1 {
				want = followgraph.Edge{Following: true, Since: es[len(es)-1].Time}
			}
			checkEdge(t, fmt.Sprintf("IsFollowing(%d, %d), as its last event says", user, target), f.edge(user, target), want)
		}
	}
}
