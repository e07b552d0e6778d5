package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/internal/testenv"
)

// The fault tests run the production topology on loopback: serve nodes
// on Redis, an external NATS JetStream and PostgreSQL, under a steady
// load of writers that record every acknowledged write; a fault is
// injected while they write. Afterwards every acknowledged write must be
// in PostgreSQL with its since-time, nothing unacknowledged may appear,
// and `followgraph reconcile` must find the hot copy equal to the store.
// Each logs one line of docs/RELIABILITY.md's table (grep RELIABILITY).

// deployment is one such topology: a Redis key prefix, a NATS stream and
// a PostgreSQL database of the test's own, on servers that may be the
// machine's or the test's private ones (for the faults that stop them).
type deployment struct {
	t      *testing.T
	redis  string
	prefix string
	nats   string
	stream string
	db     string
}

// newDeployment makes a deployment on the machine's servers, or on those
// given (non-empty natsURL, pgAdmin).
func newDeployment(t *testing.T, redisURL, natsURL, pgAdmin string) *deployment {
	t.Helper()
	d := &deployment{t: t}
	if redisURL == "" {
		d.redis, d.prefix = testRedis(t)
	} else {
		d.redis, d.prefix = redisURL, fmt.Sprintf("fgtest-fault-%x", rand.Uint64())
	}
	if d.nats = natsURL; d.nats == "" {
		d.nats = testenv.Server(t, testenv.NATS, testenv.NATSHint)
	}
	d.stream = fmt.Sprintf("FGTEST_%X", rand.Uint64())
	t.Cleanup(func() { deleteStream(d.nats, d.stream) })
	if pgAdmin == "" {
		pgAdmin = testenv.Server(t, testenv.Postgres, testenv.PostgresHint)
	}
	d.db = newDatabase(t, pgAdmin)
	return d
}

// args are the flags that name the deployment's servers, which serve,
// rebuild and reconcile take alike.
func (d *deployment) args() []string {
	return []string{"--redis", d.redis, "--redis-prefix", d.prefix,
		"--nats", d.nats, "--nats-stream", d.stream, "--db", d.db}
}

// node starts a serve node of the deployment, with a data folder of its
// own (which it should not need: everything is in the servers).
func (d *deployment) node(extra ...string) *server {
	return start(d.t, d.t.TempDir(), append(d.args(), extra...)...)
}

// newDatabase creates a database on the PostgreSQL server of admin (a URL
// to connect to for that), dropped when t ends, and returns its URL.
func newDatabase(t *testing.T, admin string) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatalf("postgres %s: %v", admin, err)
	}
	defer conn.Close(ctx)
	name := fmt.Sprintf("fgtest_fault_%x", rand.Uint64())
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(ctx, admin)
		if err != nil {
			return // the server is gone with the test (a private one)
		}
		defer conn.Close(ctx)
		conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	})
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

