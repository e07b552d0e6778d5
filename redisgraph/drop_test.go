package redisgraph

import (
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/rueidis"
)

// TestDropFromOutbox: the deletes of settled outbox entries are made, and
// are bounded work: while Redis is stalled (a Redis of the test's own,
// paused with SIGSTOP), many acknowledged writes start no goroutine each;
// Close returns while Redis is still stalled, no delete runs after it,
// and writes racing with it or coming after it leave their entries.
func TestDropFromOutbox(t *testing.T) {
	addr, proc := privateRedis(t)
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	g, err := New(t.Context(), c, WithPrefix(randomPrefix()))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	ctx := t.Context()

	// A delete is made.
	stream := g.outbox(1)
	id, err := c.Do(ctx, c.B().Xadd().Key(stream).Id("*").FieldValue().FieldValue("u", "1").Build()).ToString()
	if err != nil {
		t.Fatal(err)
	}
	g.dropFromOutbox(1, id)
	if err := waitFor(5*time.Second, func() bool {
		n, err := c.Do(ctx, c.B().Xlen().Key(stream).Build()).AsInt64()
		return err == nil && n == 0
	}); err != nil {
		t.Fatalf("the outbox entry was not deleted: %v", err)
	}

	// Stalled: many deletes, few goroutines.
	if err := proc.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	before := runtime.NumGoroutine()
	const writes = 10 * dropQueue
	for range writes {
		g.dropFromOutbox(1, id)
	}
	if n := runtime.NumGoroutine() - before; n > 10 {
		t.Errorf("%d deletes against a stalled Redis started %d goroutines, want a bounded few", writes, n)
	}

	// Close, with writes racing with it, returns while Redis is stalled.
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 1000 {
				g.dropFromOutbox(1, id)
			}
		})
	}
	closed := make(chan struct{})
	go func() {
		g.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(dropTimeout / 2):
		t.Fatal("Close did not return while Redis was stalled")
	}
	wg.Wait()
	g.dropFromOutbox(1, id) // after Close: left to the relay
	g.Close()               // again
	var stacks strings.Builder
	pprof.Lookup("goroutine").WriteTo(&stacks, 1)
	if strings.Contains(stacks.String(), "dropLoop") {
		t.Errorf("a goroutine deleting outbox entries runs after Close:\n%s", stacks.String())
	}
	if err := proc.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
}
