package sqlite_test

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/store/sqlite"
)

// openStore opens the store at path and closes it when tb ends.
func openStore(tb testing.TB, path string) *sqlite.Store {
	tb.Helper()
	s, err := sqlite.Open(context.Background(), path)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Error(err)
		}
	})
	return s
}

func newStore(tb testing.TB) *sqlite.Store {
	tb.Helper()
	return openStore(tb, filepath.Join(tb.TempDir(), "followgraph.db"))
}

// t0 is the time of version v(0).
var t0 = time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC).UnixMilli()

// v returns a version n milliseconds after t0.
func v(n int64) fg.Version { return fg.VersionAt(t0 + n) }

func follow(u, t fg.UserID, ver fg.Version) fg.Event {
	return fg.NewEvent(u, t, fg.OpFollow, ver)
}

func unfollow(u, t fg.UserID, ver fg.Version) fg.Event {
	return fg.NewEvent(u, t, fg.OpUnfollow, ver)
}

// model is the expected state: for each edge, its event of highest version.
type model map[[2]fg.UserID]fg.Event

func (m model) apply(events ...fg.Event) {
	for _, e := range events {
		k := [2]fg.UserID{e.User, e.Target}
		if old, ok := m[k]; !ok || e.Version > old.Version {
			m[k] = e
		}
	}
}

// events returns the state as Events yields it: in (user, target) order.
func (m model) events() []fg.Event {
	return slices.SortedFunc(maps.Values(m), func(a, b fg.Event) int {
		return cmp.Or(cmp.Compare(a.User, b.User), cmp.Compare(a.Target, b.Target))
	})
}

