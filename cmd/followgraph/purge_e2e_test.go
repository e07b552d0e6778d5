package main

import (
	"context"
	binenc "encoding/binary"
	"fmt"
	"log/slog"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/eventlog"
	"github.com/followgraph/followgraph/redisgraph"
	"github.com/followgraph/followgraph/store/sqlite"
)

// TestFlag_TombstoneRetention: --tombstone-retention takes 0 or a
// duration at least --write-request-timeout; serve refuses any other
// value, naming the flag, before it opens anything.
func TestFlag_TombstoneRetention(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		says string
	}{
		{"Negative", []string{"--tombstone-retention", "-1h"}, "--tombstone-retention -1h0m0s: want a positive duration"},
		{"NotADuration", []string{"--tombstone-retention", "a week"}, "tombstone-retention"},
		{"NoUnit", []string{"--tombstone-retention", "7"}, "tombstone-retention"},
		{"ShorterThanAWrite", []string{"--tombstone-retention", "5s"}, "--tombstone-retention 5s is shorter than --write-request-timeout 15s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := t.TempDir()
			out, err := exec.Command(binary, append([]string{"serve", "--addr", freeAddr(t), "--data", data}, tc.args...)...).CombinedOutput()
			if err == nil || !strings.Contains(string(out), tc.says) {
				t.Fatalf("serve %v: %v, want a refusal saying %q\n%s", tc.args, err, tc.says, out)
			}
			if matches, _ := filepath.Glob(filepath.Join(data, "*")); len(matches) > 0 {
				t.Errorf("the refused start made %v", matches)
			}
		})
	}
}

// TestTombstonePurge: with a short --tombstone-retention, serve removes an
// unfollow's tombstone from the store and the engine once the retention
// has passed since the store had it, and keeps live edges; the store
// keeps its tombstone horizon. A change older than that horizon, found in
// the log at the next start, makes serve refuse to start, and with
// --accept-data-loss is refused, logged and counted, never applied: the
// edge stays off.
func TestTombstonePurge(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	args := []string{"--tombstone-retention", "2s", "--write-request-timeout", "1s"}
	s := start(t, data, args...)
	followed := tombstoneAndEdge(t, s)
	for _, holder := range []string{"store", "engine"} {
		name := `followgraph_tombstones_removed_total{holder="` + holder + `"}`
		for deadline := time.Now().Add(30 * time.Second); metric(t, s, name) < 1; time.Sleep(100 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s still 0 after 30 s:\n%s", name, s.logs)
			}
		}
		if h := metric(t, s, `followgraph_tombstone_horizon_timestamp_seconds{holder="`+holder+`"}`); h < float64(followed.Since.Unix()) {
			t.Errorf("the %s's tombstone horizon is %v, before the unfollow", holder, h)
		}
	}
	for x, want := range map[fg.UserID]bool{2: false, 3: true} {
		if e, err := s.client.IsFollowing(ctx, 1, x); err != nil || e.Following != want {
			t.Errorf("IsFollowing(1, %d) = %+v, %v; want %v", x, e, err, want)
		}
	}
	s.stop(t)

	store, err := sqlite.Open(ctx, filepath.Join(data, "followgraph.db"))
	if err != nil {
		t.Fatal(err)
	}
	var events []fg.Event
	for e, err := range store.Events(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		events = append(events, e)
	}
	horizon, err := store.TombstoneHorizon(ctx)
	store.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 1 || events[0].Target != 3 || events[0].Op != fg.OpFollow {
		t.Errorf("the store holds %v, want the follow 1→3 alone", events)
	}
	// Above the unfollow's version, which may share the follow's
	// millisecond: above the follow's millisecond with counter 0.
	if horizon <= fg.VersionAt(followed.Since.UnixMilli()) {
		t.Errorf("the store's tombstone horizon %s is not past the follow of 1→2 (%s)", horizon.Time(), followed.Since)
	}

	// The follow of 1→2 again, as if replayed from an old log.
	log, err := eventlog.Open(ctx, eventlog.Config{Dir: filepath.Join(data, "nats"), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	err = log.Publish(ctx, fg.NewEvent(1, 2, fg.OpFollow, fg.VersionAt(followed.Since.UnixMilli())))
	log.Close()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(binary, append([]string{"serve", "--addr", freeAddr(t), "--data", data}, args...)...).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "older than the store's tombstone horizon") || !strings.Contains(string(out), "--accept-data-loss") {
		t.Fatalf("serve with a change older than the tombstone horizon in the log: %v, want a refusal naming it and --accept-data-loss\n%s", err, out)
	}
	s = start(t, data, append(args, "--accept-data-loss")...)
	for deadline := time.Now().Add(30 * time.Second); metric(t, s, `followgraph_tombstone_refused_total{holder="store"}`) < 1; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the store refused nothing in 30 s:\n%s", s.logs)
		}
	}
	if n := metric(t, s, `followgraph_tombstone_refused_total{holder="engine"}`); n != 1 {
		t.Errorf("the engine refused %v changes at start, want 1", n)
	}
	if e, err := s.client.IsFollowing(ctx, 1, 2); err != nil || e.Following {
		t.Errorf("after the old follow was replayed, IsFollowing(1, 2) = %+v, %v; want off", e, err)
	}
	if logs := s.logs.String(); !strings.Contains(logs, `"level":"ERROR","msg":"a change older than the tombstone horizon was refused`) {
		t.Errorf("no error line of the refusal:\n%s", logs)
	}
	s.stop(t)
}

