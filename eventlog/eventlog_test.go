package eventlog

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/synadia-io/orbit.go/jetstreamext"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/internal/testenv"
)

// testLogger shows warnings and errors on stderr (a server goroutine may
// log after a test ends, when t.Log would panic).
func testLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// openLog opens cfg and closes the log when the test ends.
func openLog(tb testing.TB, cfg Config) *Log {
	tb.Helper()
	if cfg.Logger == nil {
		cfg.Logger = testLogger()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := Open(ctx, cfg)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() { l.Close() })
	return l
}

// newLogFunc opens a fresh, empty log for one test.
type newLogFunc func(tb testing.TB) *Log

func embedded(tb testing.TB) *Log { return openLog(tb, Config{Dir: tb.TempDir()}) }

// versions hands out versions of the current millisecond and after, each
// once, like an engine's clock.
var versions atomic.Uint64

func nextVersion() fg.Version {
	now := uint64(fg.VersionAt(time.Now().UnixMilli()))
	for {
		v := versions.Load()
		next := max(v+1, now)
		if versions.CompareAndSwap(v, next) {
			return fg.Version(next)
		}
	}
}

func follow(u, t fg.UserID) fg.Event   { return fg.NewEvent(u, t, fg.OpFollow, nextVersion()) }
func unfollow(u, t fg.UserID) fg.Event { return fg.NewEvent(u, t, fg.OpUnfollow, nextVersion()) }

func ctxTimeout(tb testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	tb.Cleanup(cancel)
	return ctx
}

func publish(tb testing.TB, l *Log, events ...fg.Event) {
	tb.Helper()
	for _, e := range events {
		if err := l.Publish(ctxTimeout(tb, 10*time.Second), e); err != nil {
			tb.Fatalf("Publish(%s): %v", e.ID(), err)
		}
	}
}

func replayAll(tb testing.TB, l *Log) []Message {
	tb.Helper()
	var ms []Message
	if err := l.Replay(ctxTimeout(tb, 30*time.Second), func(m Message) error {
		ms = append(ms, m)
		return nil
	}); err != nil {
		tb.Fatalf("Replay: %v", err)
	}
	return ms
}

func eventsOf(ms []Message) []fg.Event {
	es := make([]fg.Event, len(ms))
	for i, m := range ms {
		es[i] = m.Event
	}
	return es
}

