package storetest

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	fg "github.com/followgraph/followgraph"
)

// randomEvents returns n events of 300×300 possible edges, in no order,
// with repeats and both ops.
func randomEvents(seed uint64, n int) []fg.Event {
	rng := rand.New(rand.NewPCG(seed, seed))
	in := make([]fg.Event, n)
	for i := range in {
		u, t := fg.UserID(1+rng.IntN(300)), fg.UserID(301+rng.IntN(300))
		in[i] = fg.NewEvent(u, t, fg.Op(1+rng.IntN(2)), V(int64(rng.IntN(1<<30))))
	}
	return in
}

// testImportEvents: Import of events in no order, with several versions
// of an edge, stores the highest of each, leaves the sequence at 0, and
// is idempotent.
func (s suite) testImportEvents(t *testing.T) {
	st := s.newStore(t)
	in := randomEvents(5, 6000) // more than one chunk of a store that imports in chunks
	m := Model{}
	m.Apply(in...)
	n, err := st.Import(context.Background(), slices.Values(in))
	if err != nil {
		t.Fatal(err)
	}
	if n < len(m) || n > len(in) {
		t.Errorf("Import changed %d rows; want %d to %d", n, len(m), len(in))
	}
	CheckEvents(t, st, m.Events())
	if got := LastSeq(t, st); got != 0 {
		t.Errorf("LastSeq after Import = %d, want 0", got)
	}
	// Importing or applying the same events again changes nothing.
	if n, err := st.Import(context.Background(), slices.Values(in)); err != nil || n != 0 {
		t.Errorf("Import again = %d, %v; want 0 rows changed", n, err)
	}
	if n := Apply(t, st, 1, in...); n != 0 {
		t.Errorf("Apply of the imported events changed %d rows", n)
	}
}

// testImportNotEmpty: Import into a store that has edges keeps the
// highest version of each edge, and the stored sequence.
func (s suite) testImportNotEmpty(t *testing.T) {
	st := s.newStore(t)
	before, in := randomEvents(6, 1000), randomEvents(7, 3000)
	m := Model{}
	m.Apply(before...)
	m.Apply(in...)
	Apply(t, st, 3, before...)
	if _, err := st.Import(context.Background(), slices.Values(in)); err != nil {
		t.Fatal(err)
	}
	CheckEvents(t, st, m.Events())
	if got := LastSeq(t, st); got != 3 {
		t.Errorf("LastSeq after Import = %d, want 3", got)
	}
}

// testImportInvalid: an invalid event, even after thousands of valid
// ones, fails the import with its code and imports nothing.
func (s suite) testImportInvalid(t *testing.T) {
	st := s.newStore(t)
	const n = 10_000 // several chunks written before the invalid event
	in := func(yield func(fg.Event) bool) {
		for i := range n {
			e := Follow(1, fg.UserID(i+2), V(int64(i)))
			if i == n-1 {
				e = Follow(1, 1, V(1))
			}
			if !yield(e) {
				return
			}
		}
	}
	if n, err := st.Import(context.Background(), in); fg.ErrorCode(err) != fg.ESelfFollow || n != 0 {
		t.Fatalf("Import = %d, %v; want 0, %s", n, err, fg.ESelfFollow)
	}
	CheckEvents(t, st, nil)
	// Import takes follows only: a block is bad input.
	block := slices.Values([]fg.Event{Follow(1, 2, V(1)), fg.NewEvent(2, 1, fg.OpBlock, V(2))})
	if n, err := st.Import(context.Background(), block); fg.ErrorCode(err) != fg.EInvalidArgument || n != 0 {
		t.Fatalf("Import of a block = %d, %v; want 0, %s", n, err, fg.EInvalidArgument)
	}
	CheckEvents(t, st, nil)
}

// eventsStore returns a store holding 998 follows of user 1, and them.
func (s suite) eventsStore(t *testing.T) (Store, []fg.Event) {
	st := s.newStore(t)
	var batch []fg.Event
	for i := fg.UserID(2); i < 1000; i++ {
		batch = append(batch, Follow(1, i, V(int64(i))))
	}
	Apply(t, st, 1, batch...)
	return st, batch
}

// testEventsSnapshot: Events yields one consistent state. A write during
// the iteration is not seen by it, and does not wait for it.
func (s suite) testEventsSnapshot(t *testing.T) {
	st, batch := s.eventsStore(t)
	n := 0
	for _, err := range st.Events(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		if n++; n == 10 {
			Apply(t, st, 2, Follow(5000, 5001, V(1)), Unfollow(1, 999, V(5000)))
		}
	}
	if n != len(batch) {
		t.Errorf("Events yielded %d events, want %d (the state before the write)", n, len(batch))
	}
	want := Model{}
	want.Apply(batch...)
	want.Apply(Follow(5000, 5001, V(1)), Unfollow(1, 999, V(5000)))
	CheckEvents(t, st, want.Events())
}

// testEventsBreak: stopping early releases what the iteration held: more
// iterations than a pool has connections still work.
func (s suite) testEventsBreak(t *testing.T) {
	st, _ := s.eventsStore(t)
	for range 20 {
		for _, err := range st.Events(context.Background()) {
			if err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	LastSeq(t, st)
	Apply(t, st, 2, Follow(5000, 5001, V(1)))
}

// testEventsCanceled: a canceled context ends the iteration with an error
// that says so.
func (s suite) testEventsCanceled(t *testing.T) {
	st, _ := s.eventsStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var err error
	for _, err = range st.Events(ctx) {
		if err != nil {
			break
		}
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Events with a canceled context: %v, want context.Canceled", err)
	}
}

// testConcurrent: writers and readers at once. Batches of the same edges
// from several goroutines neither fail nor deadlock, reads go on, and the
// result is that of every batch, with the highest sequence.
func (s suite) testConcurrent(t *testing.T) {
	ctx := context.Background()
	st := s.newStore(t)
	const writers, batches = 3, 10
	batch := func(w, b int) []fg.Event {
		rng := rand.New(rand.NewPCG(uint64(w), uint64(b)))
		out := make([]fg.Event, 50)
		for i := range out {
			out[i] = fg.NewEvent(fg.UserID(1+rng.IntN(30)), fg.UserID(31+rng.IntN(30)), fg.Op(1+rng.IntN(2)),
				V(int64(b*1000+w*100+i)))
		}
		return out
	}
	errs := make(chan error, writers+1)
	done := make(chan struct{})
	for w := range writers {
		go func() {
			for b := range batches {
				if _, err := st.Apply(ctx, batch(w, b), uint64(b*writers+w+1)); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	go func() {
		for {
			select {
			case <-done:
				errs <- nil
				return
			default:
			}
			if _, err := st.LastSeq(ctx); err != nil {
				errs <- err
				return
			}
			for _, err := range st.Events(ctx) {
				if err != nil {
					errs <- err
					return
				}
			}
		}
	}()
	for range writers {
		if err := <-errs; err != nil {
			close(done)
			t.Fatal(err)
		}
	}
	close(done)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	m := Model{}
	for w := range writers {
		for b := range batches {
			m.Apply(batch(w, b)...)
		}
	}
	CheckEvents(t, st, m.Events())
	if got := LastSeq(t, st); got != batches*writers {
		t.Errorf("LastSeq = %d, want %d", got, batches*writers)
	}
}