// TestTombstonePurge_Redis: with --redis and a short
// --tombstone-retention, serve removes an unfollow's tombstone from
// Redis's versions hash too, keeps the live edge, and raises the user's
// tombstone horizon in Redis. Redis rebuilt from the store after losing
// everything takes the store's tombstone horizon.
func TestTombstonePurge_Redis(t *testing.T) {
	ctx := context.Background()
	url, prefix := testRedis(t)
	data := t.TempDir()
	args := []string{"--redis", url, "--redis-prefix", prefix, "--tombstone-retention", "2s", "--write-request-timeout", "1s"}
	s := start(t, data, args...)
	followed := tombstoneAndEdge(t, s)
	c := redisClient(t, url)
	member := string(binenc.BigEndian.AppendUint64(nil, 2))
	if ok, err := c.Do(ctx, c.B().Hexists().Key(prefix+":{1}:ov").Field(member).Build()).AsBool(); err != nil || !ok {
		t.Fatalf("before the purge, Redis holds no tombstone of 1→2 in %s:{1}:ov: %v, %v", prefix, ok, err)
	}
	const removed = `followgraph_tombstones_removed_total{holder="engine"}`
	for deadline := time.Now().Add(30 * time.Second); metric(t, s, removed) < 1; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s still 0 after 30 s:\n%s", removed, s.logs)
		}
	}
	if ok, err := c.Do(ctx, c.B().Hexists().Key(prefix+":{1}:ov").Field(member).Build()).AsBool(); err != nil || ok {
		t.Errorf("after the purge, Redis still holds the tombstone of 1→2: %v, %v", ok, err)
	}
	if hz, err := c.Do(ctx, c.B().Hget().Key(prefix+":{1}:h").Field("hz").Build()).ToString(); err != nil || len(hz) != 16 {
		t.Errorf("user 1's tombstone horizon in Redis = %q, %v; want 16 hex digits", hz, err)
	}
	for x, want := range map[fg.UserID]bool{2: false, 3: true} {
		if e, err := s.client.IsFollowing(ctx, 1, x); err != nil || e.Following != want {
			t.Errorf("IsFollowing(1, %d) = %+v, %v; want %v", x, e, err, want)
		}
	}
	s.stop(t)

	for cursor := uint64(0); ; { // Redis loses everything
		e, err := c.Do(ctx, c.B().Scan().Cursor(cursor).Match(prefix+":*").Count(1000).Build()).AsScanEntry()
		if err != nil {
			t.Fatal(err)
		}
		if len(e.Elements) > 0 {
			if err := c.Do(ctx, c.B().Del().Key(e.Elements...).Build()).Error(); err != nil {
				t.Fatal(err)
			}
		}
		if cursor = e.Cursor; cursor == 0 {
			break
		}
	}
	s = start(t, data, "--redis", url, "--redis-prefix", prefix, "--tombstone-retention", "0") // no purge: the horizon is the rebuild's
	defer s.stop(t)
	if e, err := s.client.IsFollowing(ctx, 1, 3); err != nil || !e.Following {
		t.Fatalf("after the rebuild, IsFollowing(1, 3) = %+v, %v", e, err)
	}
	hz, err := c.Do(ctx, c.B().Get().Key(prefix+":hz").Build()).ToString()
	v, perr := strconv.ParseUint(hz, 16, 64)
	if err != nil || perr != nil || fg.Version(v) <= fg.VersionAt(followed.Since.UnixMilli()) {
		t.Errorf("after the rebuild, Redis's tombstone horizon is %q (%v, %v), want past the follow of 1→2 at %s", hz, err, perr, followed.Since)
	}
}

