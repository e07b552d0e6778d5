// Package storetest is the conformance suite of the durable stores
// (store/sqlite, store/postgres, store/mysql): what the persister and
// start-up rely on — conditional, idempotent upserts that converge in any
// order, for every kind of edge, the private setting and the account
// state, and each effect of an event (a block's
// end of the follows and requests between two users), tombstones, the
// event-log sequence kept in the same transaction,
// invalid batches rejected whole, Import, Events, LastSeq and the log
// position checked at start — is written
// here once and proven on every store.
//
// A store calls Run from its own test with a constructor of empty stores:
//
//	func TestStore(t *testing.T) {
//		storetest.Run(t, func(tb testing.TB) storetest.Store {
//			return newStore(tb) // a new, empty store, closed when tb ends
//		})
//	}
//
// The horizon tests also reopen a store, as a new process would: a store
// whose data is at a place it can open again (a file, a database) calls
// RunAt instead, which keeps the place of each store it opens.
//
// What only one store has (reopening a file, migrations, pragmas, the
// reads of a shared database) is tested in that store's package; the
// helpers exported here (Model, StoredEvents, CheckEvents, SameEvent)
// serve those tests too.
package storetest

import (
	"cmp"
	"context"
	"fmt"
	"iter"
	"maps"
	"slices"
	"testing"
	"time"

	fg "github.com/followgraph/followgraph"
)

// Store is what every durable store offers, as the suite uses it. The
// doc comments of store/sqlite's Store are the contract in full.
type Store interface {
	// Apply records a batch of events and the stream sequence of its
	// last event in one transaction, and returns the edges changed.
	Apply(ctx context.Context, events []fg.Event, lastSeq uint64) (int, error)
	// Import bulk-loads events, leaving the stored sequence alone, and
	// returns the rows written.
	Import(ctx context.Context, events iter.Seq[fg.Event]) (int, error)
	// Events yields the state of every edge: the follows in (follower,
	// followee) order, then the other kinds in (user, kind, target) order.
	Events(ctx context.Context) iter.Seq2[fg.Event, error]
	// LastSeq returns the highest sequence applied, 0 for a new store.
	LastSeq(ctx context.Context) (uint64, error)
	// LogPosition returns what the store knows of the log it is fed from;
	// SaveLogPosition sets the log's identity and raises the sequence seen;
	// ResetLogPosition sets the log's identity and both sequences.
	LogPosition(ctx context.Context) (fg.LogPosition, error)
	SaveLogPosition(ctx context.Context, p fg.LogPosition) error
	ResetLogPosition(ctx context.Context, p fg.LogPosition) error
	// TombstoneHorizon and PurgeTombstones remove tombstones once no
	// older change can arrive (followgraph.TombstonePurger).
	fg.TombstonePurger
	Close() error
}

// LinkLister is implemented by the stores that answer lists themselves
// (store/postgres, store/mysql): a page of the list named list
// (fg.ListBlocks, fg.ListMutes, fg.ListFollowRequests) of user, newest
// first, after the position after (nil: from the newest). The suite
// checks it on the stores that have it.
type LinkLister interface {
	Links(ctx context.Context, list string, user fg.UserID, after *fg.Key, limit int) ([]fg.Entry, error)
}

// Readier is implemented by stores that report whether they answer
// (every store of this repository does); the suite checks it on a new
// store when the store has it.
type Readier interface {
	Ready(ctx context.Context) error
}

// Run runs every conformance test against stores made by open.
//
// open returns a new, empty store for one test. It fails tb if it cannot,
// and closes the store (and removes whatever it created) when tb ends,
// with tb.Cleanup: stores of one Run never share data. The suite's tests
// run one at a time.
//
// reopen, when given, closes a store open returned and opens its database
// again, as a new process would, with refused as the store's WithRefused;
// the horizon tests need it.
func Run(t *testing.T, open func(tb testing.TB) Store, reopen ...Reopen) {
	s := suite{open: open}
	if len(reopen) > 0 {
		s.reopen = reopen[0]
	}
	groups := []struct {
		name  string
		tests []test
	}{
		{"Apply", []test{
			{"RoundTrip", s.testApplyRoundTrip},
			{"Converge", s.testApplyConverge},
			{"OlderAfterNewer", s.testApplyOlderAfterNewer},
			{"LastSeq", s.testApplyLastSeq},
			{"Invalid", s.testApplyInvalid},
			{"Large", s.testApplyLarge},
		}},
		{"Import", []test{
			{"Events", s.testImportEvents},
			{"NotEmpty", s.testImportNotEmpty},
			{"Invalid", s.testImportInvalid},
		}},
		{"Events", []test{
			{"Snapshot", s.testEventsSnapshot},
			{"Break", s.testEventsBreak},
			{"Canceled", s.testEventsCanceled},
		}},
		{"LogPosition", []test{
			{"SaveAndReset", s.testLogPosition},
		}},
		{"Links", []test{
			{"Block", s.testLinksBlock},
			{"Converge", s.testLinksConverge},
			{"RequestThenFollow", s.testLinksRequestThenFollow},
			{"Mute", s.testLinksMute},
			{"Private", s.testLinksPrivate},
			{"State", s.testLinksState},
			{"List", s.testLinksList},
		}},
		{"Concurrent", []test{
			{"ApplyAndRead", s.testConcurrent},
		}},
		{"Horizon", []test{
			{"PurgeInSteps", s.testHorizonPurge},
			{"Refused", s.testHorizonRefused},
			{"Links", s.testHorizonLinks},
			{"EndedRequest", s.testHorizonEndedRequest},
			{"Import", s.testHorizonImport},
		}},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			for _, tt := range g.tests {
				t.Run(tt.name, tt.fn)
			}
		})
	}
}