// publishConcurrently publishes perEdge changes of each of edges edges,
// one goroutine per edge, alternating follow and unfollow, and returns
// the events of each edge in the order they were acknowledged.
func publishConcurrently(tb testing.TB, l *Log, edges, perEdge int) map[[2]fg.UserID][]fg.Event {
	tb.Helper()
	var (
		mu   sync.Mutex
		sent = map[[2]fg.UserID][]fg.Event{}
		wg   sync.WaitGroup
		errs = make(chan error, edges)
	)
	for g := range edges {
		wg.Go(func() {
			u, t := fg.UserID(g+1), fg.UserID(g+1000)
			var es []fg.Event
			for i := range perEdge {
				e := follow(u, t)
				if i%2 == 1 {
					e = unfollow(u, t)
				}
				if err := l.Publish(context.Background(), e); err != nil {
					errs <- err
					return
				}
				es = append(es, e)
			}
			mu.Lock()
			sent[[2]fg.UserID{u, t}] = es
			mu.Unlock()
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		tb.Fatalf("Publish: %v", err)
	}
	return sent
}

// consumer runs Consume in the background and collects what it handles.
type consumer struct {
	mu      sync.Mutex
	batches [][]Message
	cancel  context.CancelFunc
	done    chan error
}

func startConsumer(tb testing.TB, l *Log, durable string, max int, wait time.Duration, handle func(context.Context, []Message) error) *consumer {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	c := &consumer{cancel: cancel, done: make(chan error, 1)}
	go func() {
		c.done <- l.Consume(ctx, durable, max, wait, func(ctx context.Context, b []Message, _ uint64) error {
			if handle != nil {
				if err := handle(ctx, b); err != nil {
					return err
				}
			}
			c.mu.Lock()
			c.batches = append(c.batches, slices.Clone(b))
			c.mu.Unlock()
			return nil
		})
	}()
	tb.Cleanup(func() { c.stop(tb) })
	return c
}

// stop cancels Consume and returns its result.
func (c *consumer) stop(tb testing.TB) error {
	c.cancel()
	select {
	case err, ok := <-c.done:
		if ok {
			close(c.done)
		}
		return err
	case <-time.After(30 * time.Second):
		tb.Fatal("Consume did not return after its context ended")
		return nil
	}
}

func (c *consumer) handled() []Message {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ms []Message
	for _, b := range c.batches {
		ms = append(ms, b...)
	}
	return ms
}

// waitFor polls cond until it holds or d passes.
func waitFor(tb testing.TB, d time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func checkCode(tb testing.TB, err error, code string) {
	tb.Helper()
	if got := fg.ErrorCode(err); got != code {
		tb.Fatalf("error %v has code %q, want %q", err, got, code)
	}
}

// TestLog runs the behaviour common to both modes on the embedded server.
func TestLog(t *testing.T) { runSuite(t, embedded) }

// TestExternal runs the same behaviour against an external NATS server,
// each test on a stream and subject prefix of its own, deleted at the end.
func TestExternal(t *testing.T) {
	url := externalNATS(t)
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	var n atomic.Int32
	runSuite(t, func(tb testing.TB) *Log {
		i := n.Add(1)
		stream := fmt.Sprintf("FGTEST_%s_%d", run, i)
		l := openLog(tb, Config{URL: url, Stream: stream, Subject: fmt.Sprintf("fgtest.%s.%d.edges", run, i)})
		tb.Cleanup(func() { deleteStream(tb, url, stream) })
		return l
	})
}

// externalNATS returns the external NATS server's URL, or skips the test
// (fails it in CI).
func externalNATS(t *testing.T) string {
	t.Helper()
	return testenv.Server(t, testenv.NATS, testenv.NATSHint)
}

// deleteStream deletes a test's stream over a connection of its own (the
// test may have closed its Log).
func deleteStream(tb testing.TB, url, stream string) {
	nc, err := nats.Connect(url)
	if err != nil {
		tb.Errorf("deleting stream %s: %v", stream, err)
		return
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err == nil {
		err = js.DeleteStream(ctxTimeout(tb, 10*time.Second), stream)
	}
	if err != nil {
		tb.Errorf("deleting stream %s: %v", stream, err)
	}
}

func runSuite(t *testing.T, newLog newLogFunc) {
	t.Run("PublishReplay", func(t *testing.T) { testPublishReplay(t, newLog) })
	t.Run("Duplicate", func(t *testing.T) { testDuplicate(t, newLog) })
	t.Run("Consume", func(t *testing.T) { testConsume(t, newLog) })
	t.Run("EveryOp", func(t *testing.T) { testEveryOp(t, newLog) })
	t.Run("ConsumeRedelivers", func(t *testing.T) { testConsumeRedelivers(t, newLog) })
	t.Run("OneConsumer", func(t *testing.T) { testOneConsumer(t, newLog) })
	t.Run("Undecodable", func(t *testing.T) { testUndecodable(t, newLog) })
	t.Run("Pending", func(t *testing.T) { testPending(t, newLog) })
	t.Run("Oldest", func(t *testing.T) { testOldest(t, newLog) })
	t.Run("InvalidEvent", func(t *testing.T) { testInvalidEvent(t, newLog) })
	t.Run("Ready", func(t *testing.T) { testReady(t, newLog) })
}

func testPublishReplay(t *testing.T, newLog newLogFunc) {
	l := newLog(t)
	const edges, perEdge = 64, 40
	sent := publishConcurrently(t, l, edges, perEdge)

	got := replayAll(t, l)
	if len(got) != edges*perEdge {
		t.Fatalf("Replay returned %d events, want %d", len(got), edges*perEdge)
	}
	byEdge := map[[2]fg.UserID][]fg.Event{}
	for i, m := range got {
		if i > 0 && m.Seq <= got[i-1].Seq {
			t.Fatalf("Replay out of order: seq %d after %d", m.Seq, got[i-1].Seq)
		}
		k := [2]fg.UserID{m.Event.User, m.Event.Target}
		byEdge[k] = append(byEdge[k], m.Event)
	}
	for k, want := range sent {
		if !slices.Equal(byEdge[k], want) {
			t.Fatalf("edge %v: Replay returned %d events not in publish order", k, len(byEdge[k]))
		}
	}

	// fn's error stops Replay and is returned.
	stop := errors.New("stop")
	n := 0
	err := l.Replay(ctxTimeout(t, 10*time.Second), func(Message) error {
		if n++; n == 3 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || n != 3 {
		t.Fatalf("Replay with a failing fn: %v after %d calls, want stop after 3", err, n)
	}
}

func testDuplicate(t *testing.T, newLog newLogFunc) {
	l := newLog(t)
	e := follow(1, 2)
	publish(t, l, e, e)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if err := l.Publish(context.Background(), e); err != nil {
				t.Errorf("Publish of a duplicate: %v", err)
			}
		})
	}
	wg.Wait()
	other := unfollow(1, 2)
	publish(t, l, other)
	if got := eventsOf(replayAll(t, l)); !slices.Equal(got, []fg.Event{e, other}) {
		t.Fatalf("stored %v, want %v once and %v", got, e, other)
	}
}

func testConsume(t *testing.T, newLog newLogFunc) {
	l := newLog(t)
	const edges, perEdge, max = 16, 50, 64
	publishConcurrently(t, l, edges, perEdge)
	all := replayAll(t, l)

	c := startConsumer(t, l, "persister", max, 50*time.Millisecond, nil)
	// Events published while Consume runs arrive too.
	late := []fg.Event{follow(7, 8), follow(8, 7)}
	publish(t, l, late...)
	total := len(all) + len(late)
	waitFor(t, 30*time.Second, "all events handled", func() bool { return len(c.handled()) >= total })
	if err := c.stop(t); err != nil {
		t.Fatalf("Consume returned %v after its context ended, want nil", err)
	}
	got := c.handled()
	if len(got) != total {
		t.Fatalf("handled %d events, want %d", len(got), total)
	}
	for _, b := range c.batches {
		if len(b) == 0 || len(b) > max {
			t.Fatalf("batch of %d events, want 1 to %d", len(b), max)
		}
	}
	if !slices.Equal(got[:len(all)], all) {
		t.Fatal("Consume did not deliver the stored events in stream order")
	}
	if !slices.Equal(eventsOf(got[len(all):]), late) {
		t.Fatal("Consume did not deliver the late events")
	}
	if n, _, err := l.Pending(ctxTimeout(t, 5*time.Second), "persister"); err != nil || n != 0 {
		t.Fatalf("Pending after everything was acknowledged = %d, %v; want 0", n, err)
	}
	if rest := replayAll(t, l); len(rest) != 0 {
		t.Fatalf("%d acknowledged events are still in the stream", len(rest))
	}
	// A new run of the same consumer gets nothing again.
	c = startConsumer(t, l, "persister", max, 50*time.Millisecond, nil)
	time.Sleep(300 * time.Millisecond)
	c.stop(t)
	if n := len(c.handled()); n != 0 {
		t.Fatalf("acknowledged events were redelivered: %d", n)
	}
}

// testEveryOp: an event of every op, the mute's times and the per-user
// ops' target 0 included, is stored under the stream's subjects, replayed
// and consumed as it was published.
func testEveryOp(t *testing.T, newLog newLogFunc) {
	l := newLog(t)
	sent := codecEvents(time.Now().UnixMilli())
	publish(t, l, sent...)
	if got := eventsOf(replayAll(t, l)); !slices.Equal(got, sent) {
		t.Fatalf("Replay returned %v, want %v", got, sent)
	}
	c := startConsumer(t, l, "persister", 64, 50*time.Millisecond, nil)
	waitFor(t, 30*time.Second, "every op consumed", func() bool { return len(c.handled()) >= len(sent) })
	c.stop(t)
	if got := eventsOf(c.handled()); !slices.Equal(got, sent) {
		t.Fatalf("Consume delivered %v, want %v", got, sent)
	}
	if n := l.Undecodable(); n != 0 {
		t.Fatalf("%d events undecodable", n)
	}
}

func testConsumeRedelivers(t *testing.T, newLog newLogFunc) {
	l := newLog(t)
	events := []fg.Event{follow(1, 2), follow(2, 3), follow(3, 4), unfollow(1, 2)}
	publish(t, l, events...)
	var (
		mu     sync.Mutex
		failed []Message
		calls  atomic.Int32
	)
	c := startConsumer(t, l, "persister", 100, 50*time.Millisecond, func(_ context.Context, b []Message) error {
		if calls.Add(1) <= 2 { // the store is down, twice
			mu.Lock()
			failed = append(failed, b...)
			mu.Unlock()
			return errors.New("store unavailable")
		}
		return nil
	})
	start := time.Now()
	waitFor(t, 30*time.Second, "the failed batch to be redelivered", func() bool { return len(c.handled()) == len(events) })
	if d := time.Since(start); d < retryBase+2*retryBase {
		t.Errorf("redelivered after %s, want a back-off of at least %s", d, 3*retryBase)
	}
	if got := eventsOf(c.handled()); !slices.Equal(got, events) {
		t.Fatalf("after failures handled %v, want %v", got, events)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(eventsOf(failed), append(slices.Clone(events), events...)) {
		t.Fatalf("the failed attempts saw %v, want the events twice", eventsOf(failed))
	}
}

func testOneConsumer(t *testing.T, newLog newLogFunc) {
	l := newLog(t)
	c := startConsumer(t, l, "persister", 10, 50*time.Millisecond, nil)
	publish(t, l, follow(1, 2))
	waitFor(t, 10*time.Second, "the consumer to run", func() bool { return len(c.handled()) == 1 })
	err := l.Consume(ctxTimeout(t, 10*time.Second), "other", 10, 50*time.Millisecond, func(context.Context, []Message, uint64) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "exactly one persister") {
		t.Fatalf("a second consumer: %v, want a refusal", err)
	}
	c.stop(t)
}

func testUndecodable(t *testing.T, newLog newLogFunc) {
	l := newLog(t)
	e1, e2 := follow(1, 2), follow(2, 1)
	publish(t, l, e1)
	ctx := ctxTimeout(t, 10*time.Second)
	for _, bad := range []struct{ subject, data string }{
		{l.cfg.Subject + ".follow", "not json"},
		{l.cfg.Subject + ".unfollow", string(encode(follow(3, 4)))}, // subject disagrees with op
		{l.cfg.Subject + ".other", `{}`},
	} {
		if _, err := l.js.Publish(ctx, bad.subject, []byte(bad.data)); err != nil {
			t.Fatal(err)
		}
	}
	publish(t, l, e2)
	if got := eventsOf(replayAll(t, l)); !slices.Equal(got, []fg.Event{e1, e2}) {
		t.Fatalf("Replay returned %v, want only the two events", got)
	}
	if n := l.Undecodable(); n != 3 {
		t.Fatalf("Undecodable = %d after Replay, want 3", n)
	}
	c := startConsumer(t, l, "persister", 10, 50*time.Millisecond, nil)
	waitFor(t, 10*time.Second, "the events", func() bool { return len(c.handled()) == 2 })
	c.stop(t)
	if got := eventsOf(c.handled()); !slices.Equal(got, []fg.Event{e1, e2}) {
		t.Fatalf("Consume handled %v, want only the two events", got)
	}
	if n := l.Undecodable(); n != 6 {
		t.Fatalf("Undecodable = %d after Consume, want 6", n)
	}
	if n, _, err := l.Pending(ctx, "persister"); err != nil || n != 0 {
		t.Fatalf("Pending = %d, %v: undecodable messages were not acknowledged", n, err)
	}
}

func testPending(t *testing.T, newLog newLogFunc) {
	l := newLog(t)
	ctx := ctxTimeout(t, 10*time.Second)
	if n, oldest, err := l.Pending(ctx, "persister"); err != nil || n != 0 || !oldest.IsZero() {
		t.Fatalf("Pending of an empty log = %d, %v, %v", n, oldest, err)
	}
	before := time.Now()
	publish(t, l, follow(1, 2))
	time.Sleep(20 * time.Millisecond)
	publish(t, l, follow(2, 3), follow(3, 4))
	n, oldest, err := l.Pending(ctx, "persister")
	if err != nil || n != 3 {
		t.Fatalf("Pending = %d, %v; want 3", n, err)
	}
	if oldest.Before(before.Add(-time.Second)) || oldest.After(before.Add(20*time.Millisecond)) {
		t.Fatalf("oldest = %s, want about %s", oldest, before)
	}
}

// testOldest: Oldest is the version of the first event the persister has
// not acknowledged, by the log's order, not the lowest.
func testOldest(t *testing.T, newLog newLogFunc) {
	l := newLog(t)
	ctx := ctxTimeout(t, 20*time.Second)
	if v, ok, err := l.Oldest(ctx, "persister"); err != nil || ok {
		t.Fatalf("Oldest of an empty log = %d, %v, %v", v, ok, err)
	}
	newer := follow(1, 2)
	older := fg.NewEvent(2, 3, fg.OpFollow, newer.Version-fg.VersionAt(1000))
	publish(t, l, newer, older)
	if v, ok, err := l.Oldest(ctx, "persister"); err != nil || !ok || v != newer.Version {
		t.Fatalf("Oldest = %d, %v, %v; want %d, the first published", v, ok, err, newer.Version)
	}
	var calls atomic.Int32
	c := startConsumer(t, l, "persister", 1, 50*time.Millisecond, func(context.Context, []Message) error {
		if calls.Add(1) > 1 {
			return errors.New("the store is down")
		}
		return nil
	})
	waitFor(t, 10*time.Second, "the first event acknowledged", func() bool {
		v, ok, err := l.Oldest(ctx, "persister")
		return err == nil && ok && v == older.Version
	})
	c.stop(t)
}

func testInvalidEvent(t *testing.T, newLog newLogFunc) {
	l := newLog(t)
	bad := fg.Event{User: 1, Target: 2, Op: fg.OpFollow, Version: 5} // time is not its version's
	checkCode(t, l.Publish(context.Background(), bad), fg.EInvalidArgument)
	checkCode(t, l.Publish(context.Background(), fg.NewEvent(3, 3, fg.OpFollow, nextVersion())), fg.ESelfFollow)
	if got := replayAll(t, l); len(got) != 0 {
		t.Fatalf("invalid events were stored: %v", got)
	}
}

func testReady(t *testing.T, newLog newLogFunc) {
	l := newLog(t)
	if err := l.Ready(ctxTimeout(t, 5*time.Second)); err != nil {
		t.Fatalf("Ready: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	ctx := ctxTimeout(t, 5*time.Second)
	checkCode(t, l.Ready(ctx), fg.EUnavailable)
	checkCode(t, l.Publish(ctx, follow(1, 2)), fg.EUnavailable)
	_, _, err := l.Pending(ctx, "persister")
	checkCode(t, err, fg.EUnavailable)
	checkCode(t, l.Replay(ctx, func(Message) error { return nil }), fg.EUnavailable)
	if err := l.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// TestReplay_DirectGets: Replay reads with one batched direct get on a
// server that has them (the embedded one), and with one direct get per
// event on a server before 2.11; both skip what the stream no longer holds.
func TestReplay_DirectGets(t *testing.T) {
	t.Run("Embedded", func(t *testing.T) { testDirectGets(t, embedded(t)) })
	t.Run("External", func(t *testing.T) {
		url := externalNATS(t)
		name := "FGTEST_GET_" + strconv.FormatInt(time.Now().UnixNano(), 36)
		l := openLog(t, Config{URL: url, Stream: name, Subject: "fgtest." + strings.ToLower(name) + ".edges"})
		t.Cleanup(func() { deleteStream(t, url, name) })
		testDirectGets(t, l)
	})
}

func testDirectGets(t *testing.T, l *Log) {
	events := []fg.Event{follow(1, 2), follow(1, 3), follow(1, 4)}
	publish(t, l, events...)
	ctx := ctxTimeout(t, 10*time.Second)
	st, err := l.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.stream.DeleteMsg(ctx, st.First+1); err != nil {
		t.Fatal(err)
	}
	want := []uint64{st.First, st.Last}

	var major, minor int
	fmt.Sscanf(l.nc.ConnectedServerVersion(), "%d.%d", &major, &minor)
	batched := major > 2 || major == 2 && minor >= 11
	got, err := l.getBatch(ctx, st.First)
	switch {
	case batched && err != nil:
		t.Fatalf("server %s: batched direct get: %v", l.nc.ConnectedServerVersion(), err)
	case batched && !slices.Equal(seqs(got), want):
		t.Fatalf("batched direct get from %d returned seqs %v, want %v", st.First, seqs(got), want)
	case !batched && !errors.Is(err, jetstreamext.ErrBatchUnsupported):
		t.Fatalf("server %s: batched direct get returned %v, want ErrBatchUnsupported", l.nc.ConnectedServerVersion(), err)
	}
	if got, err := l.getNext(ctx, st.First+1); err != nil || !slices.Equal(seqs(got), want[1:]) {
		t.Fatalf("direct get from %d returned seqs %v, %v; want %v", st.First+1, seqs(got), err, want[1:])
	}
	if got, err := l.getNext(ctx, st.Last+1); err != nil || len(got) != 0 {
		t.Fatalf("direct get past the end returned %d messages, %v; want none", len(got), err)
	}
	if r := eventsOf(replayAll(t, l)); !slices.Equal(r, []fg.Event{events[0], events[2]}) {
		t.Fatalf("Replay returned %v, want %v", r, []fg.Event{events[0], events[2]})
	}
}

func seqs(ms []*jetstream.RawStreamMsg) []uint64 {
	out := make([]uint64, len(ms))
	for i, m := range ms {
		out[i] = m.Sequence
	}
	return out
}

// TestLog_Restart: everything stored survives Close and Open of the same
// Dir, message-id dedup included.
func TestLog_Restart(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, Config{Dir: dir})
	sent := publishConcurrently(t, l, 8, 25)
	before := replayAll(t, l)
	if err := l.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	l = openLog(t, Config{Dir: dir})
	after := replayAll(t, l)
	if !slices.Equal(after, before) {
		t.Fatalf("after a restart Replay returned %d events, before %d", len(after), len(before))
	}
	// A repeated publish within the duplicate window is still dropped.
	publish(t, l, sent[[2]fg.UserID{1, 1000}][0])
	if n := len(replayAll(t, l)); n != len(before) {
		t.Fatalf("a duplicate published after a restart was stored: %d events, want %d", n, len(before))
	}
}

// TestLog_CrashBeforeAck: a batch handed to the persister but never
// acknowledged (the process stops first) is redelivered on the next start;
// acknowledged batches are not.
func TestLog_CrashBeforeAck(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, Config{Dir: dir})
	l.ackWait = time.Second
	first := []fg.Event{follow(1, 2), follow(2, 3)}
	publish(t, l, first...)
	c := startConsumer(t, l, "persister", 100, 50*time.Millisecond, nil)
	waitFor(t, 10*time.Second, "the first batch", func() bool { return len(c.handled()) == len(first) })
	c.stop(t)
	// The stopped Consume's last pull stays open on the server until its
	// wait ends; what it would deliver goes back to the stream (nak), to
	// come later and maybe out of order. Let it expire.
	time.Sleep(200 * time.Millisecond)

	second := []fg.Event{follow(3, 4), unfollow(1, 2), follow(4, 5)}
	publish(t, l, second...)
	got, release := make(chan []Message, 1), make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	consumeErr := make(chan error, 1)
	go func() {
		consumeErr <- l.Consume(ctx, "persister", 100, 50*time.Millisecond, func(_ context.Context, b []Message, _ uint64) error {
			got <- b
			<-release
			return nil // too late: the log is gone
		})
	}()
	if b := <-got; !slices.Equal(eventsOf(b), second) {
		t.Fatalf("second batch %v, want %v", eventsOf(b), second)
	}
	if err := l.Close(); err != nil { // the "crash": the server stops with the batch unacknowledged
		t.Fatalf("Close: %v", err)
	}
	close(release)
	select {
	case err := <-consumeErr:
		checkCode(t, err, fg.EUnavailable)
	case <-time.After(20 * time.Second):
		t.Fatal("Consume did not return after Close")
	}

	l = openLog(t, Config{Dir: dir})
	l.ackWait = time.Second
	if n, _, err := l.Pending(ctxTimeout(t, 5*time.Second), "persister"); err != nil || n != uint64(len(second)) {
		t.Fatalf("Pending after the crash = %d, %v; want %d", n, err, len(second))
	}
	c = startConsumer(t, l, "persister", 100, 50*time.Millisecond, nil)
	waitFor(t, 20*time.Second, "the redelivery", func() bool { return len(c.handled()) >= len(second) })
	time.Sleep(200 * time.Millisecond)
	c.stop(t)
	// Exactly the unacknowledged, each once; a redelivery after a restart
	// need not keep the stream's order (its messages' ack timers expire
	// one by one), and nothing relies on it: a store applies by version.
	byVersion := func(a, b fg.Event) int { return cmp.Compare(a.Version, b.Version) }
	seen, want := eventsOf(c.handled()), slices.Clone(second)
	slices.SortFunc(seen, byVersion)
	slices.SortFunc(want, byVersion)
	if !slices.Equal(seen, want) {
		t.Fatalf("after the crash handled %v, want exactly the unacknowledged %v", seen, want)
	}
}

// TestLog_PublishAfterShutdown: once the server is gone Publish fails
// fast with EUnavailable, well before the caller's deadline.
func TestLog_PublishAfterShutdown(t *testing.T) {
	l := openLog(t, Config{Dir: t.TempDir()})
	publish(t, l, follow(1, 2))
	l.srv.Shutdown()
	l.srv.WaitForShutdown()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	err := l.Publish(ctx, follow(2, 3))
	checkCode(t, err, fg.EUnavailable)
	if d := time.Since(start); d > time.Second {
		t.Fatalf("Publish took %s to fail", d)
	}
	checkCode(t, l.Ready(ctx), fg.EUnavailable)
	t.Logf("Publish after shutdown: %v (in %s)", err, time.Since(start))
}

// TestLog_PublishDeadline: a caller's deadline bounds Publish even when
// the server does not answer.
func TestLog_PublishDeadline(t *testing.T) {
	l := openLog(t, Config{Dir: t.TempDir()})
	ctx, cancel := context.WithTimeout(context.Background(), 0)
	defer cancel()
	checkCode(t, l.Publish(ctx, follow(1, 2)), fg.EUnavailable)
	err := l.Publish(ctxTimeout(t, 10*time.Second), follow(1, 2))
	if err != nil {
		t.Fatal(err)
	}
}

func TestOpen_Config(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"NoDir", Config{}, "Dir is required"},
		{"BadStream", Config{Dir: "x", Stream: "a.b"}, "invalid stream name"},
		{"BadSubject", Config{Dir: "x", Subject: "a.*"}, "invalid subject prefix"},
		{"EmptyToken", Config{Dir: "x", Subject: "a..b"}, "invalid subject prefix"},
		{"Replicas", Config{Dir: "x", Replicas: 3}, "needs a NATS cluster"},
		{"ClusterWithURL", Config{URL: "nats://x", Cluster: &Cluster{}}, "URL must be empty"},
		{"ClusterListen", Config{Dir: "x", Cluster: &Cluster{Listen: "x"}}, "want host:port"},
		{"ClusterTwoNodes", Config{Dir: "x", Cluster: &Cluster{Listen: "127.0.0.1:6222",
			Routes: []string{"nats-route://127.0.0.1:6222", "nats-route://127.0.0.1:6223"}}}, "at least 3 nodes"},
		{"ClusterRoute", Config{Dir: "x", Cluster: &Cluster{Listen: "127.0.0.1:6222",
			Routes: []string{"nats-route://127.0.0.1:6222", "nats://127.0.0.1:6223", "nats-route://127.0.0.1:6224"}}}, "route 2: want nats-route://"},
		{"ClusterUsers", Config{Dir: "x", Cluster: &Cluster{Listen: "127.0.0.1:6222",
			Routes: []string{"nats-route://a:b@127.0.0.1:6222", "nats-route://127.0.0.1:6223", "nats-route://a:b@127.0.0.1:6224"}}}, "same user and password"},
		{"ClusterReplicas", Config{Dir: "x", Replicas: 5, Cluster: &Cluster{Listen: "127.0.0.1:6222",
			Routes: []string{"nats-route://127.0.0.1:6222", "nats-route://127.0.0.1:6223", "nats-route://127.0.0.1:6224"}}}, "more than the cluster's 3 nodes"},
		{"TooManyReplicas", Config{URL: "nats://x", Replicas: 7}, "out of range"},
		{"Sync", Config{Dir: "x", Sync: 9}, "unknown sync policy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Open(context.Background(), tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Open(%+v) = %v, want an error containing %q", tt.cfg, err, tt.want)
			}
		})
	}
}