// storedEvents returns everything Events yields.
func storedEvents(tb testing.TB, s *sqlite.Store) []fg.Event {
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

func checkEvents(tb testing.TB, s *sqlite.Store, want []fg.Event) {
	tb.Helper()
	got := storedEvents(tb, s)
	if !slices.EqualFunc(got, want, sameEvent) {
		tb.Fatalf("Events:\n got %v\nwant %v", got, want)
	}
	for _, e := range got {
		if err := e.Validate(); err != nil {
			tb.Errorf("Events yielded an invalid event: %v", err)
		}
	}
}

func sameEvent(a, b fg.Event) bool {
	return a.User == b.User && a.Target == b.Target && a.Op == b.Op && a.Version == b.Version && a.Time.Equal(b.Time)
}

func apply(tb testing.TB, s *sqlite.Store, seq uint64, events ...fg.Event) int {
	tb.Helper()
	n, err := s.Apply(context.Background(), events, seq)
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

func lastSeq(tb testing.TB, s *sqlite.Store) uint64 {
	tb.Helper()
	seq, err := s.LastSeq(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	return seq
}

func TestStore_Apply(t *testing.T) {
	ctx := context.Background()

	t.Run("RoundTrip", func(t *testing.T) {
		s := newStore(t)
		if err := s.Ready(ctx); err != nil {
			t.Fatal(err)
		}
		checkEvents(t, s, nil)
		m := model{}
		batch := []fg.Event{
			follow(1, 2, v(1)), follow(1, 3, v(2)), follow(2, 1, v(3)),
			follow(3, 1, v(4)), unfollow(3, 1, v(5)), // a tombstone
			unfollow(4, 5, v(6)), // an unfollow of an edge never seen: a tombstone too
			follow(fg.MaxUserID, 1, v(7)),
		}
		m.apply(batch...)
		if n := apply(t, s, 7, batch...); n != 6 {
			t.Errorf("Apply changed %d rows, want 6 (one per edge)", n)
		}
		checkEvents(t, s, m.events())
		if got := lastSeq(t, s); got != 7 {
			t.Errorf("LastSeq = %d, want 7", got)
		}
	})

	t.Run("Converge", func(t *testing.T) {
		// Every order of follow v1, unfollow v2, follow v3 of one edge,
		// in one batch with duplicates, or one event per batch delivered
		// twice, ends at follow v3.
		evs := []fg.Event{follow(1, 2, v(1)), unfollow(1, 2, v(2)), follow(1, 2, v(3))}
		want := []fg.Event{follow(1, 2, v(3))}
		for _, p := range permutations(len(evs)) {
			perm := make([]fg.Event, len(p))
			for i, j := range p {
				perm[i] = evs[j]
			}
			t.Run(fmt.Sprint(p), func(t *testing.T) {
				s := newStore(t)
				apply(t, s, 1, slices.Concat(perm, perm)...)
				checkEvents(t, s, want)

				s = newStore(t)
				for i, e := range perm {
					apply(t, s, uint64(i+1), e)
					if n := apply(t, s, uint64(i+1), e); n != 0 {
						t.Errorf("redelivery of %v changed %d rows", e, n)
					}
				}
				checkEvents(t, s, want)
			})
		}
	})

	t.Run("OlderAfterNewer", func(t *testing.T) {
		s := newStore(t)
		apply(t, s, 1, follow(1, 2, v(3)), unfollow(1, 3, v(5)))
		want := storedEvents(t, s)
		for _, e := range []fg.Event{
			follow(1, 2, v(1)),   // an older follow: the time must not move back
			unfollow(1, 2, v(2)), // an older unfollow must not remove it
			follow(1, 2, v(3)),   // the same version again
			follow(1, 3, v(4)),   // an older follow must not resurrect a tombstone
		} {
			if n := apply(t, s, 2, e); n != 0 {
				t.Errorf("Apply(%v) changed %d rows, want 0", e, n)
			}
		}
		checkEvents(t, s, want)
	})

	t.Run("LastSeq", func(t *testing.T) {
		s := newStore(t)
		if got := lastSeq(t, s); got != 0 {
			t.Fatalf("LastSeq of a new store = %d, want 0", got)
		}
		apply(t, s, 10)
		if got := lastSeq(t, s); got != 10 {
			t.Fatalf("LastSeq = %d, want 10", got)
		}
		// A lower sequence still applies its events, but the sequence
		// stays where it was.
		if n := apply(t, s, 5, follow(1, 2, v(1))); n != 1 {
			t.Errorf("Apply changed %d rows, want 1", n)
		}
		if got := lastSeq(t, s); got != 10 {
			t.Errorf("LastSeq = %d after Apply(5), want 10", got)
		}
		apply(t, s, 1<<63-1)
		if got := lastSeq(t, s); got != 1<<63-1 {
			t.Errorf("LastSeq = %d, want 2^63-1", got)
		}
		if _, err := s.Apply(ctx, nil, 1<<63); fg.ErrorCode(err) != fg.EInvalidArgument {
			t.Errorf("Apply(seq 2^63) = %v, want %s", err, fg.EInvalidArgument)
		}
	})

	t.Run("Invalid", func(t *testing.T) {
		bad := follow(1, 2, v(1))
		bad.Time = bad.Time.Add(time.Millisecond)
		tests := []struct {
			name string
			e    fg.Event
			code string
		}{
			{"SelfFollow", follow(7, 7, v(1)), fg.ESelfFollow},
			{"ZeroID", follow(0, 7, v(1)), fg.EInvalidID},
			{"NegativeID", follow(7, -1, v(1)), fg.EInvalidID},
			{"UnknownOp", fg.NewEvent(1, 2, 3, v(1)), fg.EInvalidArgument},
			{"ZeroVersion", fg.Event{User: 1, Target: 2, Op: fg.OpFollow, Time: fg.Millis(0)}, fg.EInvalidArgument},
			{"TimeNotVersion", bad, fg.EInvalidArgument},
			{"Version2^63", follow(1, 2, 1<<63), fg.EInvalidArgument},
			{"VersionMax", follow(1, 2, 1<<64-1), fg.EInvalidArgument},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				s := newStore(t)
				apply(t, s, 3, follow(5, 6, v(1)))
				want := storedEvents(t, s)
				batch := []fg.Event{follow(1, 3, v(2)), unfollow(5, 6, v(3)), tt.e, follow(2, 3, v(4))}
				n, err := s.Apply(ctx, batch, 9)
				if err == nil || n != 0 {
					t.Fatalf("Apply = %d, %v; want an error", n, err)
				}
				if code := fg.ErrorCode(err); code != tt.code {
					t.Errorf("error %v has code %q, want %q", err, code, tt.code)
				}
				checkEvents(t, s, want)
				if got := lastSeq(t, s); got != 3 {
					t.Errorf("LastSeq = %d after a failed Apply, want 3", got)
				}
			})
		}
	})

	t.Run("Large", func(t *testing.T) {
		// Batches that take several statements, with repeated edges
		// across the statement boundaries.
		s := newStore(t)
		m := model{}
		rng := rand.New(rand.NewPCG(1, 1))
		for seq := uint64(1); seq <= 3; seq++ {
			batch := make([]fg.Event, 1500+rng.IntN(1000))
			for i := range batch {
				u, t := fg.UserID(1+rng.IntN(40)), fg.UserID(41+rng.IntN(40))
				batch[i] = fg.NewEvent(u, t, fg.Op(1+rng.IntN(2)), v(int64(rng.IntN(1<<20))))
			}
			m.apply(batch...)
			apply(t, s, seq, batch...)
		}
		checkEvents(t, s, m.events())
	})
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

func TestStore_Reopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "followgraph.db")
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	apply(t, s, 42, follow(1, 2, v(1)), unfollow(2, 1, v(2)))
	want := storedEvents(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	versions := schemaVersions(t, path)
	if len(versions) == 0 {
		t.Fatal("no schema_version rows")
	}

	s = openStore(t, path)
	checkEvents(t, s, want)
	if got := lastSeq(t, s); got != 42 {
		t.Errorf("LastSeq after reopen = %d, want 42", got)
	}
	if got := schemaVersions(t, path); !slices.Equal(got, versions) {
		t.Errorf("schema_version after reopen:\n got %v\nwant %v (migrations ran again)", got, versions)
	}
	if got := pragma(t, path, "journal_mode"); got != "wal" {
		t.Errorf("journal_mode = %s, want wal", got)
	}

	t.Run("NewerSchema", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "newer.db")
		s, err := sqlite.Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		execRaw(t, path, `INSERT INTO schema_version (version, name, applied_ms) VALUES (999, '0999_future.sql', 0)`)
		if s, err := sqlite.Open(ctx, path); err == nil {
			s.Close()
			t.Fatal("Open of a database with a newer schema succeeded")
		}
	})
}

