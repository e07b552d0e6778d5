package main

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/eventlog"
)

// writeFor runs writers against s for d and returns them with what was
// acknowledged.
func writeFor(t *testing.T, s *server, d time.Duration, seed int64) []*writer {
	t.Helper()
	const workers, perWorker, targets = 8, 10, 200
	ws := newWriters(workers, perWorker)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range ws {
		wg.Go(func() { ws[i].run(stop, s.client, seed+int64(i), targets) })
	}
	time.Sleep(d)
	close(stop)
	wg.Wait()
	for _, w := range ws {
		if w.inflight != nil {
			t.Fatalf("writer stopped with %v unanswered while the server ran", *w.inflight)
		}
	}
	return ws
}

// storeState reads every follow of the durable store, as the state a
// writer acknowledges: the store db names, or with db empty the data
// folder's SQLite store (as serve opens them).
func storeState(t *testing.T, db, data string) map[[2]fg.UserID]ack {
	t.Helper()
	out := map[[2]fg.UserID]ack{}
	storeEvents(t, db, data, func(e fg.Event) {
		if e.Op.Kind() != fg.KindFollow {
			return
		}
		a := ack{}
		if e.Op == fg.OpFollow {
			a = ack{following: true, since: e.Time}
		}
		out[[2]fg.UserID{e.User, e.Target}] = a
	})
	return out
}

// storeBlocks reads every block of the durable store (true) and every
// unblock (false), as storeState does the follows.
func storeBlocks(t *testing.T, db, data string) map[[2]fg.UserID]bool {
	t.Helper()
	out := map[[2]fg.UserID]bool{}
	storeEvents(t, db, data, func(e fg.Event) {
		if e.Op.Kind() == fg.KindBlock {
			out[[2]fg.UserID{e.User, e.Target}] = e.Op.On()
		}
	})
	return out
}

// storeEvents calls fn with every event of the durable store's Events.
func storeEvents(t *testing.T, db, data string, fn func(fg.Event)) {
	t.Helper()
	st, err := openStore(context.Background(), db, data, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for e, err := range st.Events(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		fn(e)
	}
}

// logPending opens the data folder's event log (the server is stopped) and
// returns how many events it holds that the store may lack.
func logPending(t *testing.T, data string) uint64 {
	t.Helper()
	ctx := context.Background()
	l, err := eventlog.Open(ctx, eventlog.Config{Dir: filepath.Join(data, "nats")})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	n, _, err := l.Pending(ctx, "persister")
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// agree checks the durable store against what the writers had
// acknowledged (an unfollow may also have left no row at all).
func agree(t *testing.T, ws []*writer, rows map[[2]fg.UserID]ack) {
	t.Helper()
	for _, w := range ws {
		for e, a := range w.acked {
			if got := rows[e]; got.following != a.following || (a.following && !got.since.Equal(a.since)) {
				t.Fatalf("store has %d→%d as %+v, acknowledged %+v", e[0], e[1], got, a)
			}
		}
	}
}

// TestServe_RestartAfterCleanStop: after SIGTERM the log is drained into the
// store, and store, log and engine agree with what was acknowledged.
func TestServe_RestartAfterCleanStop(t *testing.T) {
	data := t.TempDir()
	s := start(t, data)
	ws := writeFor(t, s, time.Second, 1)
	s.stop(t)

	if n := logPending(t, data); n != 0 {
		t.Fatalf("%d events still in the log after a clean stop", n)
	}
	agree(t, ws, storeState(t, "", data))
	s = start(t, data)
	for _, w := range ws {
		verify(t, s.client, w)
	}
	s.stop(t)
}

// TestServe_RestartAfterCrashMidPersist: the persister is held back so the
// log holds unpersisted events when the server is killed; the restarted
// engine has them (from the log), and once it has drained, the store too.
func TestServe_RestartAfterCrashMidPersist(t *testing.T) {
	data := t.TempDir()
	s := start(t, data, "--persist-rate", "300", "--persist-batch", "100")
	ws := writeFor(t, s, time.Second, 2)
	s.kill()

	pending := logPending(t, data)
	if pending == 0 {
		t.Fatal("the log held nothing unpersisted at the kill: the test did not crash mid-persist")
	}
	t.Logf("killed with %d events in the log not yet in the store", pending)

	t0 := time.Now()
	s = start(t, data)
	t1 := time.Now()
	for _, w := range ws {
		verify(t, s.client, w)
	}
	t2 := time.Now()
	s.stop(t)
	t.Logf("restart %v, verify %v, clean stop (draining the log) %v", t1.Sub(t0), t2.Sub(t1), time.Since(t2))
	if n := logPending(t, data); n != 0 {
		t.Fatalf("%d events still in the log after a clean stop", n)
	}
	agree(t, ws, storeState(t, "", data))
}