// TestOpen_Unreachable: an external server that cannot be reached is
// EUnavailable.
func TestOpen_Unreachable(t *testing.T) {
	_, err := Open(ctxTimeout(t, 5*time.Second), Config{URL: "nats://127.0.0.1:1", Logger: testLogger()})
	checkCode(t, err, fg.EUnavailable)
}

// TestOpen_DirInUse: a second process (or Log) on the same Dir is refused
// instead of corrupting the store.
// TestOpen_NoJetStream: a NATS server without JetStream answers no
// request of the log's; Open gives up, saying what to enable.
func TestOpen_NoJetStream(t *testing.T) {
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	defer srv.Shutdown()
	if !srv.ReadyForConnections(5 * time.Second) {
		t.Fatal("nats-server did not start")
	}
	_, err = Open(ctxTimeout(t, 10*time.Second), Config{URL: srv.ClientURL(), StartWait: time.Second, Logger: testLogger()})
	if fg.ErrorCode(err) != fg.EUnavailable || !strings.Contains(fmt.Sprint(err), "nats-server -js") {
		t.Fatalf("Open on a server without JetStream: %v, want unavailable, saying to enable it", err)
	}
}

func TestOpen_DirInUse(t *testing.T) {
	dir := t.TempDir()
	openLog(t, Config{Dir: dir})
	_, err := Open(context.Background(), Config{Dir: dir, Logger: testLogger()})
	if err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("second Open of %s: %v, want an in-use error", dir, err)
	}
}

