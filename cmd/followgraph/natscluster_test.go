package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/client"
	"github.com/followgraph/followgraph/internal/testenv"
)

// The event log on a NATS cluster: nodes that start together on a fresh
// deployment, and a kill -9 under writes. FOLLOWGRAPH_TEST_START_TRIES
// sets how many times the start-together tests start a fresh deployment
// (3 by default; the target is every node ready in every try).

// startTries returns how many fresh deployments a start-together test
// starts.
func startTries(t *testing.T) int {
	t.Helper()
	if v := os.Getenv("FOLLOWGRAPH_TEST_START_TRIES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("FOLLOWGRAPH_TEST_START_TRIES=%q: want a positive number", v)
		}
		return n
	}
	return 3
}

// waitAllReady waits for every node to be ready, and returns the errors
// of those that were not.
func waitAllReady(nodes []*server, d time.Duration) []error {
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Go(func() { errs[i] = n.waitReady(d) })
	}
	wg.Wait()
	var out []error
	for i, err := range errs {
		if err != nil {
			out = append(out, fmt.Errorf("node %d: %w", i, err))
		}
	}
	return out
}

// TestServe_ClusterFlags: an embedded cluster that cannot work, or that
// would expose the log, is refused before anything starts.
func TestServe_ClusterFlags(t *testing.T) {
	routes := "nats-route://127.0.0.1:6222,nats-route://127.0.0.1:6223,nats-route://127.0.0.1:6224"
	base := servers{Data: t.TempDir(), Redis: "redis://r", DB: "postgres://p/db", NATSCluster: routes, NATSClusterListen: "127.0.0.1:6222"}
	tests := []struct {
		name     string
		change   func(*servers)
		replicas int
		insecure bool
		want     string // "" for none
	}{
		{"OK", func(*servers) {}, 3, false, ""},
		{"R1", func(*servers) {}, 1, false, ""},
		{"WithNATS", func(s *servers) { s.NATS = "nats://n:4222" }, 3, false, "cannot go with --nats"},
		{"NoListen", func(s *servers) { s.NATSClusterListen = "" }, 3, false, "needs --nats-cluster-listen"},
		{"NoRedis", func(s *servers) { s.Redis = "" }, 3, false, "needs --redis and --db"},
		{"NoDB", func(s *servers) { s.DB = "" }, 3, false, "needs --redis and --db"},
		{"TwoNodes", func(s *servers) { s.NATSCluster = "nats-route://127.0.0.1:6222,nats-route://127.0.0.1:6223" }, 1, false, "at least 3 nodes"},
		{"TooManyReplicas", func(*servers) {}, 5, false, "more than the cluster's 3 nodes"},
		{"Exposed", func(s *servers) { s.NATSClusterListen = "0.0.0.0:6222" }, 3, false, "without authentication"},
		{"ExposedInsecure", func(s *servers) { s.NATSClusterListen = "0.0.0.0:6222" }, 3, true, ""},
		{"ExposedAuth", func(s *servers) {
			s.NATSClusterListen = "0.0.0.0:6222"
			s.NATSCluster = strings.ReplaceAll(routes, "//", "//fg:secret@")
		}, 3, false, ""},
		{"ListenAlone", func(s *servers) { s.NATSCluster = "" }, 1, false, "need --nats-cluster"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := base
			tt.change(&s)
			err := s.checkCluster(tt.replicas, tt.insecure)
			if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Fatalf("checkCluster = %v, want %q", err, tt.want)
			}
		})
	}
	if got := natsReplicas(base, 0); got != 3 {
		t.Errorf("--nats-replicas defaults to %d with --nats-cluster, want 3", got)
	}
	if got := natsReplicas(servers{}, 0); got != 1 {
		t.Errorf("--nats-replicas defaults to %d without --nats-cluster, want 1", got)
	}
}

