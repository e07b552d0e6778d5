package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/internal/testenv"
)

// The topology tests run several serve nodes on a Redis Cluster with
// replicas, NATS and PostgreSQL, under writers and readers that go
// through every node, and check what a client of the service can see:
// no read of an edge answers an older state than the last write of it
// acknowledged before the read began (a stale read), nothing acknowledged
// is lost, and the longest time with no acknowledged write.

// tracker is what the writers acknowledged, per edge, as the readers check
// it: safe for concurrent use.
type tracker struct {
	mu    sync.Mutex
	edges map[[2]fg.UserID]*tracked
	acks  []time.Time // when each acknowledged write was answered

	reads, refused, stale int
	staleExamples         []string
}

// tracked is one edge: its last acknowledged state, and a count of the
// writes sent, which a read compares before and after.
type tracked struct {
	ack    ack
	writes int  // writes of the edge sent so far
	busy   bool // a write of it is in flight
	unsure bool // a write of it failed: its state is unknown until the next is acknowledged
}

func newTracker() *tracker { return &tracker{edges: map[[2]fg.UserID]*tracked{}} }

func (tr *tracker) edge(e [2]fg.UserID) *tracked {
	t := tr.edges[e]
	if t == nil {
		t = &tracked{}
		tr.edges[e] = t
	}
	return t
}

// begin notes a write of e sent.
func (tr *tracker) begin(e [2]fg.UserID) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	t := tr.edge(e)
	t.writes++
	t.busy = true
}

// end notes the answer of the write of e: acknowledged with a, or failed.
func (tr *tracker) end(e [2]fg.UserID, a ack, err error) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	t := tr.edge(e)
	t.busy = false
	if err != nil {
		t.unsure = true
		return
	}
	t.ack, t.unsure = a, false
	tr.acks = append(tr.acks, time.Now())
}

// settled returns the acknowledged state of e and its count of writes,
// and whether it is settled: acknowledged, none in flight, none failed.
func (tr *tracker) settled(e [2]fg.UserID) (ack, int, bool) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	t := tr.edges[e]
	if t == nil || t.busy || t.unsure {
		return ack{}, 0, false
	}
	return t.ack, t.writes, true
}

// read notes a read of e that answered got (err nil) or failed, given
// what settled said before it was sent.
func (tr *tracker) read(e [2]fg.UserID, want ack, writes int, got fg.Edge, err error) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.reads++
	if err != nil {
		tr.refused++
		return
	}
	if t := tr.edges[e]; t.writes != writes {
		return // written meanwhile: either state is right
	}
	if got.Following != want.following || (want.following && !got.Since.Equal(want.since)) {
		tr.stale++
		if len(tr.staleExamples) < 5 {
			tr.staleExamples = append(tr.staleExamples, fmt.Sprintf("%d→%d acknowledged %+v, read %+v at %s",
				e[0], e[1], want, got, time.Now().Format("15:04:05.000")))
		}
	}
}

// longestGap returns the longest time between from and to with no write
// acknowledged.
func (tr *tracker) longestGap(from, to time.Time) time.Duration {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	ts := slices.Clone(tr.acks)
	slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
	gap, last := time.Duration(0), from
	for _, t := range ts {
		if t.Before(from) {
			continue
		}
		if t.After(to) {
			break
		}
		gap, last = max(gap, t.Sub(last)), t
	}
	return max(gap, to.Sub(last))
}

// acked returns every acknowledged edge's state, and the edges whose
// state is unknown.
func (tr *tracker) acked() (map[[2]fg.UserID]ack, [][2]fg.UserID) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	out := map[[2]fg.UserID]ack{}
	var unsure [][2]fg.UserID
	for e, t := range tr.edges {
		if t.busy || t.unsure {
			unsure = append(unsure, e)
			continue
		}
		if t.writes > 0 {
			out[e] = t.ack
		}
	}
	return out, unsure
}

