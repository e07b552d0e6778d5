package mysql_test

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net"
	"net/url"
	"slices"
	"strings"
	"testing"

	gomysql "github.com/go-sql-driver/mysql"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/internal/testenv"
	"github.com/followgraph/followgraph/store/mysql"
	"github.com/followgraph/followgraph/store/storetest"
)

// rawDB returns a pool on the database of url, without the store, closed
// when tb ends.
func rawDB(tb testing.TB, url string) *sql.DB {
	tb.Helper()
	cfg, err := mysql.ParseURL(url)
	if err != nil {
		tb.Fatal(err)
	}
	conn, err := gomysql.NewConnector(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	db := sql.OpenDB(conn)
	tb.Cleanup(func() { db.Close() })
	return db
}

// newDatabase creates an empty database of tb's own on the test server,
// fgtest_<random>, drops it when tb ends, and returns its URL.
func newDatabase(tb testing.TB) string {
	tb.Helper()
	base := testenv.Server(tb, testenv.MySQL, testenv.MySQLHint)
	admin := rawDB(tb, base)
	name := fmt.Sprintf("fgtest_%016x", rand.Uint64())
	if _, err := admin.Exec("CREATE DATABASE " + name); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if _, err := admin.Exec("DROP DATABASE IF EXISTS " + name); err != nil {
			tb.Error(err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		tb.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

// openStore opens the store at url and closes it when tb ends.
func openStore(tb testing.TB, url string, opts ...mysql.Option) *mysql.Store {
	tb.Helper()
	s, err := mysql.Open(context.Background(), url, opts...)
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

// newStore opens a store on a new database of tb's own.
func newStore(tb testing.TB) *mysql.Store {
	tb.Helper()
	return openStore(tb, newDatabase(tb))
}

// The store is what the conformance suite and the persister use.
var (
	_ storetest.Store   = (*mysql.Store)(nil)
	_ storetest.Readier = (*mysql.Store)(nil)
)

// The store answers the lists of links itself: the suite's Links/List
// checks them (it only logs for a store without them).
var _ storetest.LinkLister = (*mysql.Store)(nil)

// TestStore runs the conformance suite of durable stores, each test on a
// new database of its own.
func TestStore(t *testing.T) {
	testenv.Server(t, testenv.MySQL, testenv.MySQLHint) // one skip rather than one per test
	storetest.RunAt(t, newDatabase, func(tb testing.TB, url string, refused func(fg.Refusal)) storetest.Store {
		return openStore(tb, url, mysql.WithRefused(refused))
	})
}

func TestParseURL(t *testing.T) {
	valid := []struct {
		url  string
		want string // the driver's DSN
	}{
		{"mysql://root@127.0.0.1:3306/test",
			"root@tcp(127.0.0.1:3306)/test?interpolateParams=true&rejectReadOnly=true&timeout=10s&maxAllowedPacket=4194304"},
		{"mysql://127.0.0.1/test", // no user, the default port
			"tcp(127.0.0.1:3306)/test?interpolateParams=true&rejectReadOnly=true&timeout=10s&maxAllowedPacket=4194304"},
		{"mysql://fg:p%40ss%2Fw%3Ard@db.example:3307/graph?timeout=2s&readTimeout=30s", // an escaped password
			"fg:p@ss/w:rd@tcp(db.example:3307)/graph?interpolateParams=true&readTimeout=30s&rejectReadOnly=true&timeout=2s&maxAllowedPacket=4194304"},
		{"mysql://u:@[::1]:3306/test?innodb_lock_wait_timeout=5", // an IPv6 host, a system variable
			"u@tcp([::1]:3306)/test?interpolateParams=true&rejectReadOnly=true&timeout=10s&maxAllowedPacket=4194304&innodb_lock_wait_timeout=5"},
		{"mysql://fg@h/test?password=p%40ss&timeout=2s", // the password as a parameter
			"fg:p@ss@tcp(h:3306)/test?interpolateParams=true&rejectReadOnly=true&timeout=2s&maxAllowedPacket=4194304"},
		{"mysql://u@h/test?charset=utf8mb4,utf8&sql_mode=%27TRADITIONAL%27", // values as the driver takes them
			"u@tcp(h:3306)/test?charset=utf8mb4,utf8&interpolateParams=true&rejectReadOnly=true&timeout=10s&maxAllowedPacket=4194304&sql_mode=%27TRADITIONAL%27"},
	}
	for _, tt := range valid {
		t.Run(tt.url, func(t *testing.T) {
			cfg, err := mysql.ParseURL(tt.url)
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.FormatDSN(); got != tt.want {
				t.Errorf("DSN\n got %s\nwant %s", got, tt.want)
			}
			if !cfg.InterpolateParams || cfg.MultiStatements || cfg.ClientFoundRows || cfg.ParseTime || !cfg.RejectReadOnly {
				t.Errorf("the store's settings are not set: %+v", cfg)
			}
		})
	}

	invalid := []struct {
		name, url, why string
	}{
		{"Empty", "", "scheme"},
		{"Scheme", "postgres://root@127.0.0.1/test", `scheme is "postgres"`},
		{"Opaque", "mysql:root@127.0.0.1/test", "no //"},
		{"NoHost", "mysql:///test", "no host"},
		{"NoDatabase", "mysql://root:secret@127.0.0.1:3306", "no database"},
		{"EmptyDatabase", "mysql://root:secret@127.0.0.1:3306/", "no database"},
		{"DatabasePath", "mysql://root:secret@127.0.0.1/a/b", "not a database name"},
		{"Port", "mysql://root:secret@127.0.0.1:99999/test", "port 99999"},
		{"PortNotNumber", "mysql://root:secret@127.0.0.1:db/test", "invalid port"},
		{"Fragment", "mysql://root:se#cret@127.0.0.1/test", "%23"},
		{"BadEscape", "mysql://root:sec%zzret@127.0.0.1/test", "invalid URL escape"},
		{"Owned", "mysql://root:secret@127.0.0.1/test?multiStatements=true", "multiStatements is set by the store"},
		{"OwnedFoundRows", "mysql://root:secret@127.0.0.1/test?clientFoundRows=true", "clientFoundRows"},
		{"Repeated", "mysql://root:secret@127.0.0.1/test?timeout=1s&timeout=2s", "given twice"},
		{"BadQueryEscape", "mysql://root:secret@127.0.0.1/test?a%zz=1", "invalid URL escape"},
		{"BadValue", "mysql://root:secret@127.0.0.1/test?timeout=soon", "timeout"},
		{"NoName", "mysql://root:secret@127.0.0.1/test?=1", "no name"},
		{"PasswordTwice", "mysql://root:secret@127.0.0.1/test?password=secret", "given twice"},
		{"PasswordParamTwice", "mysql://root@127.0.0.1/test?password=secret&password=secret", "give it once"},
		{"UnsafeCollation", "mysql://root:secret@127.0.0.1/test?collation=gbk_chinese_ci", "collation"},
	}
	for _, tt := range invalid {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := mysql.ParseURL(tt.url)
			if err == nil {
				t.Fatalf("ParseURL(%q) = %s, want an error", tt.url, cfg.FormatDSN())
			}
			if fg.ErrorCode(err) != fg.EInvalidArgument {
				t.Errorf("error %v has code %q, want %q", err, fg.ErrorCode(err), fg.EInvalidArgument)
			}
			if !strings.Contains(err.Error(), tt.why) {
				t.Errorf("error %q does not say %q", err, tt.why)
			}
			if strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "cret") {
				t.Errorf("error %q shows the password", err)
			}
			// Open says the same, without connecting.
			if _, err := mysql.Open(context.Background(), tt.url); fg.ErrorCode(err) != fg.EInvalidArgument {
				t.Errorf("Open = %v, want %s", err, fg.EInvalidArgument)
			}
		})
	}
}

func TestSplitStatements(t *testing.T) {
	got, err := mysql.SplitStatements("-- a comment; with a semicolon;\nCREATE TABLE a (\n\tx INT -- inline\n);\n\n  -- indented comment\nINSERT INTO a VALUES (1);")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"CREATE TABLE a (\n\tx INT -- inline\n)", "INSERT INTO a VALUES (1)"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
	if _, err := mysql.SplitStatements("CREATE TABLE a (x INT);\nINSERT INTO a VALUES (1)\n"); err == nil {
		t.Error("a statement without its semicolon was accepted")
	}
}

func TestStatementRows(t *testing.T) {
	for _, tt := range []struct {
		packet int64
		want   int
	}{
		{64 << 20, mysql.MaxRows}, // MySQL 8's default
		{16 << 20, mysql.MaxRows}, // MariaDB's
		{64 << 10, 430},           // small packets hold fewer rows
		{1024, 1},                 // the server's minimum: one row at a time
	} {
		if got := mysql.StatementRows(tt.packet); got != tt.want {
			t.Errorf("StatementRows(%d) = %d, want %d", tt.packet, got, tt.want)
		}
	}
}

// TestOpen_Unavailable: a port where no server listens, or a server that
// goes away under an open store, gives EUnavailable.
func TestOpen_Unavailable(t *testing.T) {
	ctx := context.Background()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	_, err = mysql.Open(ctx, "mysql://root@"+closed+"/test")
	if fg.ErrorCode(err) != fg.EUnavailable {
		t.Fatalf("Open on a closed port = %v, want %s", err, fg.EUnavailable)
	}
	var ne net.Error
	if !errors.As(err, &ne) {
		t.Errorf("the dial error is not in the chain of %v", err)
	}

	t.Run("ServerGone", func(t *testing.T) {
		u, err := url.Parse(newDatabase(t))
		if err != nil {
			t.Fatal(err)
		}
		p := testenv.NewProxy(t, u.Host)
		u.Host = p.Addr()
		s := openStore(t, u.String())
		storetest.Apply(t, s, 1, storetest.Follow(1, 2, storetest.V(1)))
		p.Stop()
		if err := s.Ready(ctx); fg.ErrorCode(err) != fg.EUnavailable {
			t.Errorf("Ready = %v, want %s", err, fg.EUnavailable)
		}
		if _, err := s.Apply(ctx, []fg.Event{storetest.Follow(1, 3, storetest.V(2))}, 2); fg.ErrorCode(err) != fg.EUnavailable {
			t.Errorf("Apply = %v, want %s", err, fg.EUnavailable)
		}
		if _, err := s.LastSeq(ctx); fg.ErrorCode(err) != fg.EUnavailable {
			t.Errorf("LastSeq = %v, want %s", err, fg.EUnavailable)
		}
		// The first thing Events yields must be the error: an iteration
		// that yields nothing fails too.
		var eventsErr error
		for _, eventsErr = range s.Events(ctx) {
			break
		}
		if fg.ErrorCode(eventsErr) != fg.EUnavailable {
			t.Errorf("Events = %v, want %s", eventsErr, fg.EUnavailable)
		}
		if _, err := s.Following(ctx, 1, nil, 10); fg.ErrorCode(err) != fg.EUnavailable {
			t.Errorf("Following = %v, want %s", err, fg.EUnavailable)
		}
	})
}

// migrationRows returns the rows of schema_migrations.
func migrationRows(tb testing.TB, db *sql.DB) []string {
	tb.Helper()
	rows, err := db.Query(`SELECT version, name, applied_ms FROM schema_migrations ORDER BY version`)
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

// TestStore_Migrations: reopening migrates nothing and keeps the data; a
// migration interrupted before its schema_migrations row runs again
// harmlessly; processes opening a new database at once take turns; a
// database of a newer schema is refused.
func TestStore_Migrations(t *testing.T) {
	ctx := context.Background()
	url := newDatabase(t)
	db := rawDB(t, url)

	s, err := mysql.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	storetest.Apply(t, s, 42, storetest.Follow(1, 2, storetest.V(1)), storetest.Unfollow(2, 1, storetest.V(2)))
	want := storetest.StoredEvents(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	versions := migrationRows(t, db)
	if len(versions) == 0 {
		t.Fatal("no schema_migrations rows")
	}

	reopen := func(t *testing.T) {
		t.Helper()
		s, err := mysql.Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		storetest.CheckEvents(t, s, want)
		if seq, err := s.LastSeq(ctx); err != nil || seq != 42 {
			t.Errorf("LastSeq after reopen = %d, %v; want 42", seq, err)
		}
	}
	reopen(t)
	if got := migrationRows(t, db); !slices.Equal(got, versions) {
		t.Errorf("schema_migrations after reopen:\n got %v\nwant %v (migrations ran again)", got, versions)
	}

	t.Run("Interrupted", func(t *testing.T) {
		// As if the process died after the statements of the last
		// migration and before its row.
		if _, err := db.Exec(`DELETE FROM schema_migrations WHERE version = ?`, len(versions)); err != nil {
			t.Fatal(err)
		}
		reopen(t)
		if got := migrationRows(t, db); len(got) != len(versions) {
			t.Errorf("schema_migrations: %v, want %d rows", got, len(versions))
		}
	})

	t.Run("Concurrent", func(t *testing.T) {
		url := newDatabase(t)
		const n = 4
		errs := make(chan error, n)
		for range n {
			go func() {
				s, err := mysql.Open(ctx, url)
				if err == nil {
					err = s.Close()
				}
				errs <- err
			}()
		}
		for range n {
			if err := <-errs; err != nil {
				t.Error(err)
			}
		}
		if got := migrationRows(t, rawDB(t, url)); len(got) != len(versions) {
			t.Errorf("schema_migrations: %v, want %d rows", got, len(versions))
		}
	})

	t.Run("NewerSchema", func(t *testing.T) {
		url := newDatabase(t)
		openStore(t, url)
		if _, err := rawDB(t, url).Exec(`INSERT INTO schema_migrations (version, name, applied_ms) VALUES (999, '0999_future.sql', 0)`); err != nil {
			t.Fatal(err)
		}
		s, err := mysql.Open(ctx, url)
		if err == nil {
			s.Close()
			t.Fatal("Open of a database with a newer schema succeeded")
		}
		if !strings.Contains(err.Error(), "newer") {
			t.Errorf("error %q does not say the schema is newer", err)
		}
	})
}

// TestStore_ApplyCount: Apply counts the edges it changes — created or
// overwritten by a higher version — where MySQL's affected rows would
// count an update twice and so could not tell one update from two
// inserts.
func TestStore_ApplyCount(t *testing.T) {
	s := newStore(t)
	if n := storetest.Apply(t, s, 1, storetest.Follow(1, 2, storetest.V(1)), storetest.Follow(1, 3, storetest.V(1)), storetest.Follow(1, 4, storetest.V(1))); n != 3 {
		t.Errorf("3 new edges: changed %d", n)
	}
	if n := storetest.Apply(t, s, 2, storetest.Unfollow(1, 2, storetest.V(2))); n != 1 {
		t.Errorf("1 update: changed %d, want 1 (affected rows would say 2)", n)
	}
	if n := storetest.Apply(t, s, 3, storetest.Follow(1, 5, storetest.V(3)), storetest.Follow(1, 6, storetest.V(3))); n != 2 {
		t.Errorf("2 inserts: changed %d, want 2", n)
	}
	batch := []fg.Event{
		storetest.Follow(1, 2, storetest.V(4)), storetest.Follow(1, 2, storetest.V(3)), // an update, with an older duplicate in the batch
		storetest.Follow(1, 3, storetest.V(1)),   // a redelivery: the same version
		storetest.Unfollow(1, 4, storetest.V(0)), // older than the stored one
		storetest.Follow(2, 1, storetest.V(5)),   // new
		storetest.Unfollow(3, 1, storetest.V(5)), // new, a tombstone
	}
	if n := storetest.Apply(t, s, 4, batch...); n != 3 {
		t.Errorf("1 update, 2 inserts, 3 unchanged: changed %d, want 3", n)
	}

	// Batches of several statements, with every kind of row in each.
	m := storetest.Model{}
	m.Apply(storetest.StoredEvents(t, s)...)
	rng := rand.New(rand.NewPCG(3, 4))
	for seq := uint64(5); seq < 8; seq++ {
		batch := make([]fg.Event, 3*mysql.MaxRows)
		for i := range batch {
			u, t := fg.UserID(1+rng.IntN(60)), fg.UserID(61+rng.IntN(60))
			batch[i] = fg.NewEvent(u, t, fg.Op(1+rng.IntN(2)), storetest.V(int64(rng.IntN(1<<12))))
		}
		want := changes(m, batch)
		m.Apply(batch...)
		if n := storetest.Apply(t, s, seq, batch...); n != want {
			t.Errorf("batch %d: changed %d, want %d", seq, n, want)
		}
	}
	storetest.CheckEvents(t, s, m.Events())
}

// changes returns how many edges applying batch to the state m changes.
func changes(m storetest.Model, batch []fg.Event) int {
	next := maps.Clone(m)
	next.Apply(batch...)
	n := 0
	for k, e := range next {
		if old, ok := m[k]; !ok || old.Version != e.Version {
			n++
		}
	}
	return n
}

// TestStore_EventsBatches: Events reads in keyset batches; a state of
// several batches, with a follower's edges across a batch boundary, reads
// back whole and in order, and all its batches are of one snapshot.
func TestStore_EventsBatches(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	m := storetest.Model{}
	var in []fg.Event
	for i := range 25_000 {
		u := fg.UserID(1 + i/3000) // 3000 edges per follower: batches end inside them
		e := storetest.Follow(u, fg.UserID(10_000+i%3000), storetest.V(int64(i)))
		if i%7 == 0 {
			e = storetest.Unfollow(e.User, e.Target, e.Version)
		}
		in = append(in, e)
	}
	m.Apply(in...)
	if n, err := s.Import(ctx, slices.Values(in)); err != nil || n != len(m) {
		t.Fatalf("Import = %d, %v; want %d", n, err, len(m))
	}
	want := m.Events()
	storetest.CheckEvents(t, s, want)

	// Changes to edges of later batches, made while the first is read,
	// are not seen.
	var got []fg.Event
	for e, err := range s.Events(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		if got = append(got, e); len(got) == 10 {
			last := want[len(want)-1]
			storetest.Apply(t, s, 1, storetest.Unfollow(last.User, last.Target, last.Version+1), storetest.Follow(last.User, last.Target+1, storetest.V(1<<30)))
		}
	}
	if !slices.EqualFunc(got, want, storetest.SameEvent) {
		t.Errorf("Events during a write: %d events, want the %d of the state before it", len(got), len(want))
	}
}

// TestStore_Lists: Following and Followers page newest first, ties by
// id, larger first, through tombstones, and Counts counts the live edges.
func TestStore_Lists(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	var batch []fg.Event
	for i := range 40 {
		// User 1 follows 100..139 and each of them follows user 2, at
		// times with ties (i/3); one in five is unfollowed afterwards.
		u := fg.UserID(100 + i)
		batch = append(batch, storetest.Follow(1, u, storetest.V(int64(i/3))), storetest.Follow(u, 2, storetest.V(int64(i/3))))
		if i%5 == 0 {
			batch = append(batch, storetest.Unfollow(1, u, storetest.V(1000)), storetest.Unfollow(u, 2, storetest.V(1000)))
		}
	}
	storetest.Apply(t, s, 1, batch...)

	// want: the live edges newest first, ties by id, larger first.
	var want []fg.Entry
	for i := range 40 {
		if i%5 != 0 {
			want = append(want, fg.Entry{ID: fg.UserID(100 + i), Since: fg.Millis(storetest.T0 + int64(i/3))})
		}
	}
	slices.SortFunc(want, func(a, b fg.Entry) int {
		return cmp.Or(b.Since.Compare(a.Since), cmp.Compare(b.ID, a.ID))
	})

	lists := []struct {
		name string
		list func(ctx context.Context, user fg.UserID, after *fg.Key, limit int) ([]fg.Entry, error)
		user fg.UserID
	}{
		{"Following", s.Following, 1},
		{"Followers", s.Followers, 2},
	}
	for _, l := range lists {
		t.Run(l.name, func(t *testing.T) {
			for _, limit := range []int{1, 3, 7, 32, 1000} {
				var got []fg.Entry
				var after *fg.Key
				for pages := 0; ; pages++ {
					page, err := l.list(ctx, l.user, after, limit)
					if err != nil {
						t.Fatal(err)
					}
					if len(page) > limit || pages > len(want) {
						t.Fatalf("limit %d: a page of %d entries, page %d", limit, len(page), pages)
					}
					got = append(got, page...)
					if len(page) < limit {
						break
					}
					k := page[len(page)-1].Key()
					after = &k
				}
				if !slices.EqualFunc(got, want, sameEntry) {
					t.Errorf("limit %d:\n got %v\nwant %v", limit, got, want)
				}
			}
			if page, err := l.list(ctx, 999, nil, 10); err != nil || len(page) != 0 {
				t.Errorf("a user with no edges: %v, %v", page, err)
			}
			for _, limit := range []int{0, -1, fg.MaxLimit + 1} {
				if _, err := l.list(ctx, l.user, nil, limit); fg.ErrorCode(err) != fg.EInvalidArgument {
					t.Errorf("limit %d: %v, want %s", limit, err, fg.EInvalidArgument)
				}
			}
			if _, err := l.list(ctx, 0, nil, 10); fg.ErrorCode(err) != fg.EInvalidID {
				t.Errorf("user 0: %v, want %s", err, fg.EInvalidID)
			}
		})
	}

	t.Run("PagingWhileChanging", func(t *testing.T) {
		// A follow newer than the cursor is not on the later pages, an
		// unfollow removes only its own entry: no entry twice, none
		// present all along skipped.
		first, err := s.Following(ctx, 1, nil, 5)
		if err != nil {
			t.Fatal(err)
		}
		storetest.Apply(t, s, 2, storetest.Follow(1, 500, storetest.V(2000)), storetest.Unfollow(1, want[7].ID, storetest.V(2000)))
		k := first[len(first)-1].Key()
		rest, err := s.Following(ctx, 1, &k, fg.MaxLimit)
		if err != nil {
			t.Fatal(err)
		}
		wantRest := slices.Delete(slices.Clone(want[5:]), 2, 3)
		if !slices.EqualFunc(rest, wantRest, sameEntry) {
			t.Errorf("after a change:\n got %v\nwant %v", rest, wantRest)
		}
	})

	t.Run("Counts", func(t *testing.T) {
		for _, tt := range []struct {
			user                fg.UserID
			following, follower int64
		}{
			{1, int64(len(want)), 0}, // following: the change of PagingWhileChanging cancels out
			{2, 0, int64(len(want))},
			{101, 1, 1},
			{100, 0, 0}, // tombstones only
			{999, 0, 0},
		} {
			following, followers, err := s.Counts(ctx, tt.user)
			if err != nil || following != tt.following || followers != tt.follower {
				t.Errorf("Counts(%d) = %d, %d, %v; want %d, %d", tt.user, following, followers, err, tt.following, tt.follower)
			}
		}
		if _, _, err := s.Counts(ctx, -1); fg.ErrorCode(err) != fg.EInvalidID {
			t.Errorf("Counts(-1) = %v, want %s", err, fg.EInvalidID)
		}
	})
}

func sameEntry(a, b fg.Entry) bool { return a.ID == b.ID && a.Since.Equal(b.Since) }

// TestStore_ListPlans: each list query is a range of its covering index,
// read in index order: no row lookups ("Using index"), no sort.
func TestStore_ListPlans(t *testing.T) {
	url := newDatabase(t)
	s := openStore(t, url)
	// Enough edges, of several users, that the optimizer has a choice.
	var batch []fg.Event
	for i := range 3000 {
		batch = append(batch, storetest.Follow(fg.UserID(1+i%30), fg.UserID(100+i/30), storetest.V(int64(i))))
	}
	storetest.Apply(t, s, 1, batch...)
	db := rawDB(t, url)
	if _, err := db.Exec(`ANALYZE TABLE edges`); err != nil {
		t.Fatal(err)
	}
	wantIndex := map[string]string{
		"Following": "edges_following", "FollowingAfter": "edges_following",
		"Followers": "edges_followers", "FollowersAfter": "edges_followers",
	}
	for name, query := range mysql.ListQueries {
		t.Run(name, func(t *testing.T) {
			args := []any{int64(5), int64(20)}
			if strings.HasSuffix(name, "After") {
				args = []any{int64(5), storetest.T0 + 1500, storetest.T0 + 1500, int64(120), int64(20)}
			}
			rows, err := db.Query("EXPLAIN "+query, args...)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			cols, _ := rows.Columns()
			n := 0
			for rows.Next() {
				n++
				vals := make([]sql.NullString, len(cols))
				ptrs := make([]any, len(cols))
				for i := range vals {
					ptrs[i] = &vals[i]
				}
				if err := rows.Scan(ptrs...); err != nil {
					t.Fatal(err)
				}
				plan := map[string]string{}
				for i, c := range cols {
					plan[c] = vals[i].String
				}
				if plan["key"] != wantIndex[name] || !strings.Contains(plan["Extra"], "Using index") ||
					strings.Contains(plan["Extra"], "filesort") {
					t.Errorf("plan %v: want a range of %s, Using index, no filesort", plan, wantIndex[name])
				}
			}
			if err := rows.Err(); err != nil || n != 1 {
				t.Errorf("EXPLAIN: %d rows, %v", n, err)
			}
		})
	}
}