// TestNATSCluster_StartTogether: two serve nodes on a fresh three-node
// nats-server cluster (--nats with the three URLs, --nats-replicas 3),
// started with it: together; the serve nodes a second before NATS; and
// NATS's nodes and the serve nodes one by one in turn. Every node must
// become ready, having waited for the cluster to elect its leaders and
// raced the other to create the stream and record the store.
func TestNATSCluster_StartTogether(t *testing.T) {
	pg := testenv.Server(t, testenv.Postgres, testenv.PostgresHint)
	tries, ready := startTries(t), 0
	for try := range tries {
		c := testenv.NewNATSCluster(t, 3)
		redis, prefix := testRedis(t)
		args := []string{"--redis", redis, "--redis-prefix", prefix, "--nats", c.URLs(), "--nats-replicas", "3", "--db", newDatabase(t, pg)}
		node := func() *server { return spawn(t, t.TempDir(), launchOptions{args: args}) }
		var nodes []*server
		switch order := try % 3; order {
		case 0: // together
			for _, n := range c.Nodes {
				c.Start(n)
			}
			nodes = append(nodes, node(), node())
		case 1: // serve first
			nodes = append(nodes, node(), node())
			time.Sleep(time.Second)
			for _, n := range c.Nodes {
				c.Start(n)
			}
		case 2: // one by one
			for i, n := range c.Nodes {
				c.Start(n)
				time.Sleep(500 * time.Millisecond)
				if i < 2 {
					nodes = append(nodes, node())
				}
			}
		}
		errs := waitAllReady(nodes, 90*time.Second)
		for _, err := range errs {
			t.Errorf("try %d: %v", try, err)
		}
		if len(errs) == 0 {
			ready++
		}
		for _, n := range nodes {
			n.kill()
		}
		for _, n := range c.Nodes {
			c.Kill(n)
		}
	}
	t.Logf("START | external NATS cluster, 2 serve nodes | %d of %d tries every node ready |", ready, tries)
}

// embeddedCluster is a deployment of three serve nodes that each run a
// node of an embedded NATS cluster (--nats-cluster), on a Redis key
// prefix and a PostgreSQL database of the test's own.
type embeddedCluster struct {
	d     *deployment // its redis, prefix and db
	data  []string    // each node's data folder
	args  [][]string  // each node's flags
	nodes []*server
}

func newEmbeddedCluster(t *testing.T, pg string) *embeddedCluster {
	t.Helper()
	d := &deployment{t: t, db: newDatabase(t, pg)}
	d.redis, d.prefix = testRedis(t)
	c := &embeddedCluster{d: d}
	var listen, routes []string
	for range 3 {
		addr := freeAddr(t)
		listen = append(listen, addr)
		routes = append(routes, "nats-route://"+addr)
	}
	for i := range 3 {
		c.data = append(c.data, t.TempDir())
		c.args = append(c.args, []string{"--redis", d.redis, "--redis-prefix", d.prefix, "--db", d.db,
			"--nats-cluster", strings.Join(routes, ","), "--nats-cluster-listen", listen[i]})
	}
	c.nodes = make([]*server, 3)
	return c
}

// start starts node i, and does not wait for it.
func (c *embeddedCluster) start(i int) *server {
	c.nodes[i] = spawn(c.d.t, c.data[i], launchOptions{args: c.args[i]})
	return c.nodes[i]
}