// rawDB opens the file at path directly, without the store. The caller
// closes it.
func rawDB(tb testing.TB, path string) *sql.DB {
	tb.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		tb.Fatal(err)
	}
	return db
}

func execRaw(tb testing.TB, path, query string) {
	tb.Helper()
	db := rawDB(tb, path)
	defer db.Close()
	if _, err := db.Exec(query); err != nil {
		tb.Fatal(err)
	}
}

func pragma(tb testing.TB, path, name string) string {
	tb.Helper()
	db := rawDB(tb, path)
	defer db.Close()
	var v string
	if err := db.QueryRow("PRAGMA " + name).Scan(&v); err != nil {
		tb.Fatal(err)
	}
	return v
}

func schemaVersions(tb testing.TB, path string) []string {
	tb.Helper()
	db := rawDB(tb, path)
	defer db.Close()
	rows, err := db.Query(`SELECT version, name, applied_ms FROM schema_version ORDER BY version`)
	if err != nil {
		tb.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var version, ms int64
		var name string
		if err := rows.Scan(&version, &name, &ms); err != nil {
			tb.Fatal(err)
		}
		out = append(out, fmt.Sprint(version, name, ms))
	}
	if err := rows.Err(); err != nil {
		tb.Fatal(err)
	}
	return out
}

