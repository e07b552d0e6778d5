package eventlog

import (
	"context"
	"slices"
	"testing"
	"time"

	fg "github.com/followgraph/followgraph"
)

// TestLog_Hook: the hook stores the event before it returns, also when
// the write's caller has gone away (its context canceled), and fails,
// storing nothing, when the log is closed.
func TestLog_Hook(t *testing.T) {
	l := embedded(t)
	hook := l.Hook()
	e1, e2 := follow(1, 2), follow(2, 3)
	if err := hook(context.Background(), e1); err != nil {
		t.Fatal(err)
	}
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	if err := hook(gone, e2); err != nil {
		t.Fatalf("the hook of a write whose caller went away: %v, want the event stored", err)
	}
	if got := eventsOf(replayAll(t, l)); !slices.Equal(got, []fg.Event{e1, e2}) {
		t.Fatalf("the log holds %v, want %v", got, []fg.Event{e1, e2})
	}
	l.Close()
	short, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	checkCode(t, hook(short, follow(3, 4)), fg.EUnavailable)
}
