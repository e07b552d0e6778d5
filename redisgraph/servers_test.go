package redisgraph

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/redisgraph/internal/layout"
	"github.com/followgraph/followgraph/redisgraph/internal/lists"
	"github.com/followgraph/followgraph/redisgraph/internal/redistest"
)

// TestMain stops the Redis Cluster the tests started, if any.
func TestMain(m *testing.M) { redistest.Main(m) }

// The tests run against a real Redis: a standalone one named by
// FOLLOWGRAPH_TEST_REDIS, and a Redis Cluster of three masters that the
// tests start themselves, on free ports, with redis-server and redis-cli
// (and stop in TestMain). Each test uses keys of its own prefix and
// deletes them when it ends.

// modes are the two layouts, for tests that run on both.
var modes = redistest.Modes

// testGraph is a Graph that records the users its writes name, so that
// their keys can be deleted when the test ends: only writes make keys.
type testGraph struct {
	*Graph
	mu    sync.Mutex
	users map[fg.UserID]bool
}

// newTestGraph returns a Graph on c with a prefix of its own, whose keys
// are deleted when the test ends.
func newTestGraph(tb testing.TB, c rueidis.Client, opts ...Option) *testGraph {
	tb.Helper()
	return newTestGraphPrefix(tb, c, randomPrefix(), opts...)
}

// newTestGraphPrefix is newTestGraph with the prefix given.
func newTestGraphPrefix(tb testing.TB, c rueidis.Client, prefix string, opts ...Option) *testGraph {
	tb.Helper()
	g := newTestGraphPrefixScoped(tb, c, prefix, testScope, opts...)
	if err := g.VouchAll(context.Background(), 0); err != nil {
		tb.Fatal(err)
	}
	return g
}

// newTestGraphPrefixScoped is newTestGraphPrefix with the vouch scope
// given, and no server vouched for.
func newTestGraphPrefixScoped(tb testing.TB, c rueidis.Client, prefix, scope string, opts ...Option) *testGraph {
	tb.Helper()
	g, err := New(tb.Context(), c, append([]Option{WithPrefix(prefix), WithVouchScope(scope)}, opts...)...)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := g.InitOutbox(context.Background()); err != nil {
		tb.Fatal(err)
	}
	tg := &testGraph{Graph: g, users: make(map[fg.UserID]bool)}
	tb.Cleanup(func() {
		g.Close()
		tg.deleteKeys(tb)
	})
	return tg
}

// testScope is the vouch scope (WithVouchScope) of the test Graphs, so
// that their vouched scripts are loaded once, not once a prefix.
const testScope = "fgtest"

func randomPrefix() string {
	var b [6]byte
	rand.Read(b[:])
	return "fgtest-" + hex.EncodeToString(b[:])
}

// touch records that users may have keys.
func (g *testGraph) touch(users ...fg.UserID) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, u := range users {
		g.users[u] = true
	}
}

func (g *testGraph) Follow(ctx context.Context, user, target fg.UserID) (fg.FollowResult, error) {
	g.touch(user, target)
	return g.Graph.Follow(ctx, user, target)
}

func (g *testGraph) Unfollow(ctx context.Context, user, target fg.UserID) (bool, error) {
	g.touch(user, target)
	return g.Graph.Unfollow(ctx, user, target)
}

func (g *testGraph) Block(ctx context.Context, user, target fg.UserID) (fg.LinkResult, error) {
	g.touch(user, target)
	return g.Graph.Block(ctx, user, target)
}

func (g *testGraph) Mute(ctx context.Context, user, target fg.UserID, d time.Duration) (fg.LinkResult, error) {
	g.touch(user)
	return g.Graph.Mute(ctx, user, target, d)
}

func (g *testGraph) SetPrivate(ctx context.Context, user fg.UserID, private bool) (fg.Settings, error) {
	g.touch(user)
	return g.Graph.SetPrivate(ctx, user, private)
}

func (g *testGraph) SetState(ctx context.Context, user fg.UserID, st fg.State) (fg.AccountState, error) {
	g.touch(user)
	return g.Graph.SetState(ctx, user, st)
}

func (g *testGraph) Apply(ctx context.Context, events []fg.Event) error {
	for _, e := range events {
		g.touch(e.User, e.Target)
	}
	return g.Graph.Apply(ctx, events)
}

// deleteKeys deletes the keys of every user recorded, and the outbox
// streams, their jobs sets and lease, the graph's markers (all of them:
// InitOutbox made them) and the checkpoints.
func (g *testGraph) deleteKeys(tb testing.TB) {
	g.mu.Lock()
	defer g.mu.Unlock()
	var cmds rueidis.Commands
	for u := range g.users {
		uk := g.ks.UserKeys(u)
		keys := uk[:]
		v, err := lists.ParseView(g.c.Do(context.Background(), g.lists.ViewCmd(u)))
		if err != nil {
			tb.Errorf("reading the chunks of %d: %v", u, err)
			return
		}
		for _, grp := range layout.Groups {
			for _, k := range grp.Keys {
				keys = append(keys, g.lists.ChunkKeys(u, v, k)[1:]...)
			}
		}
		cmds = append(cmds, g.c.B().Unlink().Key(keys...).Build())
	}
	for i, key := range g.ks.Outboxes() {
		cmds = append(cmds, g.c.B().Unlink().Key(key).Build(), g.c.B().Unlink().Key(g.ks.Marker(i)).Build(),
			g.c.B().Unlink().Key(key+":jobs").Build(), g.c.B().Unlink().Key(key+":jobs:lease").Build(),
			g.c.B().Unlink().Key(g.ks.Checkpoint(i)).Build(),
			g.c.B().Unlink().Key(g.ks.Tick(i)).Build())
	}
	for _, r := range g.c.DoMulti(context.Background(), cmds...) {
		if err := r.Error(); err != nil {
			tb.Errorf("deleting the keys of %s: %v", g.ks.Prefix(), err)
			return
		}
	}
}

// awaitInvalidations returns once the client-side cache has dropped what
// a change just made has invalidated (deleteKeys, when a test reads on). Redis pushes an invalidation on the
// connection that cached the key, which may not be the one that changed
// it, so it can arrive after the change's reply; a cached read sent next
// to the key's slot goes on that same connection, and its reply follows
// the push. A Redis that truly loses the graph closes the connections
// instead, and their caches go with them.
func (g *testGraph) awaitInvalidations(tb testing.TB) {
	g.mu.Lock()
	defer g.mu.Unlock()
	barrier := randomPrefix()
	var cmds []rueidis.CacheableTTL
	for u := range g.users {
		cmds = append(cmds, rueidis.CT(g.c.B().Get().Key(g.ks.Prefix()+":{"+u.String()+"}:"+barrier).Cache(), time.Second))
	}
	for _, r := range g.c.DoMultiCache(context.Background(), cmds...) {
		if err := r.Error(); err != nil && !rueidis.IsRedisNil(err) {
			tb.Errorf("waiting for the invalidations of %s: %v", g.ks.Prefix(), err)
		}
	}
}
