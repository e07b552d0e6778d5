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

func freeAddr(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
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
	bindAll bool // listen on every interface (0.0.0.0), reached on 127.0.0.1
}

// launch starts followgraph serve on data with o, and waits until it is
// ready.
func launch(tb testing.TB, data string, o launchOptions) *server {
	tb.Helper()
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
	s.cmd = exec.Command(binary, append([]string{"serve", "--addr", bind, "--data", data}, o.args...)...)
	s.cmd.Env = append(os.Environ(), o.env...)
	s.cmd.Stdout, s.cmd.Stderr = s.logs, s.logs
	if err := s.cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	go func() { s.cmd.Wait(); close(s.done) }()
	tb.Cleanup(func() { s.kill() })
	s.client = client.New(s.url, client.WithHTTPClient(hc), client.WithToken(o.token))
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := hc.Get(s.url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s
			}
		}
		select {
		case <-s.done:
			tb.Fatalf("followgraph exited before it was ready:\n%s", s.logs)
		default:
		}
		if time.Now().After(deadline) {
			tb.Fatalf("followgraph not ready after 60 s:\n%s", s.logs)
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
// acknowledged, and the one change in flight when the server died.
type writer struct {
	followers []fg.UserID
	acked     map[[2]fg.UserID]ack
	inflight  *[2]fg.UserID
	oks       int

	// keepGoing: a failed write does not end run (the server is up but a
	// backend is not); its edge is unsure until a later write of it is
	// acknowledged, or settle reads it.
	keepGoing bool
	unsure    map[[2]fg.UserID]bool
	failed    int
}

// newWriters returns workers writers, each owning perWorker followers of
// its own.
func newWriters(workers, perWorker int) []*writer {
	ws := make([]*writer, workers)
	for i := range ws {
		ws[i] = &writer{acked: map[[2]fg.UserID]ack{}, unsure: map[[2]fg.UserID]bool{}}
		for j := range perWorker {
			ws[i].followers = append(ws[i].followers, fg.UserID(1+i*perWorker+j))
		}
	}
	return ws
}

// run writes until stop is closed. A request is never cancelled by the
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
		if r.IntN(10) < 7 {
			var res fg.FollowResult
			if res, err = c.Follow(ctx, e[0], e[1]); err == nil {
				w.acked[e] = ack{following: true, since: res.Since}
			}
		} else if _, err = c.Unfollow(ctx, e[0], e[1]); err == nil {
			w.acked[e] = ack{}
		}
		if err != nil {
			if !w.keepGoing {
				return // the server is gone: this change may or may not have happened
			}
			w.failed++
			w.unsure[e] = true
			w.inflight = nil
			time.Sleep(20 * time.Millisecond)
			continue
		}
		delete(w.unsure, e)
		w.oks++
		w.inflight = nil
	}
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
		total := 0
		for _, w := range ws {
			total += w.oks
			verify(t, s.client, w)
			w.settle(t, s.client)
		}
		t2 := time.Now()
		s.stop(t)
		t.Logf("round %d: %d acknowledged writes so far, all present after kill -9 (restart %v, verify %v, clean stop %v)",
			round, total, t1.Sub(t0).Round(time.Millisecond), t2.Sub(t1).Round(time.Millisecond), time.Since(t2).Round(time.Millisecond))
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
	if w.inflight != nil {
		w.unsure[*w.inflight] = true
		w.inflight = nil
	}
	for e := range w.unsure {
		got, err := c.IsFollowing(context.Background(), e[0], e[1])
		if err != nil {
			tb.Fatal(err)
		}
		w.acked[e] = ack{following: got.Following, since: got.Since}
	}
	clear(w.unsure)
}

// verify checks w's acknowledged edges, and that its followers follow no
// one they were not acknowledged (or in flight) to follow.
func verify(tb testing.TB, c *client.Client, w *writer) {
	tb.Helper()
	ctx := context.Background()
	for e, a := range w.acked {
		if w.inflight != nil && *w.inflight == e {
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
	for _, u := range w.followers {
		req := fg.PageRequest{Limit: 1000}
		for {
			p, err := c.Following(ctx, u, req)
			if err != nil {
				tb.Fatal(err)
			}
			for _, en := range p.Entries {
				e := [2]fg.UserID{u, en.ID}
				if a, ok := w.acked[e]; (!ok || !a.following) && (w.inflight == nil || *w.inflight != e) {
					tb.Fatalf("%d→%d is there after restart but was never acknowledged", u, en.ID)
				}
			}
			if p.Next == "" {
				break
			}
			req.Cursor = p.Next
		}
	}
}

func newRand(seed int64) *rand.Rand { return rand.New(rand.NewPCG(uint64(seed), 42)) }
