package storetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	fg "github.com/followgraph/followgraph"
)

// testApplyRoundTrip: a batch of follows, unfollows and tombstones of
// unseen edges reads back as one event per edge, and the sequence with it.
func (s suite) testApplyRoundTrip(t *testing.T) {
	st := s.newStore(t)
	if r, ok := st.(Readier); ok {
		if err := r.Ready(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	CheckEvents(t, st, nil)
	m := Model{}
	batch := []fg.Event{
		Follow(1, 2, V(1)), Follow(1, 3, V(2)), Follow(2, 1, V(3)),
		Follow(3, 1, V(4)), Unfollow(3, 1, V(5)), // a tombstone
		Unfollow(4, 5, V(6)), // an unfollow of an edge never seen: a tombstone too
		Follow(fg.MaxUserID, 1, V(7)),
		Follow(1, fg.MaxUserID, fg.Version(1<<63-1)), // the highest version a store takes
	}
	m.Apply(batch...)
	if n := Apply(t, st, 7, batch...); n != 7 {
		t.Errorf("Apply changed %d rows, want 7 (one per edge)", n)
	}
	CheckEvents(t, st, m.Events())
	if got := LastSeq(t, st); got != 7 {
		t.Errorf("LastSeq = %d, want 7", got)
	}
}

// testApplyConverge: every order of follow v1, unfollow v2, follow v3 of
// one edge, in one batch with duplicates, or one event per batch
// delivered twice, ends at follow v3.
func (s suite) testApplyConverge(t *testing.T) {
	evs := []fg.Event{Follow(1, 2, V(1)), Unfollow(1, 2, V(2)), Follow(1, 2, V(3))}
	want := []fg.Event{Follow(1, 2, V(3))}
	for _, p := range permutations(len(evs)) {
		perm := make([]fg.Event, len(p))
		for i, j := range p {
			perm[i] = evs[j]
		}
		t.Run(fmt.Sprint(p), func(t *testing.T) {
			st := s.newStore(t)
			if n := Apply(t, st, 1, slices.Concat(perm, perm)...); n != 1 {
				t.Errorf("Apply of %v twice changed %d rows, want 1", perm, n)
			}
			CheckEvents(t, st, want)

			st = s.newStore(t)
			for i, e := range perm {
				Apply(t, st, uint64(i+1), e)
				if n := Apply(t, st, uint64(i+1), e); n != 0 {
					t.Errorf("redelivery of %v changed %d rows", e, n)
				}
			}
			CheckEvents(t, st, want)
		})
	}
}

// permutations returns every order of 0..n-1.
func permutations(n int) [][]int {
	if n == 0 {
		return [][]int{{}}
	}
	var out [][]int
	for _, p := range permutations(n - 1) {
		for i := 0; i <= len(p); i++ {
			out = append(out, slices.Insert(slices.Clone(p), i, n-1))
		}
	}
	return out
}

// testApplyOlderAfterNewer: an event of a version at or below the stored
// one changes nothing, and is not counted.
func (s suite) testApplyOlderAfterNewer(t *testing.T) {
	st := s.newStore(t)
	Apply(t, st, 1, Follow(1, 2, V(3)), Unfollow(1, 3, V(5)))
	want := StoredEvents(t, st)
	for _, e := range []fg.Event{
		Follow(1, 2, V(1)),   // an older follow: the time must not move back
		Unfollow(1, 2, V(2)), // an older unfollow must not remove it
		Follow(1, 2, V(3)),   // the same version again
		Follow(1, 3, V(4)),   // an older follow must not resurrect a tombstone
	} {
		if n := Apply(t, st, 2, e); n != 0 {
			t.Errorf("Apply(%v) changed %d rows, want 0", e, n)
		}
	}
	CheckEvents(t, st, want)
}

// testApplyLastSeq: the sequence starts at 0, follows Apply, never moves
// backward, and takes values up to 2^63-1.
func (s suite) testApplyLastSeq(t *testing.T) {
	st := s.newStore(t)
	if got := LastSeq(t, st); got != 0 {
		t.Fatalf("LastSeq of a new store = %d, want 0", got)
	}
	Apply(t, st, 10)
	if got := LastSeq(t, st); got != 10 {
		t.Fatalf("LastSeq = %d, want 10", got)
	}
	// A lower sequence still applies its events, but the sequence stays
	// where it was.
	if n := Apply(t, st, 5, Follow(1, 2, V(1))); n != 1 {
		t.Errorf("Apply changed %d rows, want 1", n)
	}
	if got := LastSeq(t, st); got != 10 {
		t.Errorf("LastSeq = %d after Apply(5), want 10", got)
	}
	Apply(t, st, 1<<63-1)
	if got := LastSeq(t, st); got != 1<<63-1 {
		t.Errorf("LastSeq = %d, want 2^63-1", got)
	}
	if _, err := st.Apply(context.Background(), nil, 1<<63); fg.ErrorCode(err) != fg.EInvalidArgument {
		t.Errorf("Apply(seq 2^63) = %v, want %s", err, fg.EInvalidArgument)
	}
}

// testApplyInvalid: one invalid event fails the whole batch with its
// code, and nothing of the batch, nor its sequence, is stored.
func (s suite) testApplyInvalid(t *testing.T) {
	bad := Follow(1, 2, V(1))
	bad.Time = bad.Time.Add(time.Millisecond)
	tests := []struct {
		name string
		e    fg.Event
		code string
	}{
		{"SelfFollow", Follow(7, 7, V(1)), fg.ESelfFollow},
		{"ZeroID", Follow(0, 7, V(1)), fg.EInvalidID},
		{"NegativeID", Follow(7, -1, V(1)), fg.EInvalidID},
		{"UnknownOp", fg.NewEvent(1, 2, fg.OpState+1, V(1)), fg.EInvalidArgument},
		{"StateWithTarget", fg.Event{User: 1, Target: 2, Op: fg.OpState, Time: V(1).Time(), Version: V(1), State: fg.StateSuspended}, fg.EInvalidArgument},
		{"UnknownState", State(1, fg.StateDeleted+1, V(1)), fg.EInvalidArgument},
		{"StateOfAFollow", fg.Event{User: 1, Target: 2, Op: fg.OpFollow, Time: V(1).Time(), Version: V(1), State: fg.StateSuspended}, fg.EInvalidArgument},
		{"SelfBlock", fg.NewEvent(7, 7, fg.OpBlock, V(1)), fg.ESelfFollow},
		{"BlockOfZero", fg.NewEvent(7, 0, fg.OpBlock, V(1)), fg.EInvalidID},
		{"MuteWithoutSince", fg.NewEvent(1, 2, fg.OpMute, V(1)), fg.EInvalidArgument},
		{"MuteExpiringAtSince", Mute(1, 2, V(1), V(0).Time(), V(0).Time()), fg.EInvalidArgument},
		{"PrivateWithTarget", fg.NewEvent(1, 2, fg.OpPrivate, V(1)), fg.EInvalidArgument},
		{"BlockVersion2^63", fg.NewEvent(1, 2, fg.OpBlock, 1<<63), fg.EInvalidArgument},
		{"ZeroVersion", fg.Event{User: 1, Target: 2, Op: fg.OpFollow, Time: fg.Millis(0)}, fg.EInvalidArgument},
		{"TimeNotVersion", bad, fg.EInvalidArgument},
		{"Version2^63", Follow(1, 2, 1<<63), fg.EInvalidArgument},
		{"VersionMax", Follow(1, 2, 1<<64-1), fg.EInvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := s.newStore(t)
			Apply(t, st, 3, Follow(5, 6, V(1)))
			want := StoredEvents(t, st)
			batch := []fg.Event{Follow(1, 3, V(2)), Unfollow(5, 6, V(3)), fg.NewEvent(5, 6, fg.OpBlock, V(3)), tt.e, Follow(2, 3, V(4))}
			n, err := st.Apply(context.Background(), batch, 9)
			if err == nil || n != 0 {
				t.Fatalf("Apply = %d, %v; want an error", n, err)
			}
			if code := fg.ErrorCode(err); code != tt.code {
				t.Errorf("error %v has code %q, want %q", err, code, tt.code)
			}
			CheckEvents(t, st, want)
			if got := LastSeq(t, st); got != 3 {
				t.Errorf("LastSeq = %d after a failed Apply, want 3", got)
			}
		})
	}
}

// testApplyLarge: batches larger than a store's statements, with the same
// edges many times over (across any statement boundaries).
func (s suite) testApplyLarge(t *testing.T) {
	st := s.newStore(t)
	m := Model{}
	rng := rand.New(rand.NewPCG(1, 1))
	for seq := uint64(1); seq <= 3; seq++ {
		batch := make([]fg.Event, 1500+rng.IntN(1000))
		for i := range batch {
			u, t := fg.UserID(1+rng.IntN(40)), fg.UserID(41+rng.IntN(40))
			batch[i] = fg.NewEvent(u, t, fg.Op(1+rng.IntN(2)), V(int64(rng.IntN(1<<20))))
		}
		m.Apply(batch...)
		Apply(t, st, seq, batch...)
	}
	CheckEvents(t, st, m.Events())
	if got := LastSeq(t, st); got != 3 {
		t.Errorf("LastSeq = %d, want 3", got)
	}
}

// testLogPosition: a new store has an identity of its own and knows no log;
// SaveLogPosition sets the log's identity and only raises the sequence seen;
// Apply moves the sequence applied; ResetLogPosition sets the log and both
// sequences, lower ones included; the store's identity never changes.
func (s suite) testLogPosition(t *testing.T) {
	st := s.newStore(t)
	ctx := context.Background()
	position := func() fg.LogPosition {
		t.Helper()
		p, err := st.LogPosition(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := position()
	if p.Store <= 0 || p.Log != 0 || p.Applied != 0 || p.Seen != 0 {
		t.Fatalf("LogPosition of a new store = %+v, want an identity and zeros", p)
	}
	if other := s.newStore(t); mustPosition(t, other).Store == p.Store {
		t.Errorf("two new stores have the same identity %d", p.Store)
	}
	self := p.Store
	const id = 1764600000123456789
	if err := st.SaveLogPosition(ctx, fg.LogPosition{Store: 7, Log: id, Seen: 40}); err != nil {
		t.Fatal(err)
	}
	Apply(t, st, 12)
	if err := st.SaveLogPosition(ctx, fg.LogPosition{Log: id, Applied: 99, Seen: 30}); err != nil { // a lower seen is kept at 40
		t.Fatal(err)
	}
	if got, want := position(), (fg.LogPosition{Store: self, Log: id, Applied: 12, Seen: 40}); got != want {
		t.Errorf("LogPosition = %+v, want %+v", got, want)
	}
	if err := st.ResetLogPosition(ctx, fg.LogPosition{Store: 7, Log: id + 1, Applied: 3, Seen: 5}); err != nil {
		t.Fatal(err)
	}
	if got, want := position(), (fg.LogPosition{Store: self, Log: id + 1, Applied: 3, Seen: 5}); got != want {
		t.Errorf("LogPosition after ResetLogPosition = %+v, want %+v", got, want)
	}
	if got := LastSeq(t, st); got != 3 {
		t.Errorf("LastSeq after ResetLogPosition = %d, want 3", got)
	}
	if err := st.SaveLogPosition(ctx, fg.LogPosition{Log: id, Seen: 1 << 63}); err == nil {
		t.Error("SaveLogPosition of a sequence of 2^63: no error")
	}
}

func mustPosition(tb testing.TB, st Store) fg.LogPosition {
	tb.Helper()
	p, err := st.LogPosition(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	return p
}
