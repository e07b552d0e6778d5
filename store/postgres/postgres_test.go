package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/internal/testenv"
	"github.com/followgraph/followgraph/store/postgres"
	"github.com/followgraph/followgraph/store/storetest"
)

// newDatabase creates a database of its own for tb on the test server,
// drops it when tb ends, and returns its URL. Tests never see each
// other's data, nor that of earlier runs.
func newDatabase(tb testing.TB) string {
	tb.Helper()
	server := testenv.Server(tb, testenv.Postgres, testenv.PostgresHint)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, server)
	if err != nil {
		tb.Fatal(err)
	}
	defer conn.Close(ctx)
	b := make([]byte, 8)
	rand.Read(b)
	name := "fgtest_" + hex.EncodeToString(b)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		conn, err := pgx.Connect(ctx, server)
		if err != nil {
			tb.Error(err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			tb.Error(err)
		}
	})
	u, err := url.Parse(server)
	if err != nil {
		tb.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

// openStore opens the store at url and closes it when tb ends.
func openStore(tb testing.TB, url string, opts ...postgres.Option) *postgres.Store {
	tb.Helper()
	s, err := postgres.Open(context.Background(), url, opts...)
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

// newStore opens a store on a new database of its own.
func newStore(tb testing.TB) *postgres.Store {
	tb.Helper()
	return openStore(tb, newDatabase(tb))
}

// The store answers the lists of links itself: the suite's Links/List
// checks them (it only logs for a store without them).
var _ storetest.LinkLister = (*postgres.Store)(nil)

// TestStore runs the conformance suite of durable stores, each test on a
// new database of its own.
func TestStore(t *testing.T) {
	testenv.Server(t, testenv.Postgres, testenv.PostgresHint) // one skip, not one per test
	storetest.RunAt(t, newDatabase, func(tb testing.TB, url string, refused func(fg.Refusal)) storetest.Store {
		return openStore(tb, url, postgres.WithRefused(refused))
	})
}

// query runs sql on the database at url, outside the store, and returns
// the values of its rows.
func query(tb testing.TB, url, sql string, args ...any) [][]any {
	tb.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		tb.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, sql, args...)
	if err != nil {
		tb.Fatal(err)
	}
	var out [][]any
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, vals)
	}
	if err := rows.Err(); err != nil {
		tb.Fatal(err)
	}
	return out
}

func TestOpen_Migrations(t *testing.T) {
	ctx := context.Background()
	url := newDatabase(t)
	s, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	storetest.Apply(t, s, 42, storetest.Follow(1, 2, storetest.V(1)), storetest.Unfollow(2, 1, storetest.V(2)))
	want := storetest.StoredEvents(t, s)
	s.Close()
	const versions = `SELECT version, name, applied_at FROM schema_migrations ORDER BY version`
	applied := query(t, url, versions)
	if len(applied) == 0 {
		t.Fatal("no schema_migrations rows")
	}

	s = openStore(t, url)
	storetest.CheckEvents(t, s, want)
	if seq, err := s.LastSeq(ctx); err != nil || seq != 42 {
		t.Errorf("LastSeq after reopen = %d, %v; want 42", seq, err)
	}
	if got := query(t, url, versions); fmt.Sprint(got) != fmt.Sprint(applied) {
		t.Errorf("schema_migrations after reopen:\n got %v\nwant %v (migrations ran again)", got, applied)
	}

	t.Run("NewerSchema", func(t *testing.T) {
		url := newDatabase(t)
		openStore(t, url)
		query(t, url, `INSERT INTO schema_migrations (version, name) VALUES (999, '0999_future.sql')`)
		if s, err := postgres.Open(ctx, url); err == nil {
			s.Close()
			t.Fatal("Open of a database with a newer schema succeeded")
		}
	})

	t.Run("NotAURL", func(t *testing.T) {
		for _, u := range []string{"", "host=127.0.0.1 user=postgres", "mysql://root@127.0.0.1/test"} {
			if s, err := postgres.Open(ctx, u); err == nil {
				s.Close()
				t.Errorf("Open(%q) succeeded", u)
			}
		}
	})
}