// traffic is writers and readers going through nodes, each request to a
// node picked at random among those not killed.
type traffic struct {
	tr    *tracker
	mu    sync.Mutex
	nodes []*server
	dead  map[*server]bool
	stop  chan struct{}
	wg    sync.WaitGroup
	users int // writer w owns users w*perWriter+1 .. (w+1)*perWriter
}

const (
	perWriter     = 10
	trafficTarget = 300
)

// startTraffic starts writers and readers on nodes.
func startTraffic(nodes []*server, writers, readers int, seed uint64) *traffic {
	tf := &traffic{tr: newTracker(), nodes: nodes, dead: map[*server]bool{}, stop: make(chan struct{}), users: writers * perWriter}
	for w := range writers {
		tf.wg.Go(func() { tf.write(w, rand.New(rand.NewPCG(seed, uint64(w)))) })
	}
	for r := range readers {
		tf.wg.Go(func() { tf.readLoop(rand.New(rand.NewPCG(seed, 1000+uint64(r)))) })
	}
	return tf
}

// node returns a node that is not killed.
func (tf *traffic) node(r *rand.Rand) *server {
	tf.mu.Lock()
	defer tf.mu.Unlock()
	for {
		n := tf.nodes[r.IntN(len(tf.nodes))]
		if !tf.dead[n] {
			return n
		}
	}
}

// kill kills node n with SIGKILL; the traffic goes to the others.
func (tf *traffic) kill(n *server) {
	tf.mu.Lock()
	tf.dead[n] = true
	tf.mu.Unlock()
	n.kill()
}

func (tf *traffic) stopped() bool {
	select {
	case <-tf.stop:
		return true
	default:
		return false
	}
}

