package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	fg "github.com/followgraph/followgraph"
)

// Hostile clients on the real binary: each test holds what a client can
// hold of the server (connections, bodies, answers not read) and checks
// that the server bounds it. Settings are given as FOLLOWGRAPH_* variables
// (startEnv), so that each test fails on a binary without the bound by
// what it measures.

// addr is the server's host:port.
func (s *server) addr() string { return strings.TrimPrefix(s.url, "http://") }

// rss returns the resident memory of the server process, in bytes.
func (s *server) rss(tb testing.TB) int64 {
	tb.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
			if err != nil {
				tb.Fatal(err)
			}
			return kb << 10
		}
	}
	tb.Fatal("no VmRSS in /proc/<pid>/status")
	return 0
}

// stillOpen returns how many of cs the server has not closed by deadline,
// checking them all at once.
func stillOpen(cs []net.Conn, deadline time.Time) int {
	var open atomic.Int64
	var wg sync.WaitGroup
	for _, c := range cs {
		wg.Go(func() {
			if !closedWithin(c, time.Until(deadline)) {
				open.Add(1)
			}
		})
	}
	wg.Wait()
	return int(open.Load())
}

// closedWithin reports whether the server closes c within d: a read
// returns EOF or a reset instead of timing out.
func closedWithin(c net.Conn, d time.Duration) bool {
	c.SetReadDeadline(time.Now().Add(d))
	buf := make([]byte, 64<<10)
	for {
		_, err := c.Read(buf)
		if err == nil {
			continue // an answer (a 408, say) before the close
		}
		var ne net.Error
		return !(errors.As(err, &ne) && ne.Timeout())
	}
}

// TestHostile_StalledBodies: many clients each send the head of a POST
// with a body just under the 1 MiB limit, then most of the body, then
// stall. The server's memory must not grow with them (it reads a bounded
// number of bodies at once), and it must drop them once its read timeout
// passes.
func TestHostile_StalledBodies(t *testing.T) {
	const conns = 1000
	const bodyLen = 1<<20 - 1
	s := startEnv(t, t.TempDir(), []string{"FOLLOWGRAPH_READ_TIMEOUT=3s"})
	before := s.rss(t)
	body := make([]byte, bodyLen-1024) // all but the last KiB: the server waits for the rest
	copy(body, `{"ids": ["`)
	for i := 10; i < len(body); i++ {
		body[i] = '1'
	}
	cs := make([]net.Conn, conns)
	var wg sync.WaitGroup
	for i := range cs {
		c, err := net.Dial("tcp", s.addr())
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		cs[i] = c
		t.Cleanup(func() { c.Close() })
		wg.Go(func() {
			fmt.Fprintf(c, "POST /v1/users/1/relations HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", bodyLen)
			c.SetWriteDeadline(time.Now().Add(2 * time.Second))
			c.Write(body) // as much as the server and the kernel take in 2 s
		})
	}
	wg.Wait()
	sent := time.Now()
	time.Sleep(500 * time.Millisecond) // what was sent is read by now, if it is read at all
	peak := s.rss(t)
	t.Logf("RSS %d MiB before, %d MiB with %d stalled bodies", before>>20, peak>>20, conns)
	if limit := before + 200<<20; peak > limit {
		t.Errorf("RSS grew from %d MiB to %d MiB with %d stalled bodies: reading them is not bounded", before>>20, peak>>20, conns)
	}
	// Every stalled connection is dropped once the read timeout (3 s from
	// the request's start) has passed.
	if open := stillOpen(cs, sent.Add(5*time.Second)); open > 0 {
		t.Errorf("%d of %d stalled connections still open 5 s after their bodies stalled (read timeout 3 s)", open, conns)
	}
	if _, err := s.client.Counts(t.Context(), []fg.UserID{1}); err != nil {
		t.Errorf("the server does not answer after the stalled bodies: %v", err)
	}
}

