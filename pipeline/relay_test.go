package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/pipeline"
)

// memStreams is an outbox in memory, with a lease per stream, recording
// what the relays do to it. (The relay on a real Redis is tested end to
// end by TestServe_RedisKillNine in cmd/followgraph.)
type memStreams struct {
	mu      sync.Mutex
	streams map[string][]entry
	leases  map[string]string // stream → holder
	settled []fg.Event
}

type entry struct {
	id    string
	event fg.Event
}

func newMemStreams() *memStreams {
	return &memStreams{streams: map[string][]entry{}, leases: map[string]string{}}
}

// as returns the outbox as owner's relay reads it.
func (m *memStreams) as(owner string) pipeline.Outbox { return memOutbox{m, owner} }

type memOutbox struct {
	*memStreams
	owner string
}

func (o memOutbox) Streams(context.Context) ([]string, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []string
	for s, es := range o.streams {
		if len(es) > 0 {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out, nil
}

func (o memOutbox) Claim(_ context.Context, stream string) (bool, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if h, ok := o.leases[stream]; ok && h != o.owner {
		return false, nil
	}
	o.leases[stream] = o.owner
	return true, nil
}

func (o memOutbox) Read(_ context.Context, stream string, n int) ([]fg.Event, string, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	es := o.streams[stream][:min(n, len(o.streams[stream]))]
	if len(es) == 0 {
		return nil, "", nil
	}
	events := make([]fg.Event, len(es))
	for i, e := range es {
		events[i] = e.event
	}
	return events, es[len(es)-1].id, nil
}

func (o memOutbox) Settle(_ context.Context, events []fg.Event) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.settled = append(o.settled, events...)
	return nil
}

func (o memOutbox) Trim(_ context.Context, stream, through string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	es := o.streams[stream]
	i := slices.IndexFunc(es, func(e entry) bool { return e.id == through })
	if i < 0 {
		return fmt.Errorf("no entry %s in %s", through, stream)
	}
	o.streams[stream] = es[i+1:]
	return nil
}

func TestRelay(t *testing.T) {
	ctx := context.Background()
	ms := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC).UnixMilli()
	o := newMemStreams()
	var all []fg.Event
	for i := range 25 {
		e := fg.NewEvent(fg.UserID(1+i%3), fg.UserID(100+i), fg.OpFollow, fg.VersionAt(ms)+fg.Version(i))
		s := fmt.Sprint("s", i%3)
		o.streams[s] = append(o.streams[s], entry{fmt.Sprint(i), e})
		all = append(all, e)
	}
	var mu sync.Mutex
	published := map[string]int{}
	failOn := all[7].ID()
	publish := func(_ context.Context, e fg.Event) error {
		mu.Lock()
		defer mu.Unlock()
		if e.ID() == failOn {
			failOn = "" // once
			return errors.New("log unavailable")
		}
		// Every event is settled before it is published.
		if !slices.Contains(o.settled, e) {
			t.Errorf("%s published before it was settled", e.ID())
		}
		published[e.ID()]++
		return nil
	}
	r := pipeline.NewRelay(o.as("a"), publish, nil, pipeline.WithRelayBatch(4))

	// A failed publish leaves its whole batch in the outbox.
	if _, err := r.Pass(ctx); err == nil {
		t.Fatal("a pass with a failed publish reported no error")
	}
	if n := len(o.streams["s1"]); n != 8 {
		t.Fatalf("stream s1 holds %d entries after a failed batch, want 8 (none trimmed)", n)
	}
	if err := r.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	for s, es := range o.streams {
		if len(es) != 0 {
			t.Errorf("stream %s still holds %d entries after Drain", s, len(es))
		}
	}
	for _, e := range all {
		if published[e.ID()] == 0 {
			t.Errorf("%s was never published", e.ID())
		}
	}
}

// Two relays over one outbox, each with a lease per stream: every stream
// is moved by its lease holder only, so no event is published twice, and
// a stream whose holder stops is taken over once its lease is released.
func TestRelay_Leases(t *testing.T) {
	ctx := context.Background()
	ms := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC).UnixMilli()
	o := newMemStreams()
	streamOf := map[string]string{} // event id → stream
	for i := range 40 {
		e := fg.NewEvent(fg.UserID(1+i%4), fg.UserID(100+i), fg.OpFollow, fg.VersionAt(ms)+fg.Version(i))
		s := fmt.Sprint("s", i%4)
		o.streams[s] = append(o.streams[s], entry{fmt.Sprint(i), e})
		streamOf[e.ID()] = s
	}
	var mu sync.Mutex
	published := map[string]map[string]int{} // relay → event id → times
	relay := func(name string) *pipeline.Relay {
		published[name] = map[string]int{}
		publish := func(_ context.Context, e fg.Event) error {
			mu.Lock()
			defer mu.Unlock()
			published[name][e.ID()]++
			return nil
		}
		return pipeline.NewRelay(o.as(name), publish, nil, pipeline.WithRelayBatch(3))
	}
	a, b := relay("a"), relay("b")
	// a takes s0 and s1 first; b the other two.
	o.leases["s0"], o.leases["s1"], o.leases["s2"], o.leases["s3"] = "a", "a", "b", "b"
	for range 2 {
		if _, err := a.Pass(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Pass(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for name, held := range map[string][]string{"a": {"s0", "s1"}, "b": {"s2", "s3"}} {
		for id := range published[name] {
			if !slices.Contains(held, streamOf[id]) {
				t.Errorf("relay %s published event %s of %s, whose lease it did not hold", name, id, streamOf[id])
			}
		}
	}
	// a stops: its leases go, and b drains everything.
	delete(o.leases, "s0")
	delete(o.leases, "s1")
	if err := b.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	for s, es := range o.streams {
		if len(es) != 0 {
			t.Errorf("stream %s still holds %d entries", s, len(es))
		}
	}
	for id, n := range published["a"] {
		if n != 1 || published["b"][id] != 0 {
			t.Errorf("event %s published %d times by a and %d by b, want once in all", id, n, published["b"][id])
		}
	}
	if got := len(published["a"]) + len(published["b"]); got != 40 {
		t.Errorf("%d distinct events published, want 40", got)
	}
	if len(published["a"]) == 0 {
		t.Error("relay a moved nothing while it held two leases")
	}
	for id, e := range published["b"] {
		if e != 1 {
			t.Errorf("event %s published %d times by b", id, e)
		}
	}
}
