package eventlog

import (
	"context"
	"slices"
	"testing"
	"time"

	fg "github.com/followgraph/followgraph"
)

// since returns what Since returns after after, with the events it gave.
func since(tb testing.TB, l *Log, after uint64) ([]uint64, uint64, bool) {
	tb.Helper()
	var got []uint64
	upTo, complete, err := l.Since(ctxTimeout(tb, 10*time.Second), after, func(m Message) error {
		got = append(got, m.Seq)
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	slices.Sort(got)
	return slices.Compact(got), upTo, complete
}

// TestLog_AppliedWindow: with KeepApplied, the batches the persister
// applied stay readable after they leave the work queue, and Since reads
// a range from the window and the stream together; without it, Since
// says when the stream no longer reaches back.
func TestLog_AppliedWindow(t *testing.T) {
	l := openLog(t, Config{Dir: t.TempDir(), KeepApplied: true})
	var events []fg.Event
	for i := range 10 {
		events = append(events, follow(1, fg.UserID(2+i)))
	}
	publish(t, l, events...)
	c := startConsumer(t, l, "persister", 4, 20*time.Millisecond, func(ctx context.Context, b []Message) error {
		return l.KeepApplied(ctx, b)
	})
	waitFor(t, 10*time.Second, "the persister to take every event", func() bool { return len(c.handled()) == 10 })
	waitFor(t, 10*time.Second, "the work queue to drop them", func() bool {
		n, _, err := l.Pending(ctxTimeout(t, time.Second), "persister")
		return err == nil && n == 0
	})
	if got, upTo, complete := since(t, l, 0); len(got) != 10 || got[0] != 1 || upTo != 10 || !complete {
		t.Fatalf("Since(0) = %v, up to %d, complete %v; want 1..10, 10, true", got, upTo, complete)
	}
	if got, _, complete := since(t, l, 6); !slices.Equal(got, []uint64{7, 8, 9, 10}) || !complete {
		t.Fatalf("Since(6) = %v, complete %v; want 7..10, true", got, complete)
	}
	c.stop(t)
	publish(t, l, follow(1, 50), follow(1, 51)) // 11, 12: not applied yet
	if got, upTo, complete := since(t, l, 8); !slices.Equal(got, []uint64{9, 10, 11, 12}) || upTo != 12 || !complete {
		t.Fatalf("Since(8) = %v, up to %d, complete %v; want 9..12 from both, 12, true", got, upTo, complete)
	}

	plain := openLog(t, Config{Dir: t.TempDir()})
	publish(t, plain, follow(1, 2), follow(1, 3))
	pc := startConsumer(t, plain, "persister", 4, 20*time.Millisecond, nil)
	waitFor(t, 10*time.Second, "the persister to take every event", func() bool { return len(pc.handled()) == 2 })
	waitFor(t, 10*time.Second, "the work queue to drop them", func() bool {
		n, _, err := plain.Pending(ctxTimeout(t, time.Second), "persister")
		return err == nil && n == 0
	})
	if got, _, complete := since(t, plain, 0); len(got) != 0 || complete {
		t.Fatalf("Since(0) without a window = %v, complete %v; want nothing, false", got, complete)
	}
	if _, _, complete := since(t, plain, 2); !complete {
		t.Fatal("Since(last) without a window is not complete: nothing came after it")
	}
}

// TestLog_SinceWhilePersisting: events the persister moves from the
// stream into the applied window while Since reads are read all the same
// (Since reads the stream first, the window second).
func TestLog_SinceWhilePersisting(t *testing.T) {
	l := openLog(t, Config{Dir: t.TempDir(), KeepApplied: true})
	const n = 2*replayBatch + 10 // more than Replay's first read
	events := make([]fg.Event, n)
	for i := range events {
		events[i] = follow(1, fg.UserID(2+i))
	}
	publish(t, l, events...)
	persisted := false
	got := map[uint64]bool{}
	_, complete, err := l.Since(ctxTimeout(t, 30*time.Second), 0, func(m Message) error {
		got[m.Seq] = true
		if !persisted { // the persister takes everything, under Since's read
			persisted = true
			c := startConsumer(t, l, "persister", 500, 20*time.Millisecond, func(ctx context.Context, b []Message) error {
				return l.KeepApplied(ctx, b)
			})
			waitFor(t, 30*time.Second, "the work queue to drain", func() bool {
				n, _, err := l.Pending(ctxTimeout(t, time.Second), "persister")
				return err == nil && n == 0
			})
			c.stop(t)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != n || !complete {
		t.Fatalf("Since read %d of %d events (complete %v) while they were persisted", len(got), n, complete)
	}
}
