package redisgraph

import (
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/rueidis"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/redisgraph/internal/redistest"
	"github.com/followgraph/followgraph/redisgraph/internal/replicas"
)

// replicaOf starts a Redis of the test's own replicating primary, waits
// until it is in sync, and returns its client and process.
func replicaOf(t *testing.T, primary string) (rueidis.Client, func(syscall.Signal)) {
	t.Helper()
	addr, proc := redistest.Private(t)
	host, port, _ := net.SplitHostPort(primary)
	c := redistest.SingleClient(t, addr)
	if err := c.Do(t.Context(), c.B().Replicaof().Host(host).Port(mustAtoi(t, port)).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if err := redistest.WaitFor(10*time.Second, func() bool {
		info, err := c.Do(t.Context(), c.B().Info().Section("replication").Build()).ToString()
		return err == nil && strings.Contains(info, "master_link_status:up")
	}); err != nil {
		t.Fatalf("the replica did not sync: %v", err)
	}
	return c, func(s syscall.Signal) { proc.Signal(s) }
}

// TestReplicas: with a replica to read from, reads are served there and
// see every change acknowledged before them, the reader's own included;
// with the replica stopped, every read is still answered, by the master,
// within its deadline.
func TestReplicas(t *testing.T) {
	primary, _ := redistest.Private(t)
	rc, signal := replicaOf(t, primary)
	g := newTestGraph(t, redistest.SingleClient(t, primary), WithReplicaClients(rc))
	ctx := t.Context()
	for i := range 200 {
		target := fg.UserID(2 + i%50)
		if i%3 == 2 {
			if _, err := g.Unfollow(ctx, 1, target); err != nil {
				t.Fatal(err)
			}
		} else if _, err := g.Follow(ctx, 1, target); err != nil {
			t.Fatal(err)
		}
		want := i%3 != 2
		e, err := g.IsFollowing(ctx, 1, target)
		if err != nil || e.Following != want {
			t.Fatalf("read %d right after its write: %+v, %v; want following %v", i, e, err, want)
		}
	}
	served := replicaServed(g)
	if served == 0 {
		t.Fatal("no read was served by the replica")
	}
	t.Logf("reads served by the replica: %v; sent on to the master as it lagged: %v", served, replicaLagged(g))

	signal(syscall.SIGSTOP)
	defer signal(syscall.SIGCONT)
	for i := range 20 {
		if _, err := g.Follow(ctx, 1, fg.UserID(100+i)); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		e, err := g.IsFollowing(ctx, 1, fg.UserID(100+i))
		if err != nil || !e.Following {
			t.Fatalf("with the replica stopped: %+v, %v", e, err)
		}
		if took := time.Since(start); took > 2*replicas.Timeout+time.Second {
			t.Fatalf("a read took %v with the replica stopped", took)
		}
	}
	if replicaServed(g) != served {
		t.Error("a stopped replica served reads")
	}
}

func mustAtoi(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// replicaServed and replicaLagged return g's replica reads served, and
// sent to the master as the replica lagged.
func replicaServed(g *testGraph) uint64 { s, _ := g.replicas.Stats(); return s }
func replicaLagged(g *testGraph) uint64 { _, l := g.replicas.Stats(); return l }
