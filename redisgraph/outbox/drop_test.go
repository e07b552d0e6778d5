package outbox

import (
	"net"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/followgraph/followgraph/redisgraph/internal/redistest"
	"github.com/redis/rueidis"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// TestDrop: the deletes of settled outbox entries are made, and
// are bounded work: while Redis is stalled (a Redis of the test's own,
// paused with SIGSTOP), many acknowledged writes start no goroutine each;
// Close returns while Redis is still stalled (within the client's dial
// timeout, should the client be dialing it), no delete runs after it,
// and writes racing with it or coming after it leave their entries.
func TestDrop(t *testing.T) {
	addr, proc := redistest.Private(t)
	const dial = time.Second // bounds Close while the client dials the stalled Redis
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, Dialer: net.Dialer{Timeout: dial}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	g := NewDropper(c)
	defer g.Close()
	ctx := t.Context()

	// A delete is made.
	stream := "fgtest-outbox"
	id, err := c.Do(ctx, c.B().Xadd().Key(stream).Id("*").FieldValue().FieldValue("u", "1").Build()).ToString()
	if err != nil {
		t.Fatal(err)
	}
	g.Drop(stream, id)
	if err := redistest.WaitFor(5*time.Second, func() bool {
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
		g.Drop(stream, id)
	}
	if n := runtime.NumGoroutine() - before; n > 10 {
		t.Errorf("%d deletes against a stalled Redis started %d goroutines, want a bounded few", writes, n)
	}

	const loop = "(*Dropper).loop" // in the goroutine's stack
	if !strings.Contains(goroutines(), loop) {
		t.Fatalf("no goroutine runs %s before Close", loop)
	}

	// Close, with writes racing with it, returns while Redis is stalled.
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 1000 {
				g.Drop(stream, id)
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
	case <-time.After(3 * dial):
		t.Fatalf("Close did not return while Redis was stalled:\n%s", goroutines())
	}
	wg.Wait()
	g.Drop(stream, id) // after Close: left to the relay
	g.Close()          // again
	// Close returned once the goroutine closed done, its last act: it is
	// gone a moment later.
	stacks := goroutines()
	for i := 0; i < 100 && strings.Contains(stacks, loop); i++ {
		time.Sleep(10 * time.Millisecond)
		stacks = goroutines()
	}
	if strings.Contains(stacks, loop) {
		t.Errorf("a goroutine deleting outbox entries runs after Close:\n%s", stacks)
	}
	if err := proc.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
}

// TestDropBatches: the deletes that queue up while Redis is busy go as one
// XDEL of many entries, not one command each, and every entry is deleted.
func TestDropBatches(t *testing.T) {
	addr, proc := redistest.Private(t)
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	g := NewDropper(c)
	defer g.Close()
	ctx := t.Context()
	stream := "fgtest-outbox"
	const entries = 1000
	ids := make([]string, entries)
	for i := range ids {
		if ids[i], err = c.Do(ctx, c.B().Xadd().Key(stream).Id("*").FieldValue().FieldValue("u", "1").Build()).ToString(); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Do(ctx, c.B().ConfigResetstat().Build()).Error(); err != nil {
		t.Fatal(err)
	}
	// Stalled while they queue up (the first may be sent alone).
	if err := proc.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		g.Drop(stream, id)
	}
	if err := proc.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if err := redistest.WaitFor(5*time.Second, func() bool {
		n, err := c.Do(ctx, c.B().Xlen().Key(stream).Build()).AsInt64()
		return err == nil && n == 0
	}); err != nil {
		t.Fatalf("the outbox entries were not all deleted: %v", err)
	}
	// One for the first entry, then a command per dropBatch entries.
	if calls, _ := redistest.CommandStat(t, c, "xdel"); calls > 2+entries/dropBatch {
		t.Errorf("%d entries deleted by %d XDEL commands, want at most %d", entries, calls, 2+entries/dropBatch)
	}
}

// goroutines returns the stacks of every goroutine.
func goroutines() string {
	var b strings.Builder
	pprof.Lookup("goroutine").WriteTo(&b, 1)
	return b.String()
}