// TestOpen_Concurrent opens a new database from several goroutines at
// once, each with a pool of its own as a process would: each migration is
// applied once, and every store works.
func TestOpen_Concurrent(t *testing.T) {
	url := newDatabase(t)
	const n = 4
	stores := make([]*postgres.Store, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { stores[i], errs[i] = postgres.Open(context.Background(), url) })
	}
	wg.Wait()
	for i, s := range stores {
		if errs[i] != nil {
			t.Fatalf("Open %d: %v", i, errs[i])
		}
		t.Cleanup(func() { s.Close() })
	}
	rows := query(t, url, `SELECT version, count(*) FROM schema_migrations GROUP BY version HAVING count(*) > 1`)
	if len(rows) != 0 {
		t.Errorf("migrations applied more than once: %v", rows)
	}
	for i, s := range stores {
		storetest.Apply(t, s, uint64(i+1), storetest.Follow(fg.UserID(i+1), 100, storetest.V(int64(i))))
	}
	if seq, err := stores[0].LastSeq(context.Background()); err != nil || seq != n {
		t.Errorf("LastSeq = %d, %v; want %d", seq, err, n)
	}
}

func TestStore_Lists(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	// User 1 follows 2..6; 7 and 8 follow 1. 3 and 4 at the same time (the
	// larger id first); 5 was unfollowed (a tombstone), 6 unfollowed and
	// followed again (at the later time); 9 is a tombstone only.
	storetest.Apply(t, s, 1,
		storetest.Follow(1, 2, storetest.V(10)), storetest.Follow(1, 3, storetest.V(20)), storetest.Follow(1, 4, storetest.V(20)+1),
		storetest.Follow(1, 5, storetest.V(30)), storetest.Unfollow(1, 5, storetest.V(31)),
		storetest.Follow(1, 6, storetest.V(5)), storetest.Unfollow(1, 6, storetest.V(6)), storetest.Follow(1, 6, storetest.V(40)),
		storetest.Unfollow(1, 9, storetest.V(50)),
		storetest.Follow(7, 1, storetest.V(1)), storetest.Follow(8, 1, storetest.V(2)),
	)
	entry := func(id fg.UserID, n int64) fg.Entry { return fg.Entry{ID: id, Since: fg.Millis(storetest.T0 + n)} }
	wantFollowing := []fg.Entry{entry(6, 40), entry(4, 20), entry(3, 20), entry(2, 10)}
	wantFollowers := []fg.Entry{entry(8, 2), entry(7, 1)}

	type list func(ctx context.Context, user fg.UserID, after *fg.Key, limit int) ([]fg.Entry, error)
	for _, tt := range []struct {
		name string
		list list
		user fg.UserID
		want []fg.Entry
	}{
		{"Following", s.Following, 1, wantFollowing},
		{"Followers", s.Followers, 1, wantFollowers},
		{"FollowingOfNobody", s.Following, 100, nil},
		{"FollowersOfNobody", s.Followers, 2, []fg.Entry{entry(1, 10)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.list(ctx, tt.user, nil, fg.MaxLimit)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.EqualFunc(got, tt.want, sameEntry) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			// Pages of every size end to end give the same list.
			for size := 1; size <= len(tt.want); size++ {
				var all []fg.Entry
				var after *fg.Key
				for {
					page, err := tt.list(ctx, tt.user, after, size)
					if err != nil {
						t.Fatal(err)
					}
					all = append(all, page...)
					if len(page) < size {
						break
					}
					k := page[len(page)-1].Key()
					after = &k
				}
				if !slices.EqualFunc(all, tt.want, sameEntry) {
					t.Errorf("pages of %d: got %v, want %v", size, all, tt.want)
				}
			}
		})
	}

	t.Run("CursorSurvivesChange", func(t *testing.T) {
		page, err := s.Following(ctx, 1, nil, 2) // 6, 4
		if err != nil {
			t.Fatal(err)
		}
		k := page[1].Key()
		// 3 (after the cursor) is unfollowed, 10 followed (before it).
		storetest.Apply(t, s, 2, storetest.Unfollow(1, 3, storetest.V(60)), storetest.Follow(1, 10, storetest.V(61)))
		rest, err := s.Following(ctx, 1, &k, 10)
		if err != nil {
			t.Fatal(err)
		}
		if want := []fg.Entry{entry(2, 10)}; !slices.EqualFunc(rest, want, sameEntry) {
			t.Errorf("after the change: got %v, want %v", rest, want)
		}
		storetest.Apply(t, s, 3, storetest.Follow(1, 3, storetest.V(20))) // an older follow does not bring 3 back
		if rest, _ := s.Following(ctx, 1, &k, 10); len(rest) != 1 {
			t.Errorf("an older follow resurrected a tombstone: %v", rest)
		}
	})

	t.Run("Counts", func(t *testing.T) {
		for _, tt := range []struct {
			user                 fg.UserID
			following, followers int64
		}{{1, 4, 2}, {2, 0, 1}, {9, 0, 0}, {100, 0, 0}} {
			following, followers, err := s.Counts(ctx, tt.user)
			if err != nil {
				t.Fatal(err)
			}
			if following != tt.following || followers != tt.followers {
				t.Errorf("Counts(%d) = %d, %d; want %d, %d", tt.user, following, followers, tt.following, tt.followers)
			}
		}
	})

	t.Run("Invalid", func(t *testing.T) {
		for _, tt := range []struct {
			name  string
			user  fg.UserID
			limit int
			code  string
		}{
			{"ZeroID", 0, 10, fg.EInvalidID},
			{"NegativeID", -3, 10, fg.EInvalidID},
			{"ZeroLimit", 1, 0, fg.EInvalidArgument},
			{"LimitTooLarge", 1, fg.MaxLimit + 1, fg.EInvalidArgument},
		} {
			if _, err := s.Following(ctx, tt.user, nil, tt.limit); fg.ErrorCode(err) != tt.code {
				t.Errorf("%s: Following: %v, want %s", tt.name, err, tt.code)
			}
			if _, err := s.Followers(ctx, tt.user, nil, tt.limit); fg.ErrorCode(err) != tt.code {
				t.Errorf("%s: Followers: %v, want %s", tt.name, err, tt.code)
			}
		}
		if _, _, err := s.Counts(ctx, 0); fg.ErrorCode(err) != fg.EInvalidID {
			t.Errorf("Counts(0): %v, want %s", err, fg.EInvalidID)
		}
	})
}