// redisClient returns a client of the Redis at url, closed when t ends.
func redisClient(t *testing.T, url string) rueidis.Client {
	t.Helper()
	opt, err := redisgraph.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	c, err := rueidis.NewClient(opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// tombstoneAndEdge makes s's users 1→2 follow then unfollow, leaving a
// tombstone, and 1→3 follow, a live edge, and returns the first follow.
func tombstoneAndEdge(t *testing.T, s *server) fg.FollowResult {
	t.Helper()
	ctx := t.Context()
	followed, err := s.client.Follow(ctx, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.client.Unfollow(ctx, 1, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := s.client.Follow(ctx, 1, 3); err != nil {
		t.Fatal(err)
	}
	return followed
}

// TestOutbox_Oldest: the Redis outbox's bound on the tombstone horizon is
// the version of the first entry of its streams, by the stream's order.
func TestOutbox_Oldest(t *testing.T) {
	url, prefix := testRedis(t)
	s := start(t, t.TempDir(), "--redis", url, "--redis-prefix", prefix) // makes the streams
	s.stop(t)
	ctx := t.Context()
	g, closeRedis, err := openRedis(ctx, url, nil, redisgraph.WithPrefix(prefix))
	if err != nil {
		t.Fatal(err)
	}
	defer closeRedis()
	outbox := g.Outbox("test", time.Second)
	if v, ok, err := outbox.Oldest(ctx); err != nil || ok {
		t.Fatalf("Oldest of an empty outbox = %d, %v, %v", v, ok, err)
	}
	c := redisClient(t, url)
	var stream string
	for cursor := uint64(0); ; {
		e, err := c.Do(ctx, c.B().Scan().Cursor(cursor).Match(prefix+"*").Type("stream").Build()).AsScanEntry()
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range e.Elements {
			if strings.Contains(k, "outbox") {
				stream = k
			}
		}
		if cursor = e.Cursor; cursor == 0 {
			break
		}
	}
	if stream == "" {
		t.Fatal("no outbox stream under the prefix")
	}
	first, second := fg.VersionAt(1_700_000_000_000), fg.VersionAt(1_600_000_000_000)
	for _, v := range []fg.Version{first, second} {
		if err := c.Do(ctx, c.B().Xadd().Key(stream).Id("*").FieldValue().FieldValue("v", fmt.Sprintf("%016x", uint64(v))).Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	if v, ok, err := outbox.Oldest(ctx); err != nil || !ok || v != first {
		t.Errorf("Oldest = %d, %v, %v; want %d, the stream's first entry", v, ok, err, first)
	}
}
