package recovery

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/eventlog"
	"github.com/followgraph/followgraph/graphtest"
	"github.com/followgraph/followgraph/memgraph"
	"github.com/followgraph/followgraph/store/sqlite"
	"github.com/followgraph/followgraph/store/storetest"
)

// openParts opens an embedded log and a SQLite store in a folder of the
// test's, closed when it ends.
func openParts(t *testing.T) (*sqlite.Store, *eventlog.Log) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	store, err := sqlite.Open(ctx, filepath.Join(dir, "followgraph.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	log, err := eventlog.Open(ctx, eventlog.Config{Dir: filepath.Join(dir, "nats"), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	return store, log
}

// TestLoad: the store, then the log's tail over it in the log's order,
// across more than one batch of the spooled tail: the graph ends as the
// last event of each edge says.
func TestLoad(t *testing.T) {
	ctx := context.Background()
	store, log := openParts(t)
	v := fg.VersionAt(time.Now().UnixMilli())
	next := func() fg.Version { v++; return v }
	// In the store: 1 follows 2..101.
	var stored []fg.Event
	for t := range fg.UserID(100) {
		stored = append(stored, fg.NewEvent(1, 2+t, fg.OpFollow, next()))
	}
	if _, err := store.Apply(ctx, stored, 0); err != nil {
		t.Fatal(err)
	}
	// In the log: 1 unfollows 2..51; 3 follows and unfollows 10,000 users
	// in turn, then follows 4..5003 again; 4 follows 1.
	var tail []fg.Event
	for t := range fg.UserID(50) {
		tail = append(tail, fg.NewEvent(1, 2+t, fg.OpUnfollow, next()))
	}
	for t := range fg.UserID(5000) {
		tail = append(tail, fg.NewEvent(3, 4+t, fg.OpFollow, next()), fg.NewEvent(3, 4+t, fg.OpUnfollow, next()))
	}
	for t := range fg.UserID(5000) {
		tail = append(tail, fg.NewEvent(3, 4+t, fg.OpFollow, next()))
	}
	tail = append(tail, fg.NewEvent(4, 1, fg.OpFollow, next()))
	for _, e := range tail {
		if err := log.Publish(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	g := memgraph.New()
	if err := Load(ctx, g, store, log); err != nil {
		t.Fatal(err)
	}
	want := []fg.Counts{
		{ID: 1, FollowingCount: 50, FollowerCount: 1},
		{ID: 2},
		{ID: 3, FollowingCount: 5000},
		{ID: 4, FollowingCount: 1, FollowerCount: 1}, // 3 follows 4 again
		{ID: 52, FollowerCount: 2},                   // 1 kept it, 3 follows it again
	}
	ids := make([]fg.UserID, len(want))
	for i, c := range want {
		ids[i] = c.ID
	}
	got, err := g.Counts(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("counts after Load = %+v, want %+v", got[i], want[i])
		}
	}
	last := tail[len(tail)-2] // 3 follows 5003
	edge, err := g.IsFollowing(ctx, 3, 5003)
	if err != nil || !edge.Following || !edge.Since.Equal(last.Time) {
		t.Errorf("3→5003 after Load = %+v, %v; want following since %v, the last event of the edge", edge, err, last.Time)
	}
}

// TestSpool: the spooled tail gives back every event of the log as it
// was published, of every op, a mute's since and expiry and a state
// event's state included, in batches in the log's order.
func TestSpool(t *testing.T) {
	ctx := context.Background()
	_, log := openParts(t)
	v := fg.VersionAt(time.Now().UnixMilli())
	var sent []fg.Event
	for i := range spoolBatch + 10 {
		v++
		op := fg.Op(1 + i%11)
		e := fg.NewEvent(fg.UserID(1+i), fg.UserID(2+i), op, v)
		if e.PerUser() {
			e.Target = 0
		}
		if op == fg.OpState {
			e.State = fg.State(i / 11 % 4)
		}
		if op == fg.OpMute {
			e.Since = e.Time.Add(-time.Minute)
			if i%20 < 10 {
				e.Expires = e.Time.Add(time.Hour)
			}
		}
		if err := log.Publish(ctx, e); err != nil {
			t.Fatal(err)
		}
		sent = append(sent, e)
	}
	tail, err := spool(ctx, log)
	if err != nil {
		t.Fatal(err)
	}
	defer tail.close()
	var got []fg.Event
	batches := 0
	if err := tail.apply(ctx, func(_ context.Context, b []fg.Event) error {
		batches++
		got = append(got, b...)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if batches != 2 || len(got) != len(sent) {
		t.Fatalf("%d events in %d batches, want %d in 2", len(got), batches, len(sent))
	}
	for i := range sent {
		if !storetest.SameEvent(got[i], sent[i]) {
			t.Fatalf("event %d spooled as %+v, want %+v", i, got[i], sent[i])
		}
	}
}

// TestLoad_EveryKind: what the store holds of every kind, then the log's
// tail over it, reach the engine: a stored block and its ended follow, a
// stored request approved in the tail, a mute with its expiry, the
// private setting, and a block in the tail that ends a stored follow.
func TestLoad_EveryKind(t *testing.T) {
	ctx := context.Background()
	store, log := openParts(t)
	v := fg.VersionAt(time.Now().UnixMilli())
	next := func() fg.Version { v++; return v }
	expires := time.Now().Add(time.Hour).Truncate(time.Millisecond).UTC()
	mute := fg.NewEvent(1, 4, fg.OpMute, next())
	mute.Since, mute.Expires = mute.Time, expires
	stored := []fg.Event{
		fg.NewEvent(1, 2, fg.OpFollow, next()), fg.NewEvent(1, 2, fg.OpBlock, next()),
		fg.NewEvent(5, 0, fg.OpPrivate, next()), fg.NewEvent(3, 5, fg.OpRequest, next()),
		fg.NewEvent(6, 1, fg.OpFollow, next()), mute,
	}
	if _, err := store.Apply(ctx, stored, 0); err != nil {
		t.Fatal(err)
	}
	hide := fg.NewStateEvent(7, fg.StateSuspended, next()) // in the store: 7 follows 8, then is suspended
	if _, err := store.Apply(ctx, []fg.Event{fg.NewEvent(7, 8, fg.OpFollow, next()), hide}, 0); err != nil {
		t.Fatal(err)
	}
	del := fg.NewStateEvent(9, fg.StateDeleted, next()) // in the log's tail: 9 follows 8, then is deleted
	for _, e := range []fg.Event{fg.NewEvent(3, 5, fg.OpFollow, next()), fg.NewEvent(1, 6, fg.OpBlock, next()),
		fg.NewEvent(9, 8, fg.OpFollow, next()), del} {
		if err := log.Publish(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	g := memgraph.New()
	if err := Load(ctx, g, store, log); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		kind         fg.Kind
		user, target fg.UserID
		on           bool
	}{
		{fg.KindBlock, 1, 2, true}, {fg.KindBlock, 1, 6, true}, {fg.KindMute, 1, 4, true}, {fg.KindRequest, 3, 5, false},
	} {
		l, err := g.Link(ctx, c.kind, c.user, c.target)
		if err != nil || l.On != c.on {
			t.Errorf("%s %d→%d after Load = %+v, %v; want on %v", c.kind, c.user, c.target, l, err, c.on)
		}
	}
	if l, _ := g.Link(ctx, fg.KindMute, 1, 4); !l.Expires.Equal(expires) || !l.Since.Equal(mute.Since) {
		t.Errorf("the mute after Load = %+v, want since %v, expires %v", l, mute.Since, expires)
	}
	if s, err := g.Settings(ctx, 5); err != nil || !s.Private {
		t.Errorf("settings of 5 after Load = %+v, %v; want private", s, err)
	}
	for _, c := range []struct {
		user, target fg.UserID
		following    bool
	}{{1, 2, false}, {6, 1, false}, {3, 5, true}} {
		if e, err := g.IsFollowing(ctx, c.user, c.target); err != nil || e.Following != c.following {
			t.Errorf("%d→%d after Load = %+v, %v; want following %v", c.user, c.target, e, err, c.following)
		}
	}
	for _, c := range []struct {
		user  fg.UserID
		state fg.State
		since fg.Version
	}{{7, fg.StateSuspended, hide.Version}, {9, fg.StateDeleted, del.Version}} {
		if a, err := g.State(ctx, c.user); err != nil || a.State != c.state || !a.Since.Equal(c.since.Time()) {
			t.Errorf("State(%d) after Load = %+v, %v; want %s since %v", c.user, a, err, c.state, c.since.Time())
		}
	}
	// The jobs of the loaded states take 7 and 9 out of 8's followers;
	// 7's side stays stored, 9's is gone.
	graphtest.RunJobs(t, g, 0)
	graphtest.WaitJobs(t, g)
	if c, _ := g.Counts(ctx, []fg.UserID{8}); c[0].FollowerCount != 0 {
		t.Errorf("Counts(8) after the jobs = %+v, want no follower", c)
	}
	var kept []fg.Event
	for e := range g.OutEdges(7) {
		kept = append(kept, e)
	}
	if len(kept) != 1 || kept[0].Op != fg.OpFollow || kept[0].Target != 8 {
		t.Errorf("OutEdges(7) while suspended = %v, want its follow of 8, stored", kept)
	}
}

// TestLoad_Horizon: the graph takes the store's tombstone horizon, so an
// event of the log's tail older than a tombstone the store removed is
// refused, as the store refuses it, and the edge stays off.
func TestLoad_Horizon(t *testing.T) {
	ctx := context.Background()
	store, log := openParts(t)
	v := fg.VersionAt(time.Now().Add(-time.Hour).UnixMilli())
	if _, err := store.Apply(ctx, []fg.Event{
		fg.NewEvent(1, 2, fg.OpFollow, v), fg.NewEvent(1, 2, fg.OpUnfollow, v+1), fg.NewEvent(1, 3, fg.OpFollow, v+2),
	}, 1); err != nil {
		t.Fatal(err)
	}
	storetest.Purge(t, store, v+fg.VersionAt(1000), 10)
	h := v + 2 // just above the tombstone removed
	if got := storetest.Horizon(t, store); got != h {
		t.Fatalf("the store's tombstone horizon is %d, want %d", got, h)
	}
	for _, e := range []fg.Event{fg.NewEvent(1, 2, fg.OpFollow, v), fg.NewEvent(1, 4, fg.OpFollow, h)} {
		if err := log.Publish(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	var refused []fg.Refusal
	g := memgraph.New(memgraph.WithRefused(func(r fg.Refusal) { refused = append(refused, r) }))
	if err := Load(ctx, g, store, log); err != nil {
		t.Fatal(err)
	}
	if got := storetest.Horizon(t, g); got != h {
		t.Errorf("the graph's tombstone horizon is %d, want the store's %d", got, h)
	}
	for x, want := range map[fg.UserID]bool{2: false, 3: true, 4: true} {
		if e, err := g.IsFollowing(ctx, 1, x); err != nil || e.Following != want {
			t.Errorf("IsFollowing(1, %d) = %v, %v; want %v", x, e.Following, err, want)
		}
	}
	want := []fg.Refusal{{Effect: fg.Effect{Kind: fg.KindFollow, User: 1, Target: 2, On: true}, Version: v, Horizon: h}}
	if !slices.Equal(refused, want) {
		t.Errorf("refused %v, want %v", refused, want)
	}
}

// TestCheckHorizon: a log whose first waiting event is older than the
// store's tombstone horizon is a damage; one newer, or none, is not.
func TestCheckHorizon(t *testing.T) {
	ctx := context.Background()
	store, log := openParts(t)
	v := fg.VersionAt(time.Now().Add(-time.Hour).UnixMilli())
	if err := CheckHorizon(ctx, store, log, "persister"); err != nil {
		t.Fatalf("a new store and an empty log: %v", err)
	}
	storetest.Apply(t, store, 1, fg.NewEvent(5, 6, fg.OpUnfollow, v-1))
	storetest.Purge(t, store, v, 10) // the horizon is v
	if err := log.Publish(ctx, fg.NewEvent(1, 2, fg.OpFollow, v)); err != nil {
		t.Fatal(err)
	}
	if err := CheckHorizon(ctx, store, log, "persister"); err != nil {
		t.Fatalf("an event at the horizon: %v", err)
	}
	storetest.Apply(t, store, 2, fg.NewEvent(5, 7, fg.OpUnfollow, v+5))
	storetest.Purge(t, store, v+10, 10) // the horizon is v+6
	var d *Damage
	if err := CheckHorizon(ctx, store, log, "persister"); !errors.As(err, &d) || !strings.Contains(err.Error(), "tombstone horizon") {
		t.Fatalf("an event older than the horizon: %v, want a damage naming the tombstone horizon", err)
	}
}