// TestHostile_IdleConnections: more idle keep-alive connections than the
// server takes. Those beyond its limit are refused at once with a 503
// (not left to time out), /healthz still answers, and idle connections
// are closed after the idle timeout, which lets new clients in.
func TestHostile_IdleConnections(t *testing.T) {
	const limit, conns = 100, 160
	s := startEnv(t, t.TempDir(), []string{"FOLLOWGRAPH_MAX_CONNECTIONS=" + strconv.Itoa(limit), "FOLLOWGRAPH_IDLE_TIMEOUT=2s"})
	refused, served := 0, 0
	var idle []net.Conn
	for i := range conns {
		c, err := net.Dial("tcp", s.addr())
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		t.Cleanup(func() { c.Close() })
		c.SetDeadline(time.Now().Add(5 * time.Second))
		fmt.Fprintf(c, "GET /v1/users/1 HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("connection %d: no answer within 5 s: %v", i, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusOK:
			served++
			idle = append(idle, c)
		case http.StatusServiceUnavailable:
			refused++
		default:
			t.Fatalf("connection %d: status %d", i, resp.StatusCode)
		}
	}
	t.Logf("%d connections served and left idle, %d refused", served, refused)
	if served > limit || refused < conns-limit {
		t.Errorf("%d connections served, %d refused: want at most %d served (the limit) and the rest refused", served, refused, limit)
	}
	// At the limit, health is still answered.
	if resp, err := (&http.Client{Timeout: 3 * time.Second}).Get(s.url + "/healthz"); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("/healthz at the connection limit: %v %v", resp, err)
	}
	// The idle connections are closed after the idle timeout.
	if open := stillOpen(idle, time.Now().Add(4*time.Second)); open > 0 {
		t.Errorf("%d of %d idle connections still open after 4 s (idle timeout 2 s)", open, len(idle))
	}
	if _, err := s.client.Counts(t.Context(), []fg.UserID{1}); err != nil {
		t.Errorf("a new client is not served once the idle connections are gone: %v", err)
	}
}

