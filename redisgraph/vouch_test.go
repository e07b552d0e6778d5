package redisgraph

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/rueidis"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/redisgraph/internal/keyspace"
	"github.com/followgraph/followgraph/redisgraph/internal/layout"
	"github.com/followgraph/followgraph/redisgraph/internal/redistest"
)

// newUnvouched returns a Graph on c with a prefix and a vouch scope of its
// own, its outbox created but no server vouched for: as a deployment sees
// a server restarted, or a replica promoted.
func newUnvouched(t *testing.T, c rueidis.Client, opts ...Option) *testGraph {
	t.Helper()
	return newTestGraphPrefixScoped(t, c, randomPrefix(), randomPrefix(), opts...)
}

// TestVouch: on a server not vouched for, every read and live write
// answers EUnavailable, changes nothing and tells WithOnUnvouched; once
// vouched for, they are served. Deployments sharing a Redis vouch for
// their own data only: the tests' other Graphs are vouched for on these
// very servers.
func TestVouch(t *testing.T) {
	for _, m := range modes {
		t.Run(m.Name, func(t *testing.T) {
			var told atomic.Int64
			g := newUnvouched(t, m.Client(t), WithOnUnvouched(func(uint16) { told.Add(1) }))
			ctx := t.Context()
			if _, err := g.Follow(ctx, 1, 2); fg.ErrorCode(err) != fg.EUnavailable {
				t.Fatalf("a follow on a server not vouched for: %v, want %s", err, fg.EUnavailable)
			}
			if _, err := g.Block(ctx, 1, 3); fg.ErrorCode(err) != fg.EUnavailable {
				t.Fatalf("a block on a server not vouched for: %v, want %s", err, fg.EUnavailable)
			}
			if _, err := g.SetState(ctx, 1, fg.StateSuspended); fg.ErrorCode(err) != fg.EUnavailable {
				t.Fatalf("a change of state on a server not vouched for: %v, want %s", err, fg.EUnavailable)
			}
			if n, err := g.c.Do(ctx, g.c.B().Exists().Key(g.ks.User(1, layout.Out), g.ks.User(1, layout.Counters)).Build()).AsInt64(); err != nil || n != 0 {
				t.Fatalf("refused writes left %d keys (%v)", n, err)
			}
			if _, err := g.Counts(ctx, []fg.UserID{1}); fg.ErrorCode(err) != fg.EUnavailable {
				t.Errorf("counts on a server not vouched for: %v, want %s", err, fg.EUnavailable)
			}
			if _, err := g.Following(ctx, 1, fg.PageRequest{}); fg.ErrorCode(err) != fg.EUnavailable {
				t.Errorf("a list on a server not vouched for: %v, want %s", err, fg.EUnavailable)
			}
			if told.Load() == 0 {
				t.Error("WithOnUnvouched was not told")
			}
			srvs, err := g.Servers(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range srvs {
				if ok, err := g.Vouched(ctx, s); err != nil || ok {
					t.Fatalf("Vouched(%s) = %v, %v before Vouch", s, ok, err)
				}
			}
			if err := g.VouchAll(ctx, 7); err != nil {
				t.Fatal(err)
			}
			for _, s := range srvs {
				if ok, err := g.Vouched(ctx, s); err != nil || !ok {
					t.Fatalf("Vouched(%s) = %v, %v after Vouch", s, ok, err)
				}
				if seq, ok, err := g.CheckpointOf(ctx, s); err != nil || !ok || seq != 7 {
					t.Fatalf("CheckpointOf(%s) = %d, %v, %v after Vouch(7)", s, seq, ok, err)
				}
			}
			if _, err := g.Follow(ctx, 1, 2); err != nil {
				t.Fatalf("a follow once vouched for: %v", err)
			}
			if cs, err := g.Counts(ctx, []fg.UserID{1}); err != nil || cs[0].FollowingCount != 1 {
				t.Fatalf("counts once vouched for: %+v, %v", cs, err)
			}
		})
	}
}

// TestCheckpoint: Checkpoint raises every server's checkpoint, never
// lowers it, and leaves a server not vouched for as it is.
func TestCheckpoint(t *testing.T) {
	for _, m := range modes {
		t.Run(m.Name, func(t *testing.T) {
			g := newUnvouched(t, m.Client(t))
			ctx := t.Context()
			srvs, err := g.Servers(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := g.Checkpoint(ctx, 5); err != nil {
				t.Fatal(err)
			}
			if _, ok, err := g.CheckpointOf(ctx, srvs[0]); err != nil || ok {
				t.Fatalf("a server not vouched for has a checkpoint (%v, %v)", ok, err)
			}
			if err := g.VouchAll(ctx, 5); err != nil {
				t.Fatal(err)
			}
			for _, seq := range []uint64{40, 30} {
				if err := g.Checkpoint(ctx, seq); err != nil {
					t.Fatal(err)
				}
			}
			for _, s := range srvs {
				if seq, _, err := g.CheckpointOf(ctx, s); err != nil || seq != 40 {
					t.Errorf("CheckpointOf(%s) = %d, %v, want 40", s, seq, err)
				}
			}
		})
	}
}

// TestConfirm: a write whose server is healed (a new epoch) between the
// change and its acknowledgement, as when another node heals a promoted
// replica that may lack it, is not acknowledged: EUnavailable.
func TestConfirm(t *testing.T) {
	for _, m := range modes {
		t.Run(m.Name, func(t *testing.T) {
			c := m.Client(t)
			var other *testGraph
			healed := false
			g := newTestGraph(t, c, WithHook(func(ctx context.Context, e fg.Event) error {
				if healed {
					return nil
				}
				healed = true
				return other.VouchAll(ctx, 0) // another node heals meanwhile
			}))
			o, err := New(t.Context(), c, WithPrefix(g.ks.Prefix()), WithVouchScope(testScope))
			if err != nil {
				t.Fatal(err)
			}
			other = &testGraph{Graph: o}
			ctx := t.Context()
			if _, err := g.Follow(ctx, 1, 2); fg.ErrorCode(err) != fg.EUnavailable {
				t.Fatalf("a follow whose server was healed before it was acknowledged: %v, want %s", err, fg.EUnavailable)
			}
			if _, err := g.Follow(ctx, 1, 3); err != nil {
				t.Fatalf("the next follow: %v", err)
			}
		})
	}
}

// TestServers: the servers cover every slot once, and Touches finds the
// servers of an event's sides.
func TestServers(t *testing.T) {
	g := newTestGraph(t, redistest.Cluster(t))
	srvs, err := g.Servers(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for slot := range keyspace.Slots {
		n := 0
		for _, s := range srvs {
			if s.Has(uint16(slot)) {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("slot %d is served by %d servers", slot, n)
		}
	}
	e := fg.NewEvent(1, 2, fg.OpFollow, fg.VersionAt(1700000000000))
	for _, s := range srvs {
		want := s.Has(keyspace.SlotOf(1)) || s.Has(keyspace.SlotOf(2))
		if got := g.Touches(s, e); got != want {
			t.Errorf("Touches(%s, 1→2) = %v, want %v", s, got, want)
		}
	}
}

// TestConfirmShared: writes whose events reach the log together share the
// checks that acknowledge them. Batches of 16 follows by one user, held
// in their hook until all 16 are there, each acknowledged, need fewer
// checks than they wait for: on a standalone Redis 16 wait for the one
// group's check; on a Cluster each waits for its user's group (shared)
// and its target's.
func TestConfirmShared(t *testing.T) {
	const batch, batches = 16, 4
	for _, m := range modes {
		t.Run(m.Name, func(t *testing.T) {
			var mu sync.Mutex
			arrived, release := 0, make(chan struct{})
			g := newTestGraph(t, m.Client(t), WithHook(func(ctx context.Context, e fg.Event) error {
				mu.Lock()
				r := release
				if arrived++; arrived == batch {
					close(release)
				}
				mu.Unlock()
				<-r
				return nil
			}))
			ctx := t.Context()
			joined := 0 // the checks the follows wait for: one per slot group of each
			for b := range batches {
				mu.Lock()
				arrived, release = 0, make(chan struct{})
				mu.Unlock()
				var wg sync.WaitGroup
				for i := range batch {
					joined += len(g.ticket(1, fg.UserID(100+b*batch+i)).Groups())
					wg.Go(func() {
						if _, err := g.Follow(ctx, 1, fg.UserID(100+b*batch+i)); err != nil {
							t.Errorf("follow: %v", err)
						}
					})
				}
				wg.Wait()
			}
			sent := int(g.guard.Checks())
			if joined == 0 || sent > joined*3/4 {
				t.Errorf("%d follows in batches of %d waited for %d checks and sent %d, want at most 3/4 of them sent", batch*batches, batch, joined, sent)
			}
			if cs, err := g.Counts(ctx, []fg.UserID{1}); err != nil || cs[0].FollowingCount != batch*batches {
				t.Errorf("Counts = %v, %v; want %d following", cs, err, batch*batches)
			}
		})
	}
}
