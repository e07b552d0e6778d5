package sqlite_test

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"fmt"
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
	"github.com/followgraph/followgraph/store/storetest"
)

// openStore opens the store at path and closes it when tb ends.
func openStore(tb testing.TB, path string, opts ...sqlite.Option) *sqlite.Store {
	tb.Helper()
	s, err := sqlite.Open(context.Background(), path, opts...)
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

// TestStore runs the conformance suite of durable stores, each test on a
// new file of its own.
func TestStore(t *testing.T) {
	storetest.RunAt(t, func(tb testing.TB) string {
		return filepath.Join(tb.TempDir(), "followgraph.db")
	}, func(tb testing.TB, path string, refused func(fg.Refusal)) storetest.Store {
		return openStore(tb, path, sqlite.WithRefused(refused))
	})
}

func TestStore_Reopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "followgraph.db")
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	storetest.Apply(t, s, 42, storetest.Follow(1, 2, storetest.V(1)), storetest.Unfollow(2, 1, storetest.V(2)))
	want := storetest.StoredEvents(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	versions := schemaVersions(t, path)
	if len(versions) == 0 {
		t.Fatal("no schema_version rows")
	}

	s = openStore(t, path)
	storetest.CheckEvents(t, s, want)
	if got := storetest.LastSeq(t, s); got != 42 {
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
		batch[i] = fg.NewEvent(u, t, fg.Op(1+rng.IntN(2)), storetest.V(int64(seq))+fg.Version(i))
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
		seq := storetest.LastSeq(t, s)
		t.Logf("round %d: killed after printing %d, LastSeq %d", round, printed, seq)
		if seq < printed {
			t.Fatalf("round %d: LastSeq = %d after the helper printed %d: a committed batch was lost", round, seq, printed)
		}
		m := storetest.Model{}
		for i := uint64(1); i <= seq; i++ {
			m.Apply(crashBatch(i)...)
		}
		storetest.CheckEvents(t, s, m.Events())
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