type test struct {
	name string
	fn   func(t *testing.T)
}

type suite struct {
	open   func(tb testing.TB) Store
	reopen Reopen
}

// Reopen closes s and opens its database again, as a new process would,
// with refused as what its Apply calls with each change it refuses (the
// stores' WithRefused). The store it returns is closed when tb ends.
type Reopen func(tb testing.TB, s Store, refused func(fg.Refusal)) Store

// RunAt runs Run with stores kept at places, such as a file or a
// database: newPlace makes a new, empty place for tb, and open opens the
// store at place, with refused as its WithRefused (nil, the store's
// default, at first), and closes it when tb ends. A store is reopened by
// closing it and opening its place again.
func RunAt(t *testing.T, newPlace func(tb testing.TB) string, open func(tb testing.TB, place string, refused func(fg.Refusal)) Store) {
	places := make(map[Store]string)
	Run(t, func(tb testing.TB) Store {
		place := newPlace(tb)
		s := open(tb, place, nil)
		places[s] = place
		return s
	}, func(tb testing.TB, s Store, refused func(fg.Refusal)) Store {
		if err := s.Close(); err != nil {
			tb.Fatal(err)
		}
		return open(tb, places[s], refused)
	})
}

// newStore opens a new, empty store for tb.
func (s suite) newStore(tb testing.TB) Store {
	tb.Helper()
	st := s.open(tb)
	if st == nil {
		tb.Fatal("storetest: open returned a nil store")
	}
	return st
}

// T0 is the time of version V(0), in Unix milliseconds: the helpers
// below are exported for the stores' own tests.
var T0 = time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC).UnixMilli()

// V returns a version n milliseconds after T0.
func V(n int64) fg.Version { return fg.VersionAt(T0 + n) }

// Follow is the event of u following t at version ver.
func Follow(u, t fg.UserID, ver fg.Version) fg.Event {
	return fg.NewEvent(u, t, fg.OpFollow, ver)
}

// Unfollow is the event of u unfollowing t at version ver.
func Unfollow(u, t fg.UserID, ver fg.Version) fg.Event {
	return fg.NewEvent(u, t, fg.OpUnfollow, ver)
}

// Mute is the event of u muting t at version ver, muted since since and
// until expires (zero: until unmuted).
func Mute(u, t fg.UserID, ver fg.Version, since, expires time.Time) fg.Event {
	e := fg.NewEvent(u, t, fg.OpMute, ver)
	e.Since, e.Expires = since, expires
	return e
}

// Model is the state a store must reach: for each edge, its event of
// highest version.
type Model map[[2]fg.UserID]fg.Event

// Apply adds events to the model, keeping the highest version of each edge.
func (m Model) Apply(events ...fg.Event) {
	for _, e := range events {
		k := [2]fg.UserID{e.User, e.Target}
		if old, ok := m[k]; !ok || e.Version > old.Version {
			m[k] = e
		}
	}
}

// Events returns the state as a store's Events yields it: in (user,
// target) order.
func (m Model) Events() []fg.Event {
	return slices.SortedFunc(maps.Values(m), func(a, b fg.Event) int {
		return cmp.Or(cmp.Compare(a.User, b.User), cmp.Compare(a.Target, b.Target))
	})
}

// StoredEvents returns everything s.Events yields, and fails tb on an error.
func StoredEvents(tb testing.TB, s Store) []fg.Event {
	tb.Helper()
	var out []fg.Event
	for e, err := range s.Events(context.Background()) {
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

// CheckEvents fails tb unless s.Events yields exactly want, in order, and
// every event it yields is valid.
func CheckEvents(tb testing.TB, s Store, want []fg.Event) {
	tb.Helper()
	got := StoredEvents(tb, s)
	if !slices.EqualFunc(got, want, SameEvent) {
		if len(got) > 20 || len(want) > 20 {
			tb.Fatalf("Events: got %d events, want %d; first difference at %d: %s",
				len(got), len(want), firstDifference(got, want), describeDifference(got, want))
		}
		tb.Fatalf("Events:\n got %v\nwant %v", got, want)
	}
	for _, e := range got {
		if err := e.Validate(); err != nil {
			tb.Errorf("Events yielded an invalid event: %v", err)
		}
	}
}

// SameEvent reports whether a and b are the same event: the same values,
// times compared by instant.
func SameEvent(a, b fg.Event) bool {
	return a.User == b.User && a.Target == b.Target && a.Op == b.Op && a.Version == b.Version && a.Time.Equal(b.Time) &&
		a.Since.Equal(b.Since) && a.Expires.Equal(b.Expires) && a.State == b.State
}

func firstDifference(got, want []fg.Event) int {
	i := 0
	for i < len(got) && i < len(want) && SameEvent(got[i], want[i]) {
		i++
	}
	return i
}

func describeDifference(got, want []fg.Event) string {
	i := firstDifference(got, want)
	at := func(es []fg.Event) any {
		if i < len(es) {
			return es[i]
		}
		return "(end)"
	}
	return fmt.Sprintf("got %v, want %v", at(got), at(want))
}

// Apply applies events as one batch with sequence seq, and fails tb on an
// error.
func Apply(tb testing.TB, s Store, seq uint64, events ...fg.Event) int {
	tb.Helper()
	n, err := s.Apply(context.Background(), events, seq)
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

// LastSeq returns s.LastSeq, and fails tb on an error.
func LastSeq(tb testing.TB, s Store) uint64 {
	tb.Helper()
	seq, err := s.LastSeq(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	return seq
}
