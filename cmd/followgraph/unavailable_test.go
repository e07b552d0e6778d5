package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	fg "github.com/followgraph/followgraph"
)

// TestServe_LogDownWritesRefused: on Redis, with the event log down, a
// write is refused before it changes anything: 503, and after the log is
// back the refused writes have not taken effect. (A write caught by the
// log's failure between the check and its publish is made, and its 503
// says its outcome is unknown: the relay moves it to the log later.)
func TestServe_LogDownWritesRefused(t *testing.T) {
	redisURL, prefix := testRedis(t)
	n := startNATS(t)
	s := start(t, t.TempDir(), "--redis", redisURL, "--redis-prefix", prefix, "--nats", n.url, "--nats-stream", "FGTEST_LOGDOWN")
	ctx := context.Background()
	if _, err := s.client.Follow(ctx, 1, 2); err != nil {
		t.Fatal(err)
	}
	n.stop()
	time.Sleep(500 * time.Millisecond) // the node sees the connection go
	const writes = 200
	for i := range writes {
		_, err := s.client.Follow(ctx, fg.UserID(100+i), 2)
		var fe *fg.Error
		if !errors.As(err, &fe) || fe.Code != fg.EUnavailable {
			t.Fatalf("write %d with the log down: %v, want unavailable", i, err)
		}
		if i == 0 && !strings.Contains(fe.Message, "nothing was changed") {
			t.Errorf("the 503 of a write refused outright does not say nothing changed: %q", fe.Message)
		}
	}
	n.start()
	deadline := time.Now().Add(20 * time.Second)
	for status, _ := readyz(t, s); status != 200; status, _ = readyz(t, s) {
		if time.Now().After(deadline) {
			t.Fatal("writes still refused 20 s after the log came back")
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Second) // what the relay would move
	made := 0
	for i := range writes {
		e, err := s.client.IsFollowing(ctx, fg.UserID(100+i), 2)
		if err != nil {
			t.Fatal(err)
		}
		if e.Following {
			made++
		}
	}
	if made > 0 {
		t.Errorf("%d of %d writes answered 503 with the log down took effect", made, writes)
	}
}