func TestStore_Import(t *testing.T) {
	ctx := context.Background()
	// randomEvents returns n events of 300×300 possible edges, in no
	// order, with repeats and both ops.
	randomEvents := func(seed uint64, n int) []fg.Event {
		rng := rand.New(rand.NewPCG(seed, seed))
		in := make([]fg.Event, n)
		for i := range in {
			u, t := fg.UserID(1+rng.IntN(300)), fg.UserID(301+rng.IntN(300))
			in[i] = fg.NewEvent(u, t, fg.Op(1+rng.IntN(2)), v(int64(rng.IntN(1<<30))))
		}
		return in
	}

	t.Run("Events", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "import.db")
		s := openStore(t, path)
		in := randomEvents(5, 6000) // more than one chunk
		m := model{}
		m.apply(in...)
		n, err := s.Import(ctx, slices.Values(in))
		if err != nil {
			t.Fatal(err)
		}
		if n < len(m) || n > len(in) {
			t.Errorf("Import changed %d rows; want %d to %d", n, len(m), len(in))
		}
		checkEvents(t, s, m.events())
		if got := lastSeq(t, s); got != 0 {
			t.Errorf("LastSeq after Import = %d, want 0", got)
		}
		// Applying the same events again changes nothing.
		if n := apply(t, s, 1, in...); n != 0 {
			t.Errorf("Apply of the imported events changed %d rows", n)
		}
	})

	t.Run("NotEmpty", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "import.db")
		s := openStore(t, path)
		before, in := randomEvents(6, 1000), randomEvents(7, 3000)
		m := model{}
		m.apply(before...)
		m.apply(in...)
		apply(t, s, 3, before...)
		if _, err := s.Import(ctx, slices.Values(in)); err != nil {
			t.Fatal(err)
		}
		checkEvents(t, s, m.events())
		if got := lastSeq(t, s); got != 3 {
			t.Errorf("LastSeq after Import = %d, want 3", got)
		}
	})

	t.Run("Invalid", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "import.db")
		s := openStore(t, path)
		const n = 10_000 // several chunks written before the invalid event
		in := func(yield func(fg.Event) bool) {
			for i := range n {
				e := follow(1, fg.UserID(i+2), v(int64(i)))
				if i == n-1 {
					e = follow(1, 1, v(1))
				}
				if !yield(e) {
					return
				}
			}
		}
		if n, err := s.Import(ctx, in); fg.ErrorCode(err) != fg.ESelfFollow || n != 0 {
			t.Fatalf("Import = %d, %v; want 0, %s", n, err, fg.ESelfFollow)
		}
		checkEvents(t, s, nil)
	})
}

func TestStore_Events(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	var batch []fg.Event
	for i := fg.UserID(2); i < 1000; i++ {
		batch = append(batch, follow(1, i, v(int64(i))))
	}
	apply(t, s, 1, batch...)

	t.Run("Snapshot", func(t *testing.T) {
		// A write during the iteration is not seen by it, and does not
		// wait for it.
		n := 0
		for _, err := range s.Events(ctx) {
			if err != nil {
				t.Fatal(err)
			}
			if n++; n == 10 {
				apply(t, s, 2, follow(5000, 5001, v(1)), unfollow(1, 999, v(5000)))
			}
		}
		if n != len(batch) {
			t.Errorf("Events yielded %d events, want %d (the state before the write)", n, len(batch))
		}
		if got := len(storedEvents(t, s)); got != len(batch)+1 {
			t.Errorf("Events yielded %d events after the write, want %d", got, len(batch)+1)
		}
	})

	t.Run("Break", func(t *testing.T) {
		// Stopping early releases the connection: more reads than the
		// pool has connections still work.
		for range 20 {
			for _, err := range s.Events(ctx) {
				if err != nil {
					t.Fatal(err)
				}
				break
			}
		}
		if _, err := s.LastSeq(ctx); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("Canceled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(ctx)
		cancel()
		var err error
		for _, err = range s.Events(ctx) {
			if err != nil {
				break
			}
		}
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Events with a canceled context: %v, want context.Canceled", err)
		}
	})
}

