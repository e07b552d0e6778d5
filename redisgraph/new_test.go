package redisgraph

import (
	"context"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/rueidis"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/redisgraph/internal/layout"
	"github.com/followgraph/followgraph/redisgraph/internal/redistest"
)

// TestNewContext: New's round trips (loading the scripts, learning the
// markers) end with its context: against a stalled Redis (one of the
// test's own, paused with SIGSTOP), New with a context already cancelled,
// one that ends soon, or one cancelled while New waits, returns an EUnavailable error when the context
// ends.
func TestNewContext(t *testing.T) {
	addr, proc := redistest.Private(t)
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := proc.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer proc.Signal(syscall.SIGCONT)

	for _, tc := range []struct {
		name string
		ctx  func(t *testing.T) context.Context
	}{
		{"Cancelled", func(t *testing.T) context.Context {
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			return ctx
		}},
		{"Short", func(t *testing.T) context.Context {
			ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
			t.Cleanup(cancel)
			return ctx
		}},
		{"CancelledLater", func(t *testing.T) context.Context { // no deadline: cancelled while New waits
			ctx, cancel := context.WithCancel(t.Context())
			time.AfterFunc(200*time.Millisecond, cancel)
			return ctx
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			g, err := New(tc.ctx(t), c, WithPrefix(randomPrefix()))
			took := time.Since(start)
			if err == nil {
				g.Close()
			}
			if err == nil || fg.ErrorCode(err) != fg.EUnavailable || took > 2*time.Second {
				t.Errorf("New against a stalled Redis = %v after %v; want EUnavailable once the context ends", err, took)
			}
		})
	}
}

// TestCancelAfter: the context New's round trips use ends with its parent,
// or after the time given, and has no deadline of its own.
func TestCancelAfter(t *testing.T) {
	ctx, cancel := cancelAfter(t.Context(), 50*time.Millisecond)
	defer cancel()
	if _, ok := ctx.Deadline(); ok {
		t.Error("cancelAfter's context has a deadline")
	}
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("cancelAfter's context did not end after 50 ms")
	}
	parent, cancelParent := context.WithCancel(t.Context())
	ctx, cancel = cancelAfter(parent, time.Hour)
	defer cancel()
	cancelParent()
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("cancelAfter's context did not end with its parent")
	}
}

// TestLayoutRecorded: a new deployment records its layout's version; a
// Redis whose graph under the prefix is recorded in another layout is
// refused by New with an error naming both versions, and so is a Redis
// without the record that holds a graph (written before the record was
// kept: layout 1); a Redis that holds nothing is served and gets it.
func TestLayoutRecorded(t *testing.T) {
	for _, m := range modes {
		t.Run(m.Name, func(t *testing.T) {
			ctx := t.Context()
			c := m.Client(t)
			prefix := randomPrefix()
			key := prefix + ":layout"
			t.Cleanup(func() { c.Do(context.Background(), c.B().Del().Key(key).Build()) })
			g := newTestGraphPrefix(t, c, prefix)
			if _, err := g.InitOutbox(ctx); err != nil {
				t.Fatal(err)
			}
			want := strconv.Itoa(layout.Version)
			if v, err := c.Do(ctx, c.B().Get().Key(key).Build()).ToString(); err != nil || v != want {
				t.Fatalf("%s after InitOutbox = %q, %v; want %s", key, v, err, want)
			}
			if err := c.Do(ctx, c.B().Set().Key(key).Value("99").Build()).Error(); err != nil {
				t.Fatal(err)
			}
			_, err := New(ctx, c, WithPrefix(prefix))
			if err == nil || !strings.Contains(err.Error(), `layout "99"`) || !strings.Contains(err.Error(), "layout "+want) {
				t.Fatalf("New on a Redis in layout 99 = %v; want an error naming layouts 99 and %s", err, want)
			}
			if err := c.Do(ctx, c.B().Del().Key(key).Build()).Error(); err != nil {
				t.Fatal(err)
			}
			_, err = New(ctx, c, WithPrefix(prefix))
			if err == nil || !strings.Contains(err.Error(), `layout "1"`) {
				t.Fatalf("New on a graph without a recorded layout = %v; want an error naming layout 1", err)
			}
			g.deleteKeys(t) // the markers too: nothing left under the prefix
			g2, err := New(ctx, c, WithPrefix(prefix))
			if err != nil {
				t.Fatalf("New on a Redis that holds nothing: %v", err)
			}
			defer g2.Close()
			if _, err := g2.InitOutbox(ctx); err != nil {
				t.Fatal(err)
			}
			if v, err := c.Do(ctx, c.B().Get().Key(key).Build()).ToString(); err != nil || v != want {
				t.Fatalf("%s after InitOutbox = %q, %v; want %s", key, v, err, want)
			}
		})
	}
}

// TestRegionRange: New refuses a region other than 0 (none) to
// followgraph.MaxRegion, with an error naming the range.
func TestRegionRange(t *testing.T) {
	c := redistest.Standalone(t)
	for _, r := range []int{-1, fg.MaxRegion + 1} {
		g, err := New(t.Context(), c, WithPrefix(randomPrefix()), WithRegion(r))
		if err == nil {
			g.Close()
		}
		if err == nil || !strings.Contains(err.Error(), "0 (none) to "+strconv.Itoa(fg.MaxRegion)) {
			t.Errorf("New(WithRegion(%d)) = %v; want an error naming the range", r, err)
		}
	}
}