// TestStore_ImportConcurrent runs two Imports into an empty store and an
// Apply at once: the first Import rebuilds the list indexes, which must
// neither deadlock with the others nor lose their rows.
func TestStore_ImportConcurrent(t *testing.T) {
	ctx := context.Background()
	url := newDatabase(t)
	s := openStore(t, url)
	batch := func(u fg.UserID) []fg.Event {
		var out []fg.Event
		for i := range fg.UserID(2000) {
			out = append(out, storetest.Follow(u, 10+i, storetest.V(int64(u)*10_000+int64(i))))
		}
		return out
	}
	m := storetest.Model{}
	errs := make(chan error, 3)
	for _, u := range []fg.UserID{1, 2} {
		m.Apply(batch(u)...)
		go func() {
			_, err := s.Import(ctx, slices.Values(batch(u)))
			errs <- err
		}()
	}
	m.Apply(batch(3)...)
	go func() {
		_, err := s.Apply(ctx, batch(3), 7)
		errs <- err
	}()
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	storetest.CheckEvents(t, s, m.Events())
	indexes := query(t, url, `SELECT indexname FROM pg_indexes WHERE tablename = 'edges' ORDER BY 1`)
	if got := fmt.Sprint(indexes); got != "[[edges_followers] [edges_following] [edges_pkey] [edges_tombstones]]" {
		t.Errorf("indexes after Import: %s", got)
	}
	for _, u := range []fg.UserID{1, 2, 3} {
		if following, _, err := s.Counts(ctx, u); err != nil || following != 2000 {
			t.Errorf("Counts(%d) = %d, %v; want 2000 following", u, following, err)
		}
	}
}

