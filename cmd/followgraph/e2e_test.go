package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/client"
)

// binary is the followgraph command built once for the end-to-end tests,
// which run it as a real process: on a random port, with a temp data folder,
// killed with SIGKILL.
var binary string

// FOLLOWGRAPH_TEST_BINARY=path runs them against that binary instead (an
// older build, say, to see a new test fail on the code it fixes).
func TestMain(m *testing.M) {
	if binary = os.Getenv("FOLLOWGRAPH_TEST_BINARY"); binary != "" {
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "followgraph-e2e")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "followgraph")
	if out, err := exec.Command("go", "build", "-tags", "faultinject", "-o", binary, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building followgraph: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// server is a running `followgraph serve`.
type server struct {
	cmd    *exec.Cmd
	url    string
	hc     *http.Client
	client *client.Client
	logs   *syncBuffer
	done   chan struct{}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// freeAddr returns a loopback address nothing listened on a moment ago,
// on a port it has not returned before in this process (nor reserved as
// a Cluster node's bus port): the tests run side by side, and the kernel
// may give a port just freed to the next caller, so two servers of one
// test, or of two, would otherwise be handed the same port.
func freeAddr(tb testing.TB) string {
	tb.Helper()
	for range 100 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		if reservePort(ln.Addr().(*net.TCPAddr).Port) {
			return addr
		}
	}
	tb.Fatal("no loopback port free that was not handed out already")
	return ""
}

// handedOut are the ports freeAddr returned or clusterPort reserved.
var handedOut struct {
	sync.Mutex
	ports map[int]bool
}

// reservePort reserves port p, and reports whether it was not already.
func reservePort(p int) bool {
	handedOut.Lock()
	defer handedOut.Unlock()
	if handedOut.ports[p] {
		return false
	}
	if handedOut.ports == nil {
		handedOut.ports = map[int]bool{}
	}
	handedOut.ports[p] = true
	return true
}

// start runs the service on data and waits until it is ready.
func start(tb testing.TB, data string, args ...string) *server {
	tb.Helper()
	return startEnv(tb, data, nil, args...)
}

// startEnv is start with env (FOLLOWGRAPH_X=value settings) added to the
// environment. A setting given so is ignored by a binary that lacks it,
// so a test of a new setting fails on the old binary by its assertions,
// not by an unknown flag.
func startEnv(tb testing.TB, data string, env []string, args ...string) *server {
	tb.Helper()
	return launch(tb, data, launchOptions{env: env, args: args})
}

// launchOptions are how a test starts followgraph serve: env and args
// added; with tls, over HTTPS, its client trusting tls's roots (and
// presenting its certificates); with token, its client sending it.
type launchOptions struct {
	env     []string
	args    []string
	tls     *tls.Config
	token   string
	bindAll bool   // listen on every interface (0.0.0.0), reached on 127.0.0.1
	dir     string // the working folder; "": the test's
}

// launch starts followgraph serve on data with o, and waits until it is
// ready. With data "", serve is given no --data (its default, ./data in
// o.dir).
func launch(tb testing.TB, data string, o launchOptions) *server {
	tb.Helper()
	s := spawn(tb, data, o)
	if err := s.waitReady(60 * time.Second); err != nil {
		tb.Fatal(err)
	}
	return s
}

// launchErr is launch returning an error rather than failing tb, so that
// nodes can be started together from several goroutines.
func launchErr(tb testing.TB, data string, o launchOptions) (*server, error) {
	s, err := spawnErr(tb, data, o)
	if err != nil {
		return nil, err
	}
	if err := s.waitReady(60 * time.Second); err != nil {
		return nil, err
	}
	return s, nil
}

// spawn starts followgraph serve on data with o, and does not wait.
func spawn(tb testing.TB, data string, o launchOptions) *server {
	tb.Helper()
	s, err := spawnErr(tb, data, o)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// spawnErr is spawn returning an error rather than failing tb.
func spawnErr(tb testing.TB, data string, o launchOptions) (*server, error) {
	addr := freeAddr(tb)
	scheme := "http://"
	hc := &http.Client{Timeout: 10 * time.Second}
	if o.tls != nil {
		scheme = "https://"
		hc.Transport = &http.Transport{TLSClientConfig: o.tls}
	}
	s := &server{url: scheme + addr, logs: &syncBuffer{}, done: make(chan struct{})}
	bind := addr
	if o.bindAll {
		bind = "0.0.0.0" + addr[strings.LastIndex(addr, ":"):]
	}
	args := []string{"serve", "--addr", bind}
	if data != "" {
		args = append(args, "--data", data)
	}
	s.cmd = exec.Command(binary, append(args, o.args...)...)
	s.cmd.Env = append(os.Environ(), o.env...)
	s.cmd.Dir = o.dir
	s.cmd.Stdout, s.cmd.Stderr = s.logs, s.logs
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { s.cmd.Wait(); close(s.done) }()
	tb.Cleanup(func() { s.kill() })
	s.hc = hc
	s.client = client.New(s.url, client.WithHTTPClient(hc), client.WithToken(o.token))
	return s, nil
}

// waitReady waits until s answers /readyz with 200, and returns an error
// with its log if it exits first or is not ready within d.
func (s *server) waitReady(d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		resp, err := s.hc.Get(s.url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-s.done:
			return fmt.Errorf("followgraph exited before it was ready:\n%s", s.logs)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("followgraph not ready after %s:\n%s", d, s.logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// kill sends SIGKILL and waits for the process to end.
func (s *server) kill() {
	s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.done
}

// stop sends SIGTERM and waits for a clean exit.
func (s *server) stop(tb testing.TB) {
	tb.Helper()
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(60 * time.Second):
		tb.Fatalf("followgraph did not stop within 60 s of SIGTERM:\n%s", s.logs)
	}
	if code := s.cmd.ProcessState.ExitCode(); code != 0 {
		tb.Fatalf("followgraph exited with %d after SIGTERM:\n%s", code, s.logs)
	}
}

// ack is the last acknowledged state of an edge.
type ack struct {
	following bool
	since     time.Time
}

// writer owns the edges of its followers and remembers what was
// acknowledged, and the one change in flight when the server died. Its
// mix also blocks and unblocks, only users whose edges with its followers
// no other writer changes (its own followers, or users above outside,
// whom no writer owns), so that a block's end of the follows both ways is
// the writer's to remember.
type writer struct {
	followers []fg.UserID
	outside   fg.UserID // the highest id any writer owns
	acked     map[[2]fg.UserID]ack
	blocks    map[[2]fg.UserID]bool // acknowledged blocks (true) and unblocks (false)
	inflight  *[2]fg.UserID
	// inflightBlock: the change in flight is a block or an unblock, which
	// also leaves the follow of the other direction unsure.
	inflightBlock bool
	oks           int

	// keepGoing: a failed write does not end run (the server is up but a
	// backend is not); its edge is unsure until a later write of it is
	// acknowledged, or settle reads it.
	keepGoing    bool
	unsure       map[[2]fg.UserID]bool
	unsureBlocks map[[2]fg.UserID]bool
	failed       int
}

// newWriters returns workers writers, each owning perWorker followers of
// its own.
func newWriters(workers, perWorker int) []*writer {
	ws := make([]*writer, workers)
	for i := range ws {
		ws[i] = &writer{acked: map[[2]fg.UserID]ack{}, unsure: map[[2]fg.UserID]bool{},
			blocks: map[[2]fg.UserID]bool{}, unsureBlocks: map[[2]fg.UserID]bool{},
			outside: fg.UserID(workers * perWorker)}
		for j := range perWorker {
			ws[i].followers = append(ws[i].followers, fg.UserID(1+i*perWorker+j))
		}
	}
	return ws
}

// owns reports whether u is one of w's followers.
func (w *writer) owns(u fg.UserID) bool { return slices.Contains(w.followers, u) }

// mayBlock reports whether w may block t: no other writer changes t's
// edges with w's followers.
func (w *writer) mayBlock(t fg.UserID) bool { return t > w.outside || w.owns(t) }

// inFlight reports whether the change in flight may have changed the
// follow e: it is that change's, or the other direction of a block's.
func (w *writer) inFlight(e [2]fg.UserID) bool {
	if w.inflight == nil {
		return false
	}
	f := *w.inflight
	return f == e || (w.inflightBlock && f == [2]fg.UserID{e[1], e[0]})
}

// blocked records an acknowledged block of e: it ended the follows both
// ways.
func (w *writer) blocked(e [2]fg.UserID) {
	w.blocks[e] = true
	w.acked[e] = ack{}
	if w.owns(e[1]) {
		w.acked[[2]fg.UserID{e[1], e[0]}] = ack{}
	}
}

// run writes until stop is closed: 70% follows, 30% unfollows, of which
// one in twenty a block instead, where w may block, and one in fifty an
// unblock of a block it made. A follow refused as blocked (403) is an
// answer: the edge is not there. A request is never cancelled by the
// test: it ends with an answer, or with an error when the server dies.
func (w *writer) run(stop <-chan struct{}, c *client.Client, seed int64, targets int) {
	ctx := context.Background()
	r := newRand(seed)
	for {
		select {
		case <-stop:
			return
		default:
		}
		e := [2]fg.UserID{w.followers[r.IntN(len(w.followers))], fg.UserID(1 + r.IntN(targets))}
		if e[0] == e[1] {
			continue
		}
		w.inflight = &e
		var err error
		switch n := r.IntN(100); {
		case n < 5 && w.mayBlock(e[1]):
			w.inflightBlock = true
			if _, err = c.Block(ctx, e[0], e[1]); err == nil {
				w.blocked(e)
			}
		case n < 7 && w.blocks[e]:
			w.inflightBlock = true
			if _, err = c.Unblock(ctx, e[0], e[1]); err == nil {
				w.blocks[e] = false
			}
		case n < 70:
			var res fg.FollowResult
			if res, err = c.Follow(ctx, e[0], e[1]); err == nil {
				w.acked[e] = ack{following: true, since: res.Since}
			} else if fg.ErrorCode(err) == fg.EBlocked {
				w.acked[e], err = ack{}, nil
			}
		default:
			if _, err = c.Unfollow(ctx, e[0], e[1]); err == nil {
				w.acked[e] = ack{}
			}
		}
		if err != nil {
			if !w.keepGoing {
				return // the server is gone: this change may or may not have happened
			}
			w.failed++
			w.unsureOf()
			time.Sleep(20 * time.Millisecond)
			continue
		}
		delete(w.unsure, e)
		if w.inflightBlock {
			delete(w.unsure, [2]fg.UserID{e[1], e[0]})
			delete(w.unsureBlocks, e)
		}
		w.oks++
		w.inflight, w.inflightBlock = nil, false
	}
}

// unsureOf makes what the change in flight may have changed unsure, and
// ends it.
func (w *writer) unsureOf() {
	if w.inflight == nil {
		return
	}
	e := *w.inflight
	w.unsure[e] = true
	if w.inflightBlock {
		w.unsure[[2]fg.UserID{e[1], e[0]}] = true
		w.unsureBlocks[e] = true
	}
	w.inflight, w.inflightBlock = nil, false
}

// TestServe_KillNine: every write that got a 200 survives SIGKILL of the
// server, with its time, and nothing that was not acknowledged appears;
// three rounds of writing and killing on the same data folder.
func TestServe_KillNine(t *testing.T) {
	data := t.TempDir()
	const workers, perWorker, targets = 16, 10, 300
	ws := newWriters(workers, perWorker)
	for round := range 3 {
		s := start(t, data)
		writeThenKill(s, ws, int64(round*1000), targets)

		t0 := time.Now()
		s = start(t, data)
		t1 := time.Now()
		total, blocks := 0, 0
		for _, w := range ws {
			total += w.oks
			blocks += len(w.blocks)
			verify(t, s.client, w)
			w.settle(t, s.client)
		}
		t2 := time.Now()
		s.stop(t)
		t.Logf("round %d: %d acknowledged writes so far (blocks of %d pairs), all present after kill -9 (restart %v, verify %v, clean stop %v)",
			round, total, blocks, t1.Sub(t0).Round(time.Millisecond), t2.Sub(t1).Round(time.Millisecond), time.Since(t2).Round(time.Millisecond))
	}
}

// writeThenKill runs ws against s for 1.5 s, then kills s with SIGKILL
// while they write, and waits for the writers to notice.
func writeThenKill(s *server, ws []*writer, seed int64, targets int) {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i, w := range ws {
		wg.Go(func() { w.run(stop, s.client, seed+int64(i), targets) })
	}
	time.Sleep(1500 * time.Millisecond)
	s.kill()
	close(stop)
	wg.Wait()
}

// settle records the outcome of the change that was in flight when the
// server died: it either happened or not, and from now on that is known.
func (w *writer) settle(tb testing.TB, c *client.Client) {
	tb.Helper()
	w.unsureOf()
	ctx := context.Background()
	for e := range w.unsure {
		if !w.owns(e[0]) {
			continue // the other direction of a block, to a user no writer owns
		}
		got, err := c.IsFollowing(ctx, e[0], e[1])
		if err != nil {
			tb.Fatal(err)
		}
		w.acked[e] = ack{following: got.Following, since: got.Since}
	}
	for e := range w.unsureBlocks {
		l, err := c.Link(ctx, fg.KindBlock, e[0], e[1])
		if err != nil {
			tb.Fatal(err)
		}
		w.blocks[e] = l.On
	}
	clear(w.unsure)
	clear(w.unsureBlocks)
}

// verify checks w's acknowledged edges and blocks, that its followers
// follow no one they were not acknowledged (or in flight) to follow, so
// that no follow survives an acknowledged later block, and that each of
// their counts equals its list.
func verify(tb testing.TB, c *client.Client, w *writer) {
	tb.Helper()
	ctx := context.Background()
	for e, a := range w.acked {
		if w.inFlight(e) {
			continue // either state is right
		}
		got, err := c.IsFollowing(ctx, e[0], e[1])
		if err != nil {
			tb.Fatal(err)
		}
		if got.Following != a.following || (a.following && !got.Since.Equal(a.since)) {
			tb.Fatalf("%d→%d: acknowledged %+v, found %+v after restart", e[0], e[1], a, got)
		}
	}
	for e, on := range w.blocks {
		if w.inflightBlock && *w.inflight == e {
			continue
		}
		if l, err := c.Link(ctx, fg.KindBlock, e[0], e[1]); err != nil || l.On != on {
			tb.Fatalf("%d blocks %d: acknowledged %v, found %+v, %v after restart", e[0], e[1], on, l, err)
		}
	}
	counts, err := c.Counts(ctx, w.followers)
	if err != nil {
		tb.Fatal(err)
	}
	for i, u := range w.followers {
		following := list(tb, func(req fg.PageRequest) (fg.Page, error) { return c.Following(ctx, u, req) })
		for _, en := range following {
			e := [2]fg.UserID{u, en.ID}
			if a, ok := w.acked[e]; (!ok || !a.following) && !w.inFlight(e) {
				tb.Fatalf("%d→%d is there after restart but was never acknowledged", u, en.ID)
			}
		}
		followers := list(tb, func(req fg.PageRequest) (fg.Page, error) { return c.Followers(ctx, u, req) })
		if n := counts[i]; n.FollowingCount != int64(len(following)) || n.FollowerCount != int64(len(followers)) {
			tb.Fatalf("counts of %d are %+v; its lists have %d and %d", u, n, len(following), len(followers))
		}
	}
}

// list returns every entry of the list that page reads.
func list(tb testing.TB, page func(fg.PageRequest) (fg.Page, error)) []fg.Entry {
	tb.Helper()
	var all []fg.Entry
	req := fg.PageRequest{Limit: 1000}
	for {
		p, err := page(req)
		if err != nil {
			tb.Fatal(err)
		}
		all = append(all, p.Entries...)
		if p.Next == "" {
			return all
		}
		req.Cursor = p.Next
	}
}

func newRand(seed int64) *rand.Rand { return rand.New(rand.NewPCG(uint64(seed), 42)) }