// streamLeader returns the node whose embedded server was the last to
// log that it became the leader of the stream, or -1.
func (c *embeddedCluster) streamLeader() int {
	leader, at := -1, ""
	for i, n := range c.nodes {
		sc := bufio.NewScanner(strings.NewReader(n.logs.String()))
		for sc.Scan() {
			var line struct{ Time, Msg string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && strings.Contains(line.Msg, "new stream leader for '$G > FOLLOWGRAPH'") && line.Time > at {
				leader, at = i, line.Time
			}
		}
	}
	return leader
}

// runPhase runs ws for d, writer i on nodes[i mod len(nodes)], going on
// after failed writes, and returns how many writes were acknowledged.
func runPhase(nodes []*server, ws []*writer, d time.Duration, seed int64) int {
	before := 0
	for _, w := range ws {
		w.keepGoing = true
		before += w.oks
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i, w := range ws {
		c := nodes[i%len(nodes)].client
		wg.Go(func() { w.run(stop, c, seed+int64(i), 300) })
	}
	time.Sleep(d)
	close(stop)
	wg.Wait()
	after := 0
	for _, w := range ws {
		after += w.oks
	}
	return after - before
}

// TestServe_EmbeddedCluster: three serve --nats-cluster nodes, each
// running a node of the embedded NATS cluster, started together on a
// fresh deployment, must all become ready (in each of the tries). Then,
// under writes through all three, the node that leads the stream is
// killed with SIGKILL: the stream keeps a quorum and writes go on
// through the other two; the node is started again and rejoins. Every
// acknowledged write must be in PostgreSQL, and in Redis through the API.
func TestServe_EmbeddedCluster(t *testing.T) {
	pg := testenv.Server(t, testenv.Postgres, testenv.PostgresHint)
	tries, ready := startTries(t), 0
	var c *embeddedCluster
	for try := range tries {
		c = newEmbeddedCluster(t, pg)
		for i := range 3 {
			c.start(i)
		}
		errs := waitAllReady(c.nodes, 90*time.Second)
		for _, err := range errs {
			t.Errorf("try %d: %v", try, err)
		}
		if len(errs) == 0 {
			ready++
		}
		if try < tries-1 {
			for _, n := range c.nodes {
				n.kill()
			}
		}
	}
	t.Logf("START | embedded NATS cluster, 3 serve nodes | %d of %d tries every node ready |", ready, tries)
	if ready < tries {
		t.FailNow()
	}

	ws := newWriters(12, 10)
	before := runPhase(c.nodes, ws, 1500*time.Millisecond, 1)
	victim := c.streamLeader()
	leads := victim >= 0
	if !leads {
		victim = 0
	}
	c.nodes[victim].kill()
	killed := time.Now()
	var rest []*server
	for i, n := range c.nodes {
		if i != victim {
			rest = append(rest, n)
		}
	}
	during := runPhase(rest, ws, 10*time.Second, 2)
	if during == 0 {
		t.Fatalf("no write was acknowledged by the other two nodes in the 10 s after node %d was killed", victim)
	}
	if err := c.start(victim).waitReady(90 * time.Second); err != nil {
		t.Fatalf("node %d started again: %v", victim, err)
	}
	after := runPhase(c.nodes, ws, 1500*time.Millisecond, 3)
	took := converge(t, c.d, c.nodes[(victim+1)%3], ws, killed, 60*time.Second)
	for _, w := range ws {
		verify(t, c.nodes[victim].client, w)
	}
	failed := 0
	for _, w := range ws {
		failed += w.failed
	}
	t.Logf("killed node %d (stream leader: %v): %d writes acknowledged before, %d by the other two in the 10 s after, %d after it rejoined; %d failed; all in PostgreSQL %.1f s after the kill",
		victim, leads, before, during, after, failed, took.Seconds())
}

// TestSecrets_NATSList: with a cluster's URLs in --nats, the start-up
// line shows each of them with its password masked.
func TestSecrets_NATSList(t *testing.T) {
	n := startNATS(t, "--user", "fguser", "--pass", "NatsListPass1")
	urls := "nats://fguser:NatsListPass1@" + strings.TrimPrefix(n.url, "nats://") + ",nats://fguser:NatsListPass2@" + freeAddr(t)
	out := runUntil(t, "followgraph ready", "serve", "--addr", freeAddr(t), "--data", t.TempDir(), "--nats", urls, "--nats-stream", "FGTEST_SECRETS_LIST")
	if !strings.Contains(out, "followgraph ready") {
		t.Fatalf("serve did not start:\n%s", out)
	}
	for _, secret := range []string{"NatsListPass1", "NatsListPass2"} {
		if strings.Contains(out, secret) {
			t.Errorf("%s shows:\n%s", secret, out)
		}
	}
	if strings.Count(out, "fguser:xxxxx@") < 2 {
		t.Errorf("the start-up line does not show both URLs masked:\n%s", out)
	}
}

// TestServe_ElectionWrites: three serve --nats-cluster nodes with the
// default flags, started together, log no ERROR line (nor a warning of
// their NATS servers) in their normal start; writers on the two nodes that do not lead the stream
// write one change at a time (their clients wait 30 s), and the node
// that leads the stream is killed with SIGKILL. No write may fail: a
// write waits out the stream's leader election (4 to 9 s) within its
// deadline. FOLLOWGRAPH_TEST_ELECTIONS sets how many times the leader is
// killed (1 by default; the node is started again between).
func TestServe_ElectionWrites(t *testing.T) {
	pg := testenv.Server(t, testenv.Postgres, testenv.PostgresHint)
	rounds := 1
	if v := os.Getenv("FOLLOWGRAPH_TEST_ELECTIONS"); v != "" {
		var err error
		if rounds, err = strconv.Atoi(v); err != nil || rounds < 1 {
			t.Fatalf("FOLLOWGRAPH_TEST_ELECTIONS=%q: want a positive number", v)
		}
	}
	c := newEmbeddedCluster(t, pg)
	for i := range 3 {
		c.start(i)
	}
	for _, err := range waitAllReady(c.nodes, 90*time.Second) {
		t.Fatal(err)
	}
	for i, n := range c.nodes {
		for _, e := range logEntries(t, n.logs.String()) {
			if e["level"] == "ERROR" || e["level"] == "WARN" && e["component"] == "nats-server" {
				t.Errorf("node %d, a normal start, logged: %s", i, toJSON(e))
			}
		}
	}
	type result struct {
		at, took time.Duration // from the kill; the write's time
		err      error
	}
	var longest []time.Duration
	for round := range rounds {
		victim := c.streamLeader()
		if victim < 0 {
			t.Fatal("no node says it leads the stream")
		}
		var (
			mu      sync.Mutex
			results []result
			killed  time.Time
			stop    = make(chan struct{})
			wg      sync.WaitGroup
		)
		for i, n := range c.nodes {
			if i == victim {
				continue
			}
			cl := client.New(n.url, client.WithHTTPClient(&http.Client{Timeout: 30 * time.Second}))
			for w := range 4 {
				wg.Go(func() {
					user := fg.UserID(1000*(round+1) + 100*i + w + 1)
					for target := fg.UserID(1_000_000); ; target++ {
						select {
						case <-stop:
							return
						default:
						}
						begin := time.Now()
						_, err := cl.Follow(context.Background(), user, target)
						mu.Lock()
						if !killed.IsZero() {
							results = append(results, result{begin.Sub(killed), time.Since(begin), err})
						}
						mu.Unlock()
					}
				})
			}
		}
		time.Sleep(time.Second)
		mu.Lock()
		killed = time.Now()
		mu.Unlock()
		c.nodes[victim].kill()
		time.Sleep(15 * time.Second)
		close(stop)
		wg.Wait()
		var most time.Duration
		failed := 0
		for _, r := range results {
			most = max(most, r.took)
			if r.err != nil {
				failed++
				if failed <= 5 {
					t.Errorf("round %d: a write sent %.2f s after the kill failed after %.2f s: %v", round, r.at.Seconds(), r.took.Seconds(), r.err)
				}
			}
		}
		longest = append(longest, most)
		t.Logf("round %d: killed node %d, the stream's leader; %d writes in the 15 s after, %d failed; the longest took %.2f s",
			round, victim, len(results), failed, most.Seconds())
		if err := c.start(victim).waitReady(90 * time.Second); err != nil {
			t.Fatalf("node %d started again: %v", victim, err)
		}
	}
	slices.Sort(longest)
	t.Logf("ELECTION | %d kills of the stream leader | longest write %.2f to %.2f s |", rounds, longest[0].Seconds(), longest[len(longest)-1].Seconds())
}
