package redisgraph

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/rueidis"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/internal/testenv"
	"github.com/followgraph/followgraph/redisgraph/internal/layout"
)

// The tests run against a real Redis: a standalone one named by
// FOLLOWGRAPH_TEST_REDIS, and a Redis Cluster of three masters that the
// tests start themselves, on free ports, with redis-server and redis-cli
// (and stop in TestMain). Each test uses keys of its own prefix and
// deletes them when it ends.

func TestMain(m *testing.M) {
	code := m.Run()
	testCluster.stop()
	os.Exit(code)
}

// sharedClient is a client made once and shared by the tests.
type sharedClient struct {
	once sync.Once
	opt  rueidis.ClientOption // to make another client of the same Redis
	c    rueidis.Client
	err  error
}

var standalone, cluster sharedClient

// standaloneClient returns a client of the standalone Redis, or skips.
func standaloneClient(tb testing.TB) rueidis.Client {
	tb.Helper()
	url := testenv.Server(tb, testenv.Redis, testenv.RedisHint)
	standalone.once.Do(func() {
		standalone.opt, standalone.err = ParseURL(url)
		if standalone.err == nil {
			standalone.c, standalone.err = rueidis.NewClient(standalone.opt)
		}
	})
	if standalone.err != nil {
		tb.Fatalf("connecting to %s: %v", url, standalone.err)
	}
	if standalone.c.Mode() != rueidis.ClientModeStandalone {
		tb.Fatalf("%s is a %s Redis, want a standalone one", url, standalone.c.Mode())
	}
	return standalone.c
}

// clusterClient returns a client of the test Cluster, starting the
// Cluster on first use, or skips.
func clusterClient(tb testing.TB) rueidis.Client {
	tb.Helper()
	testenv.Server(tb, testenv.Redis, testenv.RedisHint)
	for _, bin := range []string{"redis-server", "redis-cli"} {
		if _, err := exec.LookPath(bin); err != nil {
			testenv.Skip(tb, bin+" is not on PATH: the Cluster tests start a Redis Cluster of their own with redis-server and redis-cli")
		}
	}
	cluster.once.Do(func() {
		addrs, err := testCluster.start()
		if err != nil {
			cluster.err = err
			return
		}
		cluster.opt, cluster.err = ParseURL("redis+cluster://" + strings.Join(addrs, ","))
		if cluster.err == nil {
			cluster.c, cluster.err = rueidis.NewClient(cluster.opt)
		}
	})
	if cluster.err != nil {
		tb.Fatalf("starting a Redis Cluster: %v", cluster.err)
	}
	return cluster.c
}

// modes are the two layouts, for tests that run on both.
var modes = []struct {
	name   string
	client func(testing.TB) rueidis.Client
	shared *sharedClient
}{
	{"Standalone", standaloneClient, &standalone},
	{"Cluster", clusterClient, &cluster},
}

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
		keys := g.userKeys(nil, u)
		v, err := parseView(g.c.Do(context.Background(), g.viewCmd(u)))
		if err != nil {
			tb.Errorf("reading the chunks of %d: %v", u, err)
			return
		}
		for _, grp := range layout.Groups {
			for _, k := range grp.Keys {
				keys = append(keys, g.chunkKeys(u, v, k)[1:]...)
			}
		}
		cmds = append(cmds, g.c.B().Unlink().Key(keys...).Build())
	}
	for i, key := range g.outboxKeys() {
		cmds = append(cmds, g.c.B().Unlink().Key(key).Build(), g.c.B().Unlink().Key(g.markerKey(i)).Build(),
			g.c.B().Unlink().Key(key+":jobs").Build(), g.c.B().Unlink().Key(key+":jobs:lease").Build(),
			g.c.B().Unlink().Key(g.checkpointKey(uint16(i))).Build(),
			g.c.B().Unlink().Key(g.tickKey(Server{Slots: [][2]uint16{{uint16(i), uint16(i)}}})).Build())
	}
	for _, r := range g.c.DoMulti(context.Background(), cmds...) {
		if err := r.Error(); err != nil {
			tb.Errorf("deleting the keys of %s: %v", g.prefix, err)
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
		cmds = append(cmds, rueidis.CT(g.c.B().Get().Key(g.prefix+":{"+u.String()+"}:"+barrier).Cache(), time.Second))
	}
	for _, r := range g.c.DoMultiCache(context.Background(), cmds...) {
		if err := r.Error(); err != nil && !rueidis.IsRedisNil(err) {
			tb.Errorf("waiting for the invalidations of %s: %v", g.prefix, err)
		}
	}
}