// write follows (70%) and unfollows edges of writer w's users until stop.
func (tf *traffic) write(w int, r *rand.Rand) {
	ctx := context.Background()
	for !tf.stopped() {
		e := [2]fg.UserID{fg.UserID(w*perWriter + 1 + r.IntN(perWriter)), fg.UserID(1 + r.IntN(trafficTarget))}
		if e[0] == e[1] {
			continue
		}
		c := tf.node(r).client
		tf.tr.begin(e)
		var a ack
		var err error
		if r.IntN(100) < 70 {
			var res fg.FollowResult
			if res, err = c.Follow(ctx, e[0], e[1]); err == nil {
				a = ack{following: true, since: res.Since}
			}
		} else {
			_, err = c.Unfollow(ctx, e[0], e[1])
		}
		tf.tr.end(e, a, err)
		if err != nil {
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// readLoop reads settled edges until stop, checking each answer.
func (tf *traffic) readLoop(r *rand.Rand) {
	ctx := context.Background()
	for !tf.stopped() {
		e := [2]fg.UserID{fg.UserID(1 + r.IntN(tf.users)), fg.UserID(1 + r.IntN(trafficTarget))}
		want, writes, ok := tf.tr.settled(e)
		if !ok {
			continue
		}
		got, err := tf.node(r).client.IsFollowing(ctx, e[0], e[1])
		tf.tr.read(e, want, writes, got, err)
		if err != nil {
			time.Sleep(10 * time.Millisecond)
		}
	}
}

func (tf *traffic) finish() {
	close(tf.stop)
	tf.wg.Wait()
}

// checkTraffic settles the unsure edges through a live node, waits until
// PostgreSQL holds every acknowledged write (up to limit), checks that
// every live node reads each acknowledged edge as acknowledged and that
// each user's following count equals its list, and that no read was
// stale. It returns when PostgreSQL had converged.
func checkTraffic(t *testing.T, d *deployment, tf *traffic, limit time.Duration) time.Time {
	t.Helper()
	ctx := context.Background()
	var live []*server
	for _, n := range tf.nodes {
		if !tf.dead[n] {
			live = append(live, n)
		}
	}
	acked, unsure := tf.tr.acked()
	// An edge whose last write failed may take either state, but Redis and
	// the store must come to agree on it (a heal replays late events).
	start := time.Now()
	for len(unsure) > 0 {
		rows := storeState(t, d.db, "")
		var left [][2]fg.UserID
		for _, e := range unsure {
			got, err := live[0].client.IsFollowing(ctx, e[0], e[1])
			if err != nil {
				t.Fatalf("settling %d→%d: %v", e[0], e[1], err)
			}
			if r := rows[e]; r.following != got.Following || (got.Following && !r.since.Equal(got.Since)) {
				left = append(left, e)
				continue
			}
			acked[e] = ack{following: got.Following, since: got.Since}
		}
		if unsure = left; len(unsure) > 0 && time.Since(start) > limit {
			t.Fatalf("after %v Redis and PostgreSQL still differ on %d edges whose last write failed, such as %v", limit, len(unsure), unsure[0])
		}
		time.Sleep(200 * time.Millisecond)
	}
	for {
		rows := storeState(t, d.db, "")
		var bad []string
		for e, a := range acked {
			if got := rows[e]; got.following != a.following || (a.following && !got.since.Equal(a.since)) {
				bad = append(bad, fmt.Sprintf("%d→%d acknowledged %+v, stored %+v", e[0], e[1], a, got))
			}
		}
		if len(bad) == 0 {
			break
		}
		if time.Since(start) > limit {
			t.Fatalf("after %v PostgreSQL still differs from %d acknowledged writes, such as:\n%s", limit, len(bad), strings.Join(bad[:min(5, len(bad))], "\n"))
		}
		time.Sleep(200 * time.Millisecond)
	}
	converged := time.Now()
	for _, n := range live {
		for e, a := range acked {
			got, err := n.client.IsFollowing(ctx, e[0], e[1])
			if err != nil {
				t.Fatalf("%s: %d→%d: %v", n.url, e[0], e[1], err)
			}
			if got.Following != a.following || (a.following && !got.Since.Equal(a.since)) {
				t.Fatalf("%s: %d→%d acknowledged %+v, reads %+v", n.url, e[0], e[1], a, got)
			}
		}
		for u := 1; u <= tf.users; u++ {
			id := fg.UserID(u)
			cs, err := n.client.Counts(ctx, []fg.UserID{id})
			if err != nil {
				t.Fatal(err)
			}
			p, err := n.client.Following(ctx, id, fg.PageRequest{Limit: 1000})
			if err != nil {
				t.Fatal(err)
			}
			if cs[0].FollowingCount != int64(len(p.Entries)) {
				t.Fatalf("%s: user %d counts %d following, lists %d", n.url, u, cs[0].FollowingCount, len(p.Entries))
			}
		}
	}
	tf.tr.mu.Lock()
	defer tf.tr.mu.Unlock()
	if tf.tr.stale > 0 {
		t.Errorf("%d of %d reads answered 200 with an older state than acknowledged, such as:\n%s",
			tf.tr.stale, tf.tr.reads, strings.Join(tf.tr.staleExamples, "\n"))
	}
	return converged
}

// TestFault_FailoverLaggingReplica: a Redis Cluster master is killed
// while its replica lags (cut off for 2 s: the master drops a replica
// whose output buffer passes 1 KiB, and the replica is stopped meanwhile),
// and the replica is promoted without the master's last acknowledged
// writes. Reads never answer the older state, no acknowledged write is
// lost, and the nodes heal the promoted master by themselves.
func TestFault_FailoverLaggingReplica(t *testing.T) {
	c := startCluster(t)
	d := newDeployment(t, "redis+cluster://"+strings.Join(c.addrs, ","), "", "")
	nodes := []*server{d.node(), d.node()}
	tf := startTraffic(nodes, 12, 3, 7)
	time.Sleep(1500 * time.Millisecond)
	begin := time.Now()
	c.killLaggingMaster(t, 2*time.Second)
	over := time.Now()
	time.Sleep(3 * time.Second)
	tf.finish()
	gap := tf.tr.longestGap(begin, time.Now())
	converged := checkTraffic(t, d, tf, 60*time.Second)
	if !slices.ContainsFunc(nodes, func(n *server) bool {
		return strings.Contains(n.logs.String(), "the Redis server is vouched for again")
	}) {
		t.Error("no node healed the promoted master")
	}
	tf.tr.mu.Lock()
	t.Logf("RELIABILITY | a Redis master killed while its replica lagged 2 s | %d acknowledged writes + %d reads (%d answered 503) | stale reads %d | longest time with no acknowledged write %.1f s | converged %.1f s after the failover |",
		len(tf.tr.acks), tf.tr.reads, tf.tr.refused, tf.tr.stale, gap.Seconds(), converged.Sub(over).Seconds())
	tf.tr.mu.Unlock()
}

// killLaggingMaster cuts a master's replica off for lag (the master drops
// a replica whose output buffer passes 1 KiB; the replica is stopped with
// SIGSTOP meanwhile), kills the master with SIGKILL, lets the replica go
// on, and waits until the Cluster has promoted it and is ok again.
func (c *testCluster) killLaggingMaster(t *testing.T, lag time.Duration) {
	t.Helper()
	master, replica := c.pair(t)
	cli(t, master, "config", "set", "client-output-buffer-limit", "replica 1024 1024 0")
	rp := c.procs[replica].Process
	rp.Signal(syscall.SIGSTOP)
	time.Sleep(lag)
	c.procs[master].Process.Kill()
	c.procs[master].Wait()
	delete(c.procs, master)
	rp.Signal(syscall.SIGCONT)
	for deadline := time.Now().Add(30 * time.Second); ; {
		if strings.Contains(cli(t, replica, "info", "replication"), "role:master") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the replica %s was not promoted within 30 s", replica)
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.waitOK(t)
}

// pair returns a master of the Cluster and its replica.
func (c *testCluster) pair(t *testing.T) (master, replica string) {
	t.Helper()
	ids := map[string]string{} // node id → address
	var lines [][]string
	var live string
	for a := range c.procs {
		live = a
		break
	}
	for _, line := range strings.Split(cli(t, live, "cluster", "nodes"), "\n") {
		f := strings.Fields(line)
		if len(f) < 4 {
			continue
		}
		addr, _, _ := strings.Cut(f[1], "@")
		ids[f[0]] = addr
		lines = append(lines, f)
	}
	for _, f := range lines {
		if strings.Contains(f[2], "slave") && c.procs[ids[f[3]]] != nil {
			addr, _, _ := strings.Cut(f[1], "@")
			if c.procs[addr] != nil {
				return ids[f[3]], addr
			}
		}
	}
	t.Fatal("no master with a live replica")
	return "", ""
}

// streamLeaderOf returns the server name of the leader of stream on the
// NATS at urls.
func streamLeaderOf(t *testing.T, urls, stream string) string {
	t.Helper()
	nc, err := nats.Connect(urls)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	if info := s.CachedInfo(); info.Cluster != nil && info.Cluster.Leader != "" {
		return info.Cluster.Leader
	}
	t.Fatalf("stream %s has no leader", stream)
	return ""
}

// cli runs redis-cli against addr and returns its output.
func cli(t *testing.T, addr string, args ...string) string {
	t.Helper()
	host, port, _ := net.SplitHostPort(addr)
	out, err := exec.Command("redis-cli", append([]string{"-h", host, "-p", port}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("redis-cli %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestFault_RedisRestartBehind: a standalone Redis is killed and started
// again from a snapshot taken a second and a half earlier, without the
// writes acknowledged since (as from an append-only file that missed its
// last second). Reads never answer the older state, no acknowledged write
// is lost, and the node heals Redis by itself.
func TestFault_RedisRestartBehind(t *testing.T) {
	r := startRedis(t)
	d := newDeployment(t, r.url(), "", "")
	nodes := []*server{d.node(), d.node()}
	tf := startTraffic(nodes, 12, 3, 8)
	time.Sleep(time.Second)
	addr := "127.0.0.1:" + r.port
	cli(t, addr, "bgsave")
	for deadline := time.Now().Add(10 * time.Second); strings.Contains(cli(t, addr, "info", "persistence"), "rdb_bgsave_in_progress:1"); {
		if time.Now().After(deadline) {
			t.Fatal("BGSAVE did not end within 10 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(1500 * time.Millisecond)
	begin := time.Now()
	r.kill()
	r.start()
	time.Sleep(3 * time.Second)
	tf.finish()
	gap := tf.tr.longestGap(begin, time.Now())
	converged := checkTraffic(t, d, tf, 60*time.Second)
	if !slices.ContainsFunc(nodes, func(n *server) bool {
		return strings.Contains(n.logs.String(), "the Redis server is vouched for again")
	}) {
		t.Error("no node healed the restarted Redis")
	}
	tf.tr.mu.Lock()
	t.Logf("RELIABILITY | Redis restarted from a snapshot 1.5 s old | %d acknowledged writes + %d reads (%d answered 503) | stale reads %d | longest time with no acknowledged write %.1f s | converged %.1f s after the restart |",
		len(tf.tr.acks), tf.tr.reads, tf.tr.refused, tf.tr.stale, gap.Seconds(), converged.Sub(begin).Seconds())
	tf.tr.mu.Unlock()
}

// add adds node n to the nodes the traffic goes to.
func (tf *traffic) add(n *server) {
	tf.mu.Lock()
	defer tf.mu.Unlock()
	tf.nodes = append(tf.nodes, n)
}

// startTogether starts n serve nodes of d at once, with extra flags, and
// fails t unless every one becomes ready.
func startTogether(t *testing.T, d *deployment, n int, extra ...string) []*server {
	t.Helper()
	nodes := make([]*server, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range nodes {
		dir := t.TempDir()
		wg.Go(func() { nodes[i], errs[i] = launchErr(t, dir, launchOptions{args: append(d.args(), extra...)}) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("node %d of %d started together: %v", i+1, n, err)
		}
	}
	return nodes
}

// fault is one fault of TestTopology: what it does, and how long it took.
type fault struct {
	name  string
	begin time.Time
	end   time.Time
}

// TestTopology: the production topology, whole, under traffic through
// every node: a Redis Cluster of three masters with a replica each
// (append-only file fsynced every second, node timeout 2 s) that the
// nodes also read from, a three-node NATS cluster with the stream on
// three replicas, PostgreSQL, and two serve nodes started together on
// the fresh deployment. Faults one after the other, each while writers
// and readers go on: the stream's NATS leader killed with SIGKILL (and
// started again); a Redis master killed while its replica lags; a serve
// node killed with SIGKILL (and started again); a replica stopped with
// SIGSTOP for 3 s while reads go to it. Then every acknowledged write
// reads as acknowledged on every node and in the database, no read of a
// settled edge answered an older state, every count equals its list, and
// reconcile finds no difference. Each fault's longest time with no
// acknowledged write is logged.
func TestTopology(t *testing.T) {
	nc := testenv.StartNATSCluster(t, 3)
	c := startCluster(t, "--cluster-node-timeout", "2000", "--appendonly", "yes", "--appendfsync", "everysec")
	d := newDeployment(t, "redis+cluster://"+strings.Join(c.addrs, ","), nc.URLs(), "")
	extra := []string{"--nats-replicas", "3", "--redis-replicas", "cluster"}
	nodes := startTogether(t, d, 2, extra...)
	tf := startTraffic(nodes, 12, 3, 9)
	var faults []fault
	run := func(name string, do func()) {
		time.Sleep(1500 * time.Millisecond)
		f := fault{name: name, begin: time.Now()}
		do()
		time.Sleep(2 * time.Second)
		f.end = time.Now()
		faults = append(faults, f)
	}
	run("kill -9 of the stream's NATS leader, started again", func() {
		leader := nc.Node(streamLeaderOf(t, d.nats, d.stream))
		nc.Kill(leader)
		time.Sleep(3 * time.Second)
		nc.Start(leader)
	})
	run("a Redis master killed while its replica lagged 2 s", func() { c.killLaggingMaster(t, 2*time.Second) })
	run("kill -9 of a serve node, started again", func() {
		tf.kill(nodes[0])
		tf.add(d.node(extra...))
	})
	run("a replica stopped for 3 s while reads go to it", func() {
		_, replica := c.pair(t)
		p := c.procs[replica].Process
		p.Signal(syscall.SIGSTOP)
		time.Sleep(3 * time.Second)
		p.Signal(syscall.SIGCONT)
	})
	tf.finish()
	served := 0.0
	for _, n := range tf.nodes {
		if !tf.dead[n] {
			served += metric(t, n, `followgraph_redis_replica_reads_total{result="served"}`)
		}
	}
	if served == 0 {
		t.Error("no read was served by a replica")
	}
	checkTraffic(t, d, tf, 60*time.Second)
	if n := reconcile(t, d, "--show", "20"); n != 0 {
		t.Errorf("reconcile reports %d differences between Redis and PostgreSQL", n)
	}
	tf.tr.mu.Lock()
	acks, reads, refused, stale := len(tf.tr.acks), tf.tr.reads, tf.tr.refused, tf.tr.stale
	tf.tr.mu.Unlock()
	t.Logf("TOPOLOGY | %d acknowledged writes, %d reads (%d answered 503, %.0f served by replicas on the live nodes), %d stale", acks, reads, refused, served, stale)
	for _, f := range faults {
		t.Logf("TOPOLOGY | %s | longest time with no acknowledged write %.1f s |", f.name, tf.tr.longestGap(f.begin, f.end).Seconds())
	}
}

// TestDeploy_HATopology runs deploy/compose/ha.yaml's topology on loopback,
// with its flags: three serve nodes that run the event log among them
// (--nats-cluster, its routes' password from a file), a Redis master with a
// replica they read from (--redis-replicas), and PostgreSQL. Started
// together, they all become ready; under traffic through the three, reads
// are served by the replica, none stale, and nothing acknowledged is lost.
func TestDeploy_HATopology(t *testing.T) {
	pg := testenv.Server(t, testenv.Postgres, testenv.PostgresHint)
	master := startRedis(t, "--appendonly", "yes", "--repl-diskless-sync-delay", "0")
	replica := startRedis(t, "--replicaof", "127.0.0.1", master.port)
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(cli(t, "127.0.0.1:"+replica.port, "info", "replication"), "master_link_status:up"); {
		if time.Now().After(deadline) {
			t.Fatal("the replica did not sync with its master within 30 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	d := &deployment{t: t, redis: master.url(), prefix: "fg", db: newDatabase(t, pg)}
	password := filepath.Join(t.TempDir(), "nats-route-password")
	if err := os.WriteFile(password, []byte("route-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var listen, routes []string
	for range 3 {
		addr := freeAddr(t)
		listen = append(listen, addr)
		routes = append(routes, "nats-route://followgraph@"+addr)
	}
	nodes := make([]*server, 3)
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for i := range nodes {
		dir := t.TempDir()
		args := []string{"--redis", d.redis, "--db", d.db, "--redis-replicas", replica.url(),
			"--nats-cluster", strings.Join(routes, ","), "--nats-cluster-password-file", password,
			"--nats-cluster-listen", listen[i], "--nats-node-name", fmt.Sprintf("followgraph-%d", i+1)}
		wg.Go(func() { nodes[i], errs[i] = launchErr(t, dir, launchOptions{args: args}) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("node %d of 3 started together: %v", i+1, err)
		}
	}
	for _, n := range nodes {
		if strings.Contains(n.logs.String(), "route-secret") {
			t.Fatal("a node logged the routes' password")
		}
	}
	tf := startTraffic(nodes, 12, 3, 10)
	time.Sleep(3 * time.Second)
	tf.finish()
	served := 0.0
	for _, n := range nodes {
		served += metric(t, n, `followgraph_redis_replica_reads_total{result="served"}`)
	}
	if served == 0 {
		t.Errorf("no read was served by the replica: %v lagged, %v failed", metric(t, nodes[0], `followgraph_redis_replica_reads_total{result="lagged"}`),
			metric(t, nodes[0], `followgraph_redis_replica_reads_total{result="failed"}`))
	}
	checkTraffic(t, d, tf, 60*time.Second)
}