// TestHostile_SlowReaders: clients that send requests for large answers
// and never read them hold a goroutine and a buffer each until the
// server's write timeout cuts them off.
func TestHostile_SlowReaders(t *testing.T) {
	const conns, perConn = 50, 200
	s := startEnv(t, t.TempDir(), []string{"FOLLOWGRAPH_REQUEST_TIMEOUT=1s", "FOLLOWGRAPH_WRITE_REQUEST_TIMEOUT=1s", "FOLLOWGRAPH_WRITE_TIMEOUT=2s"})
	baseline := metric(t, s, "go_goroutines")
	var ids strings.Builder
	for i := 1; i <= 1000; i++ {
		if i > 1 {
			ids.WriteByte(',')
		}
		ids.WriteString(strconv.Itoa(i))
	}
	req := "GET /v1/users?ids=" + ids.String() + " HTTP/1.1\r\nHost: x\r\n\r\n" // ~70 KB of answer
	cs := make([]net.Conn, conns)
	for i := range cs {
		c, err := net.Dial("tcp", s.addr())
		if err != nil {
			t.Fatal(err)
		}
		// A small receive buffer, so the answers back up in the server.
		c.(*net.TCPConn).SetReadBuffer(4096)
		cs[i] = c
		t.Cleanup(func() { c.Close() })
		go func() {
			c.SetWriteDeadline(time.Now().Add(3 * time.Second))
			for range perConn {
				if _, err := io.WriteString(c, req); err != nil {
					return
				}
			}
		}()
	}
	time.Sleep(time.Second)
	held := metric(t, s, "go_goroutines")
	t.Logf("goroutines: %v before, %v with %d slow readers", baseline, held, conns)
	deadline := time.Now().Add(6 * time.Second)
	for {
		n := metric(t, s, "go_goroutines")
		if n < baseline+conns/2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%v goroutines 7 s after %d clients stopped reading (baseline %v, write timeout 2 s): they are held", n, conns, baseline)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestHostile_Smuggling: a request with both Content-Length and
// Transfer-Encoding is answered with an error and its connection closed
// (RFC 9112 §6.3), so that a request hidden after it never runs.
func TestHostile_Smuggling(t *testing.T) {
	s := start(t, t.TempDir())
	c, err := net.Dial("tcp", s.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	// Read by Transfer-Encoding, the body ends at "0\r\n\r\n" and the PUT
	// is a second request; read by Content-Length (as a proxy in front
	// may), the PUT is part of the first request's body.
	smuggled := "PUT /v1/users/1/following/2 HTTP/1.1\r\nHost: x\r\n\r\n"
	chunked := "e\r\n" + `{"ids": ["2"]}` + "\r\n0\r\n\r\n" // a valid body on its own
	fmt.Fprintf(c, "POST /v1/users/1/relations HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\nTransfer-Encoding: chunked\r\n\r\n%s%s",
		len(chunked)+len(smuggled), chunked, smuggled)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), `"invalid_argument"`) {
		t.Errorf("a request with Content-Length and Transfer-Encoding: %d %s, want 400 invalid_argument", resp.StatusCode, body)
	}
	if !closedWithin(c, 2*time.Second) {
		t.Error("the connection stays open after a request with both Content-Length and Transfer-Encoding")
	}
	time.Sleep(100 * time.Millisecond)
	e, err := s.client.IsFollowing(t.Context(), 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	if e.Following {
		t.Error("the request smuggled after the body ran: 1 follows 2")
	}
	// A chunked request alone is served as usual.
	resp, err = http.Post(s.url+"/v1/users/1/relations", "application/json", io.MultiReader(strings.NewReader(`{"ids": ["2"]}`)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("a chunked POST: %d", resp.StatusCode)
	}
}

// TestHostile_RedisUnreachable: with Redis stopped (SIGSTOP: connections
// hang) or dead, a read answers 503 within the request deadline instead
// of hanging.
func TestHostile_RedisUnreachable(t *testing.T) {
	r := startRedis(t)
	s := startEnv(t, t.TempDir(), []string{"FOLLOWGRAPH_REQUEST_TIMEOUT=1s"}, "--redis", r.url(), "--redis-prefix", "fgtest-hostile")
	ctx := context.Background()
	if _, err := s.client.Follow(ctx, 1, 2); err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Timeout: 10 * time.Second}
	check := func(what string) {
		t.Helper()
		for _, path := range []string{"/v1/users/1", "/v1/users/1/following", "/v1/users/1/relations?ids=2,3"} {
			begin := time.Now()
			resp, err := hc.Get(s.url + path)
			took := time.Since(begin)
			if err != nil {
				t.Fatalf("%s: GET %s: no answer in %v: %v", what, path, took.Round(time.Millisecond), err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusServiceUnavailable || took > 3*time.Second {
				t.Errorf("%s: GET %s answered %d after %v, want 503 within the 1 s deadline", what, path, resp.StatusCode, took.Round(time.Millisecond))
			}
		}
	}
	r.cmd.Process.Signal(syscall.SIGSTOP)
	check("Redis stopped")
	r.cmd.Process.Signal(syscall.SIGCONT)
	r.kill()
	check("Redis dead")
}

// TestServe_MemoryLimit: --memory-limit sets the Go runtime's soft memory
// limit, which /metrics reports.
func TestServe_MemoryLimit(t *testing.T) {
	s := startEnv(t, t.TempDir(), []string{"FOLLOWGRAPH_MEMORY_LIMIT=300MiB"})
	if got := metric(t, s, "go_gc_gomemlimit_bytes"); got != 300<<20 {
		t.Errorf("go_gc_gomemlimit_bytes = %v, want %d", got, 300<<20)
	}
}
