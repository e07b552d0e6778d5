package recovery

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/eventlog"
)

// TestDrain: with no persister Drain waits until its context ends, saying
// what is left once a second; once a persister takes the log, it returns
// 0 as soon as the log is empty.
func TestDrain(t *testing.T) {
	ctx := context.Background()
	_, log := openParts(t)
	v := fg.VersionAt(time.Now().UnixMilli())
	for i := range fg.UserID(30) {
		if err := log.Publish(ctx, fg.NewEvent(1, 2+i, fg.OpFollow, v+fg.Version(i))); err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&out, nil))
	short, cancel := context.WithTimeout(ctx, 1200*time.Millisecond)
	defer cancel()
	if left := Drain(short, log, "persister", logger); left != 30 {
		t.Fatalf("Drain with no persister left %d, want 30", left)
	}
	if s := out.String(); !strings.Contains(s, "events_left=30") || !strings.Contains(s, "stopping with events not yet in the store") {
		t.Errorf("Drain's log without a persister:\n%s", s)
	}

	pctx, stop := context.WithCancel(ctx)
	consumed := make(chan error, 1)
	go func() {
		consumed <- log.Consume(pctx, "persister", 10, 20*time.Millisecond, func(context.Context, []eventlog.Message, uint64) error { return nil })
	}()
	defer func() { stop(); <-consumed }()
	wait, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if left := Drain(wait, log, "persister", logger); left != 0 || wait.Err() != nil {
		t.Fatalf("Drain with a persister left %d (%v), want 0 before its deadline", left, wait.Err())
	}
}