// TestOpen_IncompatibleStream: an existing stream that could drop events
// is refused with a message saying why.
func TestOpen_IncompatibleStream(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, Config{Dir: dir})
	ctx := ctxTimeout(t, 10*time.Second)
	if _, err := l.js.CreateStream(ctx, jetstream.StreamConfig{
		Name: "EVENTS", Subjects: []string{"other.>"}, Storage: jetstream.FileStorage, MaxAge: time.Hour,
	}); err != nil {
		t.Fatal(err)
	}
	async := l.streamConfig()
	async.Name, async.Subjects = "ASYNC", []string{"async.>"}
	async.PersistMode = jetstream.AsyncPersistMode
	if _, err := l.js.CreateStream(ctx, async); err != nil {
		t.Fatal(err)
	}
	l.Close()
	_, err := Open(ctx, Config{Dir: dir, Stream: "EVENTS", Logger: testLogger()})
	for _, want := range []string{"subjects", "want workqueue", "max age"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("Open on an incompatible stream: %v, want an error mentioning %q", err, want)
		}
	}
	t.Log(err)
	_, err = Open(ctx, Config{Dir: dir, Stream: "ASYNC", Subject: "async", Logger: testLogger()})
	if err == nil || !strings.Contains(err.Error(), "async persist mode") {
		t.Fatalf("Open on an async persist stream: %v, want a refusal", err)
	}
}