// localCluster is a Redis Cluster of three masters in a temporary folder.
type localCluster struct {
	mu    sync.Mutex
	dir   string
	procs []*exec.Cmd
}

var testCluster localCluster

func (lc *localCluster) start() ([]string, error) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	dir, err := os.MkdirTemp("", "redisgraph-cluster-")
	if err != nil {
		return nil, err
	}
	lc.dir = dir
	var addrs []string
	for range 3 {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		p := strconv.Itoa(port)
		cmd := exec.Command("redis-server", "--port", p, "--bind", "127.0.0.1",
			"--cluster-enabled", "yes", "--cluster-config-file", "nodes-"+p+".conf",
			"--save", "", "--appendonly", "no", "--dir", dir, "--logfile", "redis-"+p+".log")
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		lc.procs = append(lc.procs, cmd)
		addrs = append(addrs, "127.0.0.1:"+p)
	}
	for _, a := range addrs {
		if err := waitFor(10*time.Second, func() bool {
			c, err := net.Dial("tcp", a)
			if err == nil {
				c.Close()
			}
			return err == nil
		}); err != nil {
			return nil, fmt.Errorf("redis-server on %s did not start: %w", a, err)
		}
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command("redis-cli", args...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("redis-cli --cluster create: %v\n%s", err, out)
	}
	for _, a := range addrs {
		host, port, _ := net.SplitHostPort(a)
		if err := waitFor(30*time.Second, func() bool {
			out, err := exec.Command("redis-cli", "-h", host, "-p", port, "cluster", "info").Output()
			return err == nil && strings.Contains(string(out), "cluster_state:ok")
		}); err != nil {
			return nil, fmt.Errorf("the Cluster node %s is not ok: %w", a, err)
		}
	}
	return addrs, nil
}

func (lc *localCluster) stop() {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if cluster.c != nil {
		cluster.c.Close()
	}
	for _, p := range lc.procs {
		p.Process.Kill()
		p.Wait()
	}
	if lc.dir != "" {
		os.RemoveAll(lc.dir)
	}
}

// freePort returns a port that is free, and whose cluster bus port (the
// port + 10000) is free too.
func freePort() (int, error) {
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if port+10000 > 65535 {
			continue
		}
		bus, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port+10000))
		if err != nil {
			continue
		}
		bus.Close()
		return port, nil
	}
	return 0, fmt.Errorf("no free port pair found")
}

// privateRedis starts a standalone redis-server of the test's own on a
// free port, which the test may pause (SIGSTOP) without holding up other
// tests, and returns its address and process; it is stopped when the test
// ends. It skips as clusterClient does.
func privateRedis(tb testing.TB) (string, *os.Process) {
	tb.Helper()
	testenv.Server(tb, testenv.Redis, testenv.RedisHint)
	if _, err := exec.LookPath("redis-server"); err != nil {
		testenv.Skip(tb, "redis-server is not on PATH: this test starts a Redis of its own with it")
	}
	port, err := freePort()
	if err != nil {
		tb.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	cmd := exec.Command("redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", tb.TempDir(), "--logfile", "redis.log")
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGCONT)
		cmd.Process.Kill()
		cmd.Wait()
	})
	if err := waitFor(10*time.Second, func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	}); err != nil {
		tb.Fatalf("redis-server on %s did not start: %v", addr, err)
	}
	return addr, cmd.Process
}

func waitFor(d time.Duration, ok func() bool) error {
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			return fmt.Errorf("gave up after %v", d)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

// commandStat returns the calls and usec of INFO commandstats' line of
// cmd (0, 0 when Redis has none yet).
func commandStat(tb testing.TB, c rueidis.Client, cmd string) (calls, usec int64) {
	tb.Helper()
	info, err := c.Do(context.Background(), c.B().Info().Section("commandstats").Build()).ToString()
	if err != nil {
		tb.Fatal(err)
	}
	for line := range strings.Lines(info) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_"+cmd+":"); ok {
			if _, err := fmt.Sscanf(strings.ReplaceAll(rest, ",", " "), "calls=%d usec=%d", &calls, &usec); err != nil {
				tb.Fatalf("cmdstat_%s %q: %v", cmd, rest, err)
			}
			return calls, usec
		}
	}
	return 0, 0
}

// CommandStat is commandStat, for the benchmarks of package
// redisgraph_test.
var CommandStat = commandStat
