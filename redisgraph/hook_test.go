package redisgraph

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/followgraph/followgraph/redisgraph/outbox"

	fg "github.com/followgraph/followgraph"
)

// TestHook: the hook sees the event of every change, with the version the
// outbox has; a change whose hook succeeded leaves the outbox; a failing
// hook fails the write with code unavailable, wrapping the hook's error
// (of no code of its own), and the change stays made and its event stays
// in the outbox for the relay.
func TestHook(t *testing.T) {
	for _, m := range modes {
		t.Run(m.Name, func(t *testing.T) {
			var seen []fg.Event
			logDown := errors.New("log down")
			fail := false
			hook := func(_ context.Context, e fg.Event) error {
				seen = append(seen, e)
				if fail {
					return logDown
				}
				return nil
			}
			g := newTestGraph(t, m.Client(t), WithHook(hook))
			ctx := t.Context()
			if _, err := g.Follow(ctx, 1, 2); err != nil {
				t.Fatal(err)
			}
			if _, err := g.Follow(ctx, 1, 2); err != nil { // no change: no event
				t.Fatal(err)
			}
			fail = true
			if _, err := g.Unfollow(ctx, 1, 2); fg.ErrorCode(err) != fg.EUnavailable || !errors.Is(err, logDown) {
				t.Fatalf("an unfollow whose hook failed: %v, want code %s wrapping the hook's error", err, fg.EUnavailable)
			}
			if len(seen) != 2 || seen[0].Op != fg.OpFollow || seen[1].Op != fg.OpUnfollow {
				t.Fatalf("hook saw %v, want the follow then the unfollow", seen)
			}
			if e, err := g.IsFollowing(ctx, 1, 2); err != nil || e.Following {
				t.Fatalf("after the unacknowledged unfollow: %+v, %v; want made", e, err)
			}
			// The acknowledged follow left the outbox with its hook; the
			// unacknowledged unfollow stays for the relay.
			// (The deletion is asynchronous: give it a moment.)
			var entries []outbox.Entry
			for range 100 {
				var err error
				if entries, err = g.outbox.Read(ctx, g.ks.Outbox(1), "", 10); err != nil {
					t.Fatal(err)
				}
				if len(entries) <= 1 {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			if len(entries) != 1 || entries[0].Event != seen[1] {
				t.Fatalf("outbox holds %v, want only the unacknowledged %v", entries, seen[1])
			}
		})
	}
}