// The kill -9 test. TestHelperProcess is the child: it opens the log in
// the directory it is given and publishes as fast as it can from many
// goroutines, printing "ACK <id>" for each acknowledged event, until it
// is killed.
const (
	helperDirEnv   = "FOLLOWGRAPH_EVENTLOG_HELPER_DIR"
	helperSyncEnv  = "FOLLOWGRAPH_EVENTLOG_HELPER_SYNC"
	helperRoundEnv = "FOLLOWGRAPH_EVENTLOG_HELPER_ROUND"
)

func TestHelperProcess(t *testing.T) {
	dir := os.Getenv(helperDirEnv)
	if dir == "" {
		t.Skip("the child process of TestLog_SurvivesKill")
	}
	policy, _ := strconv.Atoi(os.Getenv(helperSyncEnv))
	round, _ := strconv.Atoi(os.Getenv(helperRoundEnv))
	l, err := Open(context.Background(), Config{Dir: dir, Sync: SyncPolicy(policy),
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		os.Exit(2)
	}
	os.Stdout.WriteString("READY\n")
	for g := range 32 {
		go func() {
			for {
				e := follow(fg.UserID(g+1), fg.UserID(1000+round))
				if err := l.Publish(context.Background(), e); err != nil {
					fmt.Fprintln(os.Stderr, "publish:", err)
					continue
				}
				os.Stdout.WriteString("ACK " + e.ID() + "\n") // one write(2): whole or not at all
			}
		}()
	}
	select {} // until killed
}

// runAndKill runs the child on dir, lets it get at least minAcks
// acknowledgements, kills it with SIGKILL at a random moment after that,
// and returns the ids it saw acknowledged.
func runAndKill(t *testing.T, dir string, policy SyncPolicy, round, minAcks int) []string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(),
		helperDirEnv+"="+dir,
		helperSyncEnv+"="+strconv.Itoa(int(policy)),
		helperRoundEnv+"="+strconv.Itoa(round))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		acked []string
		ready = make(chan struct{})
		eof   = make(chan struct{})
	)
	go func() {
		defer close(eof)
		r := bufio.NewReader(out)
		for {
			line, err := r.ReadString('\n')
			if err != nil { // a fragment without its newline is not an ack
				io.Copy(io.Discard, r)
				return
			}
			line = strings.TrimSuffix(line, "\n")
			switch {
			case line == "READY":
				close(ready)
			case strings.HasPrefix(line, "ACK "):
				mu.Lock()
				acked = append(acked, strings.TrimPrefix(line, "ACK "))
				mu.Unlock()
			}
		}
	}()
	select {
	case <-ready:
	case <-eof:
		cmd.Wait()
		t.Fatalf("child exited before it was ready: %s", stderr.String())
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("child not ready after 60s: %s", stderr.String())
	}
	waitFor(t, 60*time.Second, "the child's acknowledgements", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(acked) >= minAcks
	})
	time.Sleep(time.Duration(rand.IntN(200)) * time.Millisecond)
	if err := cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	<-eof
	err = cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != -1 {
		t.Fatalf("child did not die of the kill: %v\n%s", err, stderr.String())
	}
	if strings.Contains(stderr.String(), "publish:") {
		t.Logf("child publish errors:\n%s", stderr.String())
	}
	mu.Lock()
	defer mu.Unlock()
	return slices.Clone(acked)
}