func TestStore_Concurrent(t *testing.T) {
	// Writers and readers at once: writes are serialized, reads go on, and
	// the result is that of every batch.
	ctx := context.Background()
	s := newStore(t)
	const writers, batches = 3, 10
	batch := func(w, b int) []fg.Event {
		rng := rand.New(rand.NewPCG(uint64(w), uint64(b)))
		out := make([]fg.Event, 50)
		for i := range out {
			out[i] = fg.NewEvent(fg.UserID(1+rng.IntN(30)), fg.UserID(31+rng.IntN(30)), fg.Op(1+rng.IntN(2)),
				v(int64(b*1000+w*100+i)))
		}
		return out
	}
	errs := make(chan error, writers+1)
	done := make(chan struct{})
	for w := range writers {
		go func() {
			for b := range batches {
				if _, err := s.Apply(ctx, batch(w, b), uint64(b*writers+w+1)); err != nil {
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
			if _, err := s.LastSeq(ctx); err != nil {
				errs <- err
				return
			}
			for _, err := range s.Events(ctx) {
				if err != nil {
					errs <- err
					return
				}
			}
		}
	}()
	for range writers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	m := model{}
	for w := range writers {
		for b := range batches {
			m.apply(batch(w, b)...)
		}
	}
	checkEvents(t, s, m.events())
	if got := lastSeq(t, s); got != batches*writers {
		t.Errorf("LastSeq = %d, want %d", got, batches*writers)
	}
}

// crashEnv names the database file of the helper process of
// TestStore_Crash; the helper does nothing without it.
const crashEnv = "FOLLOWGRAPH_SQLITE_CRASH_DB"

// crashBatch is batch seq of the helper process: the same for a given seq
// in the helper and in the test that checks its results.
func crashBatch(seq uint64) []fg.Event {
	rng := rand.New(rand.NewPCG(seq, 0))
	batch := make([]fg.Event, 100)
	for i := range batch {
		u := fg.UserID(1 + rng.IntN(100))
		t := fg.UserID(101 + rng.IntN(100))
		batch[i] = fg.NewEvent(u, t, fg.Op(1+rng.IntN(2)), v(int64(seq))+fg.Version(i))
	}
	return batch
}

// TestHelperProcess is the process TestStore_Crash kills: it applies
// crashBatch(seq) with seq as the sequence, for seq from the stored one
// on, and prints each seq once its Apply has returned.
func TestHelperProcess(t *testing.T) {
	path := os.Getenv(crashEnv)
	if path == "" {
		return // not the helper: nothing to do
	}
	ctx := context.Background()
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	seq, err := s.LastSeq(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); { // if never killed
		seq++
		if _, err := s.Apply(ctx, crashBatch(seq), seq); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		fmt.Println(seq)
	}
	os.Exit(3)
}

// TestStore_Crash kills a process that is applying batches, at a random
// moment, and checks that every batch it reported committed is there,
// that the database is intact, and that the store holds exactly the
// batches up to its sequence: each batch and its sequence are one
// transaction.
func TestStore_Crash(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills processes; run without -short")
	}
	path := filepath.Join(t.TempDir(), "crash.db")
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0))
	for round := range 5 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashEnv+"="+path)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr bytes.Buffer // read only after Wait, which waits for the copying
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		killAfter := 5 + rng.IntN(30)
		lines, printed := 0, uint64(0)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			seq, err := strconv.ParseUint(sc.Text(), 10, 64)
			if err != nil {
				continue
			}
			printed = seq
			if lines++; lines == killAfter {
				time.Sleep(time.Duration(rng.IntN(3000)) * time.Microsecond)
				if err := cmd.Process.Kill(); err != nil { // SIGKILL
					t.Fatal(err)
				}
			}
		}
		err = cmd.Wait()
		if lines < killAfter {
			t.Fatalf("round %d: the helper ended after %d batches (%v): %s", round, lines, err, stderr.String())
		}

		if got := pragma(t, path, "integrity_check"); got != "ok" {
			t.Fatalf("round %d: integrity_check: %s", round, got)
		}
		s, err := sqlite.Open(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		seq := lastSeq(t, s)
		t.Logf("round %d: killed after printing %d, LastSeq %d", round, printed, seq)
		if seq < printed {
			t.Fatalf("round %d: LastSeq = %d after the helper printed %d: a committed batch was lost", round, seq, printed)
		}
		m := model{}
		for i := uint64(1); i <= seq; i++ {
			m.apply(crashBatch(i)...)
		}
		checkEvents(t, s, m.events())
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