// deleteStream removes a test's stream from the NATS at natsURL.
func deleteStream(natsURL, stream string) {
	nc, err := nats.Connect(natsURL)
	if err != nil {
		return
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if js, err := jetstream.New(nc); err == nil {
		js.DeleteStream(ctx, stream)
	}
}

// load is a steady mixed load on the nodes: writers, each on one node
// (writer i on node i mod n), and readers on every node. It runs until
// stop; the counts are of all requests sent.
type load struct {
	ws      []*writer
	stop    chan struct{}
	wg      sync.WaitGroup
	mu      sync.Mutex
	reads   int
	readErr int
}

func startLoad(nodes []*server, workers int, seed int64) *load {
	const perWorker, targets = 10, 300
	l := &load{ws: newWriters(workers, perWorker), stop: make(chan struct{})}
	for i, w := range l.ws {
		w.keepGoing = len(nodes) == 1 // with two nodes, a writer of the killed one stops
		c := nodes[i%len(nodes)].client
		l.wg.Go(func() { w.run(l.stop, c, seed+int64(i), targets) })
	}
	for i, n := range nodes {
		l.wg.Go(func() {
			r := newRand(seed + 1000 + int64(i))
			for {
				select {
				case <-l.stop:
					return
				default:
				}
				u := fg.UserID(1 + r.IntN(workers*perWorker))
				_, err := n.client.Following(context.Background(), u, fg.PageRequest{Limit: 50})
				l.mu.Lock()
				l.reads++
				if err != nil {
					l.readErr++
				}
				l.mu.Unlock()
				if err != nil {
					time.Sleep(10 * time.Millisecond) // the node may be gone
				}
			}
		})
	}
	return l
}

func (l *load) finish() {
	close(l.stop)
	l.wg.Wait()
}

// operations returns the writes sent and those acknowledged.
func (l *load) operations() (sent, acked int) {
	for _, w := range l.ws {
		acked += w.oks
		sent += w.oks + w.failed
		if w.inflight != nil {
			sent++
		}
	}
	return sent, acked
}

// missing counts the acknowledged writes rows and blocks do not hold as
// acknowledged (a follow that survived an acknowledged later block
// among them), and the live rows of the writers' followers that were
// never acknowledged (invented).
func missing(ws []*writer, rows map[[2]fg.UserID]ack, blocks map[[2]fg.UserID]bool) (lost, invented int, examples []string) {
	owner := map[fg.UserID]*writer{}
	for _, w := range ws {
		for _, u := range w.followers {
			owner[u] = w
		}
		for e, a := range w.acked {
			if w.inFlight(e) {
				continue
			}
			if got := rows[e]; got.following != a.following || (a.following && !got.since.Equal(a.since)) {
				lost++
				if len(examples) < 5 {
					examples = append(examples, fmt.Sprintf("%d→%d acknowledged %+v, stored %+v", e[0], e[1], a, got))
				}
			}
		}
	}
	for _, w := range ws {
		for e, on := range w.blocks {
			if w.inflightBlock && *w.inflight == e {
				continue
			}
			if blocks[e] != on {
				lost++
				if len(examples) < 5 {
					examples = append(examples, fmt.Sprintf("%d blocks %d: acknowledged %v, stored %v", e[0], e[1], on, blocks[e]))
				}
			}
		}
	}
	for e, r := range rows {
		w := owner[e[0]]
		if !r.following || w == nil {
			continue
		}
		if a, ok := w.acked[e]; (!ok || !a.following) && !w.inFlight(e) {
			invented++
		}
	}
	return lost, invented, examples
}

// converge settles the writers' in-flight changes through node, then
// waits until PostgreSQL holds every acknowledged write and nothing
// unacknowledged, and returns the time that took; it fails t if that
// does not happen within limit, and checks the hot copy through node.
func converge(t *testing.T, d *deployment, node *server, ws []*writer, start time.Time, limit time.Duration) time.Duration {
	t.Helper()
	for _, w := range ws {
		w.settle(t, node.client)
	}
	var lost, invented int
	var examples []string
	for {
		lost, invented, examples = missing(ws, storeState(t, d.db, ""), storeBlocks(t, d.db, ""))
		if lost == 0 && invented == 0 {
			break
		}
		if time.Since(start) > limit {
			t.Fatalf("after %v PostgreSQL still lacks %d acknowledged writes and has %d never acknowledged, such as:\n%s",
				limit, lost, invented, strings.Join(examples, "\n"))
		}
		time.Sleep(200 * time.Millisecond)
	}
	took := time.Since(start)
	for _, w := range ws {
		verify(t, node.client, w)
	}
	return took
}

// reconcile runs `followgraph reconcile` on the deployment and returns
// the number of differences it reports.
func reconcile(t *testing.T, d *deployment, extra ...string) int {
	t.Helper()
	cmd := exec.Command(binary, slices.Concat([]string{"reconcile"}, d.args(), extra)...)
	out, err := cmd.CombinedOutput() // exits 1 when it finds differences
	var n int
	for _, line := range strings.Split(string(out), "\n") {
		if rest, ok := strings.CutPrefix(line, "differences: "); ok {
			if n, err = strconv.Atoi(strings.Fields(rest)[0]); err != nil {
				t.Fatalf("reconcile printed %q", line)
			}
			if n != 0 { // the differences it shows, for the failure to name them
				t.Logf("reconcile:\n%s", out)
			}
			return n
		}
	}
	t.Fatalf("reconcile printed no count of differences (%v):\n%s", err, out)
	return 0
}

// report logs the test's line of the table in docs/RELIABILITY.md.
func report(t *testing.T, fault string, l *load, lost int, took time.Duration) {
	sent, acked := l.operations()
	t.Logf("RELIABILITY | %s | %d writes + %d reads | %d | %d | %.1f s |",
		fault, sent, l.reads, acked, lost, took.Seconds())
}

// checkDeployment is the end of every fault test: converged within limit
// of start (the end of the fault), reconcile finds nothing, the line of
// the table.
func checkDeployment(t *testing.T, fault string, d *deployment, node *server, l *load, start time.Time, limit time.Duration) {
	t.Helper()
	took := converge(t, d, node, l.ws, start, limit)
	if n := reconcile(t, d, "--show", "20"); n != 0 {
		t.Fatalf("reconcile reports %d differences between Redis and PostgreSQL", n)
	}
	report(t, fault, l, 0, took)
}

// TestFault_KillNode: two nodes serve; one is killed with SIGKILL while
// both take writes. The other relays what the dead node's outbox lease
// held once it runs out, and the persister's unacknowledged batch is
// delivered again.
func TestFault_KillNode(t *testing.T) {
	d := newDeployment(t, "", "", "")
	a, b := d.node(), d.node()
	l := startLoad([]*server{a, b}, 16, 1)
	time.Sleep(1500 * time.Millisecond)
	a.kill()
	over := time.Now()
	time.Sleep(2 * time.Second)
	l.finish()
	checkDeployment(t, "kill -9 of one of two serving nodes", d, b, l, over, 60*time.Second)
}

// TestFault_NATSDown: the external NATS stops for 10 s and starts again.
// Writes go on (Redis and its outbox take them); the relay and the
// persister wait and catch up.
func TestFault_NATSDown(t *testing.T) {
	n := startNATS(t)
	outage(t, newDeployment(t, "", n.url, ""), 2, "NATS stopped for 10 s, restarted", n.stop, n.start)
}

// TestFault_PostgresDown: PostgreSQL stops for 10 s and starts again; the
// persister pauses and resumes.
func TestFault_PostgresDown(t *testing.T) {
	pg := startPostgres(t)
	outage(t, newDeployment(t, "", "", pg.admin), 3, "PostgreSQL stopped for 10 s, restarted", pg.stop, pg.start)
}

// outage runs a node of d under load (of seed) while one of its servers
// is stopped for 10 s and started again, then checks d.
func outage(t *testing.T, d *deployment, seed int64, fault string, stop, restart func()) {
	t.Helper()
	node := d.node()
	l := startLoad([]*server{node}, 8, seed)
	time.Sleep(time.Second)
	stop()
	time.Sleep(10 * time.Second)
	restart()
	over := time.Now()
	time.Sleep(2 * time.Second)
	l.finish()
	checkDeployment(t, fault, d, node, l, over, 60*time.Second)
}

// TestFault_RelayKilledBeforeTrim: the node dies after publishing a batch
// of its outbox to the log and before trimming it; restarted, it
// publishes the batch again, which the log drops as duplicates.
func TestFault_RelayKilledBeforeTrim(t *testing.T) {
	d := newDeployment(t, "", "", "")
	node := d.node()
	os.Setenv("FOLLOWGRAPH_FAULT_KILL_BEFORE_TRIM", "20")
	victim := d.node()
	os.Unsetenv("FOLLOWGRAPH_FAULT_KILL_BEFORE_TRIM")
	node.stop(t) // the victim's relay is the only one
	l := startLoad([]*server{victim}, 8, 4)
	select {
	case <-victim.done:
	case <-time.After(30 * time.Second):
		t.Fatal("the relay did not reach its 20th batch in 30 s")
	}
	l.finish()
	over := time.Now()
	node = d.node()
	checkDeployment(t, "relay killed between publish and trim", d, node, l, over, 60*time.Second)
}

// privateNATS is a nats-server of the test's own, to stop and start.
type privateNATS struct {
	t    *testing.T
	url  string
	args []string
	cmd  *exec.Cmd
}

// startNATS starts a nats-server with JetStream, given the extra
// arguments (such as --user and --pass).
func startNATS(t *testing.T, extra ...string) *privateNATS {
	t.Helper()
	bin, err := exec.LookPath("nats-server")
	if err != nil {
		testenv.Skip(t, "nats-server is not installed: apt-get install nats-server")
	}
	addr := freeAddr(t)
	host, port, _ := strings.Cut(addr, ":")
	n := &privateNATS{t: t, url: "nats://" + addr,
		args: append([]string{bin, "-a", host, "-p", port, "-js", "-sd", t.TempDir()}, extra...)}
	n.start()
	t.Cleanup(n.stop)
	return n
}

func (n *privateNATS) start() {
	n.t.Helper()
	n.cmd = exec.Command(n.args[0], n.args[1:]...)
	if err := n.cmd.Start(); err != nil {
		n.t.Fatal(err)
	}
	waitTCP(n.t, strings.TrimPrefix(n.url, "nats://"))
}

func (n *privateNATS) stop() {
	if n.cmd == nil {
		return
	}
	n.cmd.Process.Signal(syscall.SIGTERM)
	n.cmd.Wait()
	n.cmd = nil
}

// privatePostgres is a PostgreSQL cluster of the test's own, to stop and
// start. As root, the server runs as the postgres user, which it requires.
type privatePostgres struct {
	t           *testing.T
	admin       string // URL of its postgres database
	start, stop func()
}

func startPostgres(t *testing.T) *privatePostgres {
	t.Helper()
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl")
	if len(bins) == 0 {
		testenv.Skip(t, "PostgreSQL's server programs are not installed: apt-get install postgresql")
	}
	binDir := filepath.Dir(bins[len(bins)-1])
	dir := t.TempDir()
	addr := freeAddr(t)
	_, port, _ := strings.Cut(addr, ":")
	var asUser []string
	if u, _ := user.Current(); u != nil && u.Uid == "0" {
		pgUser, err := user.Lookup("postgres")
		if err != nil {
			t.Fatal(err)
		}
		uid, _ := strconv.Atoi(pgUser.Uid)
		gid, _ := strconv.Atoi(pgUser.Gid)
		asUser = []string{"runuser", "-u", "postgres", "--"}
		os.Chmod(filepath.Dir(dir), 0o755) // t.TempDir's parent is 0700
		os.Chown(dir, uid, gid)
	}
	run := func(args ...string) error {
		args = append(append([]string{}, asUser...), args...)
		out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	data := filepath.Join(dir, "pg")
	if err := run(filepath.Join(binDir, "initdb"), "-D", data, "-U", "postgres", "-A", "trust"); err != nil {
		t.Fatal(err)
	}
	ctl := filepath.Join(binDir, "pg_ctl")
	opts := fmt.Sprintf("-p %s -k %s -c listen_addresses=127.0.0.1", port, dir)
	p := &privatePostgres{t: t, admin: fmt.Sprintf("postgres://postgres@%s/postgres", addr)}
	p.start = func() {
		if err := run(ctl, "-D", data, "-o", opts, "-l", filepath.Join(dir, "log"), "-w", "start"); err != nil {
			t.Fatal(err)
		}
	}
	p.stop = func() {
		if err := run(ctl, "-D", data, "-m", "fast", "-w", "stop"); err != nil {
			t.Error(err)
		}
	}
	p.start()
	t.Cleanup(func() { run(ctl, "-D", data, "-m", "immediate", "stop") })
	return p
}

// waitTCP waits until something listens at addr.
func waitTCP(tb testing.TB, addr string) {
	tb.Helper()
	for range 200 {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return
		}
		time.Sleep(25 * time.Millisecond)
	}
	tb.Fatalf("nothing listens at %s after 5 s", addr)
}