// TestLog_SurvivesKill answers the durability question: what does the
// embedded server need so that an acknowledged publish survives kill -9
// of the whole process? For each sync policy the child is killed three
// times on the same Dir; after each kill every id it saw acknowledged
// must be in the stream.
func TestLog_SurvivesKill(t *testing.T) {
	if testing.Short() {
		t.Skip("kills child processes; skipped with -short")
	}
	for _, policy := range []SyncPolicy{SyncInterval, SyncAlways} {
		t.Run(policy.String(), func(t *testing.T) {
			dir := t.TempDir()
			acked := map[string]bool{}
			for round := range 3 {
				ids := runAndKill(t, dir, policy, round, 3000)
				for _, id := range ids {
					acked[id] = true
				}
				l := openLog(t, Config{Dir: dir})
				stored := map[string]bool{}
				for _, m := range replayAll(t, l) {
					stored[m.Event.ID()] = true
				}
				missing := 0
				for id := range acked {
					if !stored[id] {
						missing++
					}
				}
				t.Logf("sync=%s kill %d: %d acknowledged in this run, %d in all runs, %d stored, %d acknowledged but missing",
					policy, round+1, len(ids), len(acked), len(stored), missing)
				if missing > 0 {
					t.Errorf("%d acknowledged events lost to kill -9", missing)
				}
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
