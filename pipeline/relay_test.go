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

// memOutbox is an Outbox in memory, recording what the relay does to it.
// (The relay on a real Redis is tested end to end by TestServe_RedisKillNine
// in cmd/followgraph.)
type memOutbox struct {
	mu      sync.Mutex
	streams map[string][]pipeline.OutboxEntry
	settled []fg.Event
}

func (o *memOutbox) OutboxStreams(context.Context) ([]string, error) {
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

func (o *memOutbox) ReadOutbox(_ context.Context, stream, after string, n int) ([]pipeline.OutboxEntry, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	es := o.streams[stream]
	return slices.Clone(es[:min(n, len(es))]), nil
}

func (o *memOutbox) SettleOutbox(_ context.Context, events []fg.Event) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.settled = append(o.settled, events...)
	return nil
}

func (o *memOutbox) TrimOutbox(_ context.Context, stream, through string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	es := o.streams[stream]
	i := slices.IndexFunc(es, func(e pipeline.OutboxEntry) bool { return e.ID == through })
	if i < 0 {
		return fmt.Errorf("no entry %s in %s", through, stream)
	}
	o.streams[stream] = es[i+1:]
	return nil
}

func TestRelay(t *testing.T) {
	ctx := context.Background()
	ms := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC).UnixMilli()
	o := &memOutbox{streams: map[string][]pipeline.OutboxEntry{}}
	var all []fg.Event
	for i := range 25 {
		e := fg.NewEvent(fg.UserID(1+i%3), fg.UserID(100+i), fg.OpFollow, fg.VersionAt(ms)+fg.Version(i))
		s := fmt.Sprint("s", i%3)
		o.streams[s] = append(o.streams[s], pipeline.OutboxEntry{ID: fmt.Sprint(i), Event: e})
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
	r := pipeline.NewRelay(o, publish, nil, pipeline.WithRelayBatch(4))

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