// TestStore_ConcurrentApply runs Applies from several goroutines at once,
// on edges that overlap from batch to batch, with pools of one connection,
// two, and as many as there are writers: none deadlocks or fails (each
// writes its edges in key order and the sequence last), and the store ends
// with every batch's result and the highest sequence.
func TestStore_ConcurrentApply(t *testing.T) {
	const writers, batches, size = 4, 8, 600
	for _, conns := range []int{1, 2, writers} {
		t.Run(fmt.Sprintf("pool_max_conns=%d", conns), func(t *testing.T) {
			testConcurrentApply(t, fmt.Sprintf("%s?pool_max_conns=%d", newDatabase(t), conns), writers, batches, size)
		})
	}
}

func testConcurrentApply(t *testing.T, url string, writers, batches, size int) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := openStore(t, url)
	batch := func(w, b int) []fg.Event {
		rng := mrand.New(mrand.NewPCG(uint64(w), uint64(b)))
		out := make([]fg.Event, size)
		for i := range out {
			// 40 followers by 40 followees: each batch touches rows
			// the others do.
			out[i] = fg.NewEvent(fg.UserID(1+rng.IntN(40)), fg.UserID(41+rng.IntN(40)), fg.Op(1+rng.IntN(2)),
				storetest.V(int64(b*10_000+w*1000+i)))
		}
		return out
	}
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for b := range batches {
				if _, err := s.Apply(ctx, batch(w, b), uint64(b*writers+w+1)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	m := storetest.Model{}
	for w := range writers {
		for b := range batches {
			m.Apply(batch(w, b)...)
		}
	}
	storetest.CheckEvents(t, s, m.Events())
	if got := storetest.LastSeq(t, s); got != uint64(writers*batches) {
		t.Errorf("LastSeq = %d, want %d", got, writers*batches)
	}
}

// TestStore_ListPlans checks that the lists are read from their index
// alone: an index-only scan of the partial index, with no heap fetch once
// the table is vacuumed, whatever the length of the list.
func TestStore_ListPlans(t *testing.T) {
	ctx := context.Background()
	url := newDatabase(t)
	s := openStore(t, url)
	// 200 users each follow 100 others, among them user 1 (a celebrity):
	// 20,000 edges, a tenth of them tombstones.
	var events []fg.Event
	for u := fg.UserID(1); u <= 200; u++ {
		for i := range fg.UserID(100) {
			t := (u+i)%200 + 1
			if t == u {
				t = 1
			}
			if u == 1 && t == 1 {
				continue
			}
			op := fg.OpFollow
			if i%10 == 9 {
				op = fg.OpUnfollow
			}
			events = append(events, fg.NewEvent(u, t, op, storetest.V(int64(u)*1000+int64(i))))
		}
	}
	if _, err := s.Import(ctx, slices.Values(events)); err != nil {
		t.Fatal(err)
	}
	query(t, url, `VACUUM ANALYZE edges`)
	for _, tt := range []struct{ name, sql, index string }{
		{"Following", postgres.FollowingSQL, "edges_following"},
		{"Followers", postgres.FollowersSQL, "edges_followers"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, after := range []fg.Key{{Millis: 1<<63 - 1, ID: fg.MaxUserID}, {Millis: storetest.T0 + 150_000, ID: 7}} {
				rows := query(t, url, "EXPLAIN (ANALYZE, FORMAT JSON) "+tt.sql, int64(1), after.Millis, int64(after.ID), 20)
				scan := findScan(rows[0][0])
				if scan == nil {
					t.Fatalf("no scan in the plan %v", rows)
				}
				if scan["Node Type"] != "Index Only Scan" || scan["Index Name"] != tt.index ||
					scan["Scan Direction"] != "Backward" || scan["Heap Fetches"] != float64(0) || scan["Actual Rows"] == float64(0) {
					t.Errorf("after %v: the scan is not a backward index-only scan of %s without heap fetches:\n%v", after, tt.index, scan)
				}
			}
		})
	}
}

