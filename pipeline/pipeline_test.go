package pipeline_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/pipeline"
	"github.com/followgraph/followgraph/store/sqlite"
)

// metric returns the value of the counter name in reg.
func metric(tb testing.TB, reg *prometheus.Registry, name string) float64 {
	tb.Helper()
	families, err := reg.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name {
			return f.GetMetric()[0].GetCounter().GetValue()
		}
	}
	tb.Fatalf("no metric %s", name)
	return 0
}

func openStore(tb testing.TB) *sqlite.Store {
	tb.Helper()
	s, err := sqlite.Open(context.Background(), filepath.Join(tb.TempDir(), "fg.db"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// batch returns n follow events of distinct edges with sequences from seq.
func batch(seq uint64, n int) []pipeline.Message {
	ms := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC).UnixMilli()
	out := make([]pipeline.Message, n)
	for i := range out {
		s := seq + uint64(i)
		out[i] = pipeline.Message{Seq: s, Event: fg.NewEvent(fg.UserID(s), fg.UserID(s+1_000_000), fg.OpFollow, fg.VersionAt(ms)+fg.Version(i))}
	}
	return out
}

func TestPersister_AppliesAndRecordsSequence(t *testing.T) {
	ctx := context.Background()
	store := openStore(t)
	reg := prometheus.NewRegistry()
	p := pipeline.New(store, reg)
	if err := p.Handle(ctx, batch(1, 100), 0); err != nil {
		t.Fatal(err)
	}
	// A redelivered batch changes no row and does not move the sequence back.
	if err := p.Handle(ctx, batch(1, 50), 0); err != nil {
		t.Fatal(err)
	}
	last, err := store.LastSeq(ctx)
	if err != nil || last != 100 {
		t.Fatalf("last sequence %d (%v), want 100", last, err)
	}
	n := 0
	for e, err := range store.Events(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		if e.Op != fg.OpFollow || e.Target != e.User+1_000_000 || e.User < 1 || e.User > 100 {
			t.Fatalf("stored %v: not one of the batch's follows", e)
		}
		n++
	}
	if n != 100 {
		t.Fatalf("%d edges stored, want 100", n)
	}
	if got := metric(t, reg, "followgraph_persister_events_total"); got != 150 {
		t.Fatalf("events metric %v, want 150", got)
	}
	if got := metric(t, reg, "followgraph_persister_rows_changed_total"); got != 100 {
		t.Fatalf("rows changed %v, want 100: a redelivery must change nothing", got)
	}
}

func TestPersister_FailedBatchIsNotAcknowledged(t *testing.T) {
	ctx := context.Background()
	store := openStore(t)
	p := pipeline.New(store, nil)
	bad := batch(1, 10)
	bad[5].Event.Time = bad[5].Event.Time.Add(time.Millisecond) // not its version's time
	if err := p.Handle(ctx, bad, 0); err == nil {
		t.Fatal("a batch with an invalid event was applied")
	}
	if last, _ := store.LastSeq(ctx); last != 0 {
		t.Fatalf("last sequence moved to %d on a failed batch", last)
	}
}

// TestPersister_TokenBucket checks the rate cap from below: 1500 rows at
// 1000 rows/s with a bucket of 500 cannot take less than (1500-500)/1000
// s, and the second and third batches wait for tokens (unless writing a
// batch took over half a second, which refills the bucket on its own).
func TestPersister_TokenBucket(t *testing.T) {
	ctx := context.Background()
	store := openStore(t)
	reg := prometheus.NewRegistry()
	p := pipeline.New(store, reg, pipeline.WithRate(1000, 500))
	start := time.Now()
	slowest := time.Duration(0)
	for i := range 3 {
		begin := time.Now()
		if err := p.Handle(ctx, batch(uint64(1+500*i), 500), 0); err != nil {
			t.Fatal(err)
		}
		slowest = max(slowest, time.Since(begin))
	}
	if took, least := time.Since(start), time.Second; took < least {
		t.Fatalf("1500 rows in %v: faster than the 1000/s cap allows (%v)", took, least)
	}
	if got := metric(t, reg, "followgraph_persister_token_waits_total"); got < 2 && slowest < 500*time.Millisecond {
		t.Fatalf("token waits %v, want at least 2", got)
	}
}
