package eventlog

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	fg "github.com/followgraph/followgraph"
)

// TestLog_AckedHeldAfterRepair: messages the persister acknowledged that
// the stream still holds after its store was reopened (its removal was
// lost with a failed write, here an older copy of the stream's files put
// back) are removed while the consumer runs on, so that the backlog
// reaches 0 and a clean stop does not wait on them.
func TestLog_AckedHeldAfterRepair(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, Config{Dir: dir})
	publish(t, l, follow(1, 2), follow(2, 3), follow(3, 4), follow(4, 5), follow(5, 6))
	msgs := filepath.Join(dir, "jetstream", "$G", "streams", l.cfg.Stream, "msgs")
	older := filepath.Join(t.TempDir(), "msgs")
	// The test closes and reopens the store itself, holding the lock the
	// watcher repairs under; the watcher must not reopen the store meanwhile
	// (two reopenings close together race inside nats-server), so the test
	// waits a tick of the watcher with the store closed and checks that it
	// stayed closed.
	withStoreClosed := func(do func()) {
		t.Helper()
		l.repairing.Lock()
		defer l.repairing.Unlock()
		if err := l.srv.ShutdownJetStream(); err != nil {
			t.Fatal(err)
		}
		do()
		time.Sleep(2 * repairEvery)
		if l.srv.JetStreamEnabled() {
			t.Fatal("the watcher reopened the store while the test held it closed")
		}
		if err := l.repairStore(); err != nil {
			t.Fatal(err)
		}
	}
	withStoreClosed(func() { copyDir(t, msgs, older) })
	c := startConsumer(t, l, "persister", 10, 50*time.Millisecond, nil)
	waitFor(t, 10*time.Second, "the five events handled", func() bool { return len(c.handled()) == 5 })
	waitFor(t, 10*time.Second, "the backlog at 0", func() bool {
		n, _, err := l.Pending(ctxTimeout(t, 5*time.Second), "persister")
		return err == nil && n == 0
	})
	withStoreClosed(func() {
		if err := os.RemoveAll(msgs); err != nil {
			t.Fatal(err)
		}
		copyDir(t, older, msgs)
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		n, _, err := l.Pending(ctxTimeout(t, 5*time.Second), "persister")
		if err == nil && n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Pending = %d, %v 10 s after the store was reopened holding five acknowledged messages, want 0", n, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.stop(t)
	if got := len(c.handled()); got < 5 {
		t.Fatalf("%d events handled, want the five", got)
	}
}

func copyDir(tb testing.TB, from, to string) {
	tb.Helper()
	if out, err := exec.Command("cp", "-a", from, to).CombinedOutput(); err != nil {
		tb.Fatalf("cp %s %s: %v: %s", from, to, err, out)
	}
}

// TestLog_BelowReserve: the embedded log says whether its disk is below
// the reserve, with the free space, and refuses writes while it is; with
// no reserve it never is.
func TestLog_BelowReserve(t *testing.T) {
	l := openLog(t, Config{Dir: t.TempDir(), DiskReserve: 1 << 60}) // more than any disk
	free, reserve, below := l.BelowReserve()
	if !below || free <= 0 || reserve != 1<<60 {
		t.Errorf("BelowReserve() = %d, %d, %v; want some free space, the reserve, true", free, reserve, below)
	}
	if err := l.Writable(context.Background()); fg.ErrorCode(err) != fg.EUnavailable {
		t.Errorf("Writable below the reserve: %v, want unavailable", err)
	}
	l = openLog(t, Config{Dir: t.TempDir(), DiskReserve: -1})
	if _, _, below := l.BelowReserve(); below {
		t.Error("below a reserve of none")
	}
}