// findScan returns the first node of an EXPLAIN (FORMAT JSON) plan that
// reads the table.
func findScan(plan any) map[string]any {
	switch p := plan.(type) {
	case []any:
		for _, x := range p {
			if n := findScan(x); n != nil {
				return n
			}
		}
	case map[string]any:
		if p["Relation Name"] != nil {
			return p
		}
		for _, k := range []string{"Plan", "Plans"} {
			if n := findScan(p[k]); n != nil {
				return n
			}
		}
	}
	return nil
}

func sameEntry(a, b fg.Entry) bool { return a.ID == b.ID && a.Since.Equal(b.Since) }

// TestStore_Unavailable cuts the store off its server: every call returns
// EUnavailable, whether its pooled connection breaks mid-use or a new one
// is refused. Once the server is back, the store works again.
func TestStore_Unavailable(t *testing.T) {
	ctx := context.Background()
	u, err := url.Parse(newDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	p := testenv.NewProxy(t, u.Host)
	u.Host = p.Addr()
	s := openStore(t, u.String())
	storetest.Apply(t, s, 1, storetest.Follow(1, 2, storetest.V(1)))

	p.Stop()
	checks := []struct {
		name string
		call func() error
	}{
		{"Apply", func() error {
			_, err := s.Apply(ctx, []fg.Event{storetest.Follow(1, 3, storetest.V(2))}, 2)
			return err
		}},
		{"Import", func() error {
			_, err := s.Import(ctx, slices.Values([]fg.Event{storetest.Follow(1, 3, storetest.V(2))}))
			return err
		}},
		{"LastSeq", func() error { _, err := s.LastSeq(ctx); return err }},
		{"Ready", func() error { return s.Ready(ctx) }},
		{"Events", func() error {
			for _, err := range s.Events(ctx) {
				return err
			}
			return nil
		}},
		{"Following", func() error { _, err := s.Following(ctx, 1, nil, 10); return err }},
		{"Counts", func() error { _, _, err := s.Counts(ctx, 1); return err }},
	}
	for _, c := range checks {
		err := c.call()
		t.Logf("%s: %v", c.name, err)
		if fg.ErrorCode(err) != fg.EUnavailable {
			t.Errorf("%s with the server gone: %v, want %s", c.name, err, fg.EUnavailable)
		}
	}

	p.Start()
	if n := storetest.Apply(t, s, 3, storetest.Follow(1, 3, storetest.V(3))); n != 1 {
		t.Errorf("Apply after the server came back changed %d rows, want 1", n)
	}

	t.Run("Open", func(t *testing.T) {
		// Nothing listens on the address of a listener just closed.
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		s, err := postgres.Open(ctx, "postgres://postgres@"+addr+"/postgres?connect_timeout=5")
		if err == nil {
			s.Close()
			t.Fatal("Open of a closed port succeeded")
		}
		if fg.ErrorCode(err) != fg.EUnavailable {
			t.Errorf("Open of a closed port: %v, want %s", err, fg.EUnavailable)
		}
	})
}

// TestStore_CanceledApply: a canceled Apply changes nothing and says so.
func TestStore_CanceledApply(t *testing.T) {
	s := newStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Apply(ctx, []fg.Event{storetest.Follow(1, 2, storetest.V(1))}, 1); !errors.Is(err, context.Canceled) {
		t.Errorf("Apply with a canceled context: %v, want context.Canceled", err)
	}
	storetest.CheckEvents(t, s, nil)
}
