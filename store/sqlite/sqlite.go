// Package sqlite is the durable record of the follow graph in one SQLite
// file (modernc.org/sqlite, pure Go): the state of every edge of every
// kind with its version, and the event-log sequence applied last, changed
// together in one transaction per batch of events.
//
// The persister applies batches of events from the event log with Apply,
// each with the log sequence it reaches (LastSeq), which the start-up check
// compares with the log; at start-up an engine is loaded from Events and
// the log, which holds exactly what the store lacks, is replayed over it.
// Import bulk-loads an empty store. The record has no list
// indexes: the engine answers every read (docs/design/stores.md says why).
//
// The schema (migrations/*.sql) and the statements are plain enough to be
// mirrored by the PostgreSQL and MySQL stores: an edges table of the
// follows keyed by (follower, followee), a links table of the other kinds
// (blocks, mutes, follow requests, the private setting, the account
// state with its State) keyed by (user, kind, target), a meta table, and writes that are upserts conditional on
// each row's version.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	modernc "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/store/internal/migrations"
	"github.com/followgraph/followgraph/store/internal/row"
)

// Store is the durable record in one SQLite file. It is safe for concurrent
// use: writes (Apply, Import) are serialized on one connection, reads run
// on a pool of their own and never wait for writes (WAL mode).
type Store struct {
	w *sql.DB // the one writing connection
	r *sql.DB // read-only connections

	// upserts[k] is the edge upsert of 2^k rows, prepared on w at Open;
	// see upsert.
	upserts []*sql.Stmt

	refused row.Refused // see WithRefused
}

// Option configures a Store.
type Option func(*Store)

// WithRefused sets what Apply calls, once its batch is committed, with
// each change it refused for being older than the tombstone horizon (see
// Apply); by default, and with nil, nothing.
func WithRefused(f func(fg.Refusal)) Option {
	return func(s *Store) { s.refused.Set(f) }
}

// busyTimeout is how long a statement waits for a lock held by another
// connection or process (a second process on the same file, a checkpoint)
// before it fails with EUnavailable.
const busyTimeout = 10 * time.Second

// readConns bounds the read pool. Each SQLite connection has its own page
// cache; a few are enough to keep the cores busy.
const readConns = 4

// Open opens the store in the SQLite file at path, creating the file if it
// does not exist, and brings its schema up to date (see migrate). path must
// name a file: the store opens several connections to it.
//
// The file is in WAL mode, so reads never block the writer nor the writer
// reads, with synchronous=FULL: each committed Apply is fsynced before it
// returns. NORMAL would sync the WAL only at checkpoints, and a power loss
// could then roll back the last few committed batches. That is recoverable
// only while the event log still holds those events, and the persister
// acknowledges a batch to the log once Apply returns, after which the log
// may drop it (a work-queue or size-limited stream does), so "Apply
// returned" has to mean "on disk". The cost is one fsync per batch: with
// batches of 1000 events, FULL and NORMAL measured the same throughput
// (the time goes to B-tree work and WAL writes, which both modes do).
func Open(ctx context.Context, path string, opts ...Option) (*Store, error) {
	if path == "" || path == ":memory:" || strings.HasPrefix(path, "file:") {
		return nil, fmt.Errorf("sqlite: open: %q is not a file path", path)
	}
	w, err := openDB(path, 1,
		"_txlock=immediate", // take the write lock at BEGIN: no upgrade deadlocks
		"_pragma=journal_mode(WAL)",
		"_pragma=synchronous(FULL)",
		"_pragma=temp_store(MEMORY)",           // statement journals in memory: a third of the upsert time as temp files
		"_pragma=cache_size(-65536)",           // 64 MiB of page cache for the writer
		"_pragma=journal_size_limit(67108864)", // truncate the WAL back to 64 MiB after a big transaction
		"_pragma=wal_autocheckpoint(4096)",     // fewer, larger checkpoints: at 16 MiB of WAL rather than 4 MiB
	)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open: %w", err)
	}
	s := &Store{w: w}
	for _, o := range opts {
		o(s)
	}
	if _, err := s.migrate(ctx); err != nil {
		w.Close()
		return nil, fmt.Errorf("sqlite: open: %w", translate(err))
	}
	for rows := 1; rows <= maxRows; rows *= 2 {
		st, err := w.PrepareContext(ctx, upsertSQL(edgesTable, rows))
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("sqlite: open: %w", translate(err))
		}
		s.upserts = append(s.upserts, st)
	}
	// The readers open after the writer has put the file in WAL mode.
	s.r, err = openDB(path, readConns, "_pragma=query_only(1)")
	if err == nil {
		err = s.r.PingContext(ctx)
	}
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("sqlite: open: %w", translate(err))
	}
	return s, nil
}

// openDB returns a pool of at most conns connections to the file at path,
// each set up by the DSN parameters params.
func openDB(path string, conns int, params ...string) (*sql.DB, error) {
	// A "file:" URI, so that any byte of path is taken literally.
	escape := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23")
	params = append(params, "_pragma=busy_timeout("+strconv.FormatInt(busyTimeout.Milliseconds(), 10)+")")
	db, err := sql.Open("sqlite", "file:"+escape.Replace(path)+"?"+strings.Join(params, "&"))
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	db.SetConnMaxIdleTime(0)
	db.SetConnMaxLifetime(0)
	return db, nil
}

// Close closes the store. The last connection to close checkpoints the WAL
// into the database file.
func (s *Store) Close() error {
	var errs []error
	for _, st := range s.upserts {
		errs = append(errs, st.Close())
	}
	if s.r != nil {
		errs = append(errs, s.r.Close())
	}
	errs = append(errs, s.w.Close())
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("sqlite: close: %w", err)
	}
	return nil
}

// Ready returns nil when the store answers reads, and an EUnavailable
// error otherwise. It does not wait for a write in progress.
func (s *Store) Ready(ctx context.Context) error {
	var n int64
	if err := s.r.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = 'last_seq'`).Scan(&n); err != nil {
		return fmt.Errorf("sqlite: ready: %w", unavailable(err))
	}
	return nil
}

//go:embed migrations/*.sql
var migrationFiles embed.FS

// loadMigrations returns the embedded migrations (migrations/NNNN_name.sql,
// applied as schema version NNNN) in version order. Their versions must be
// 1, 2, 3, … with no gap or repeat.
func loadMigrations() ([]migrations.Migration, error) {
	return migrations.Load(migrationFiles, "migrations")
}

// migrate applies the embedded migrations the database has not had yet,
// each in its own transaction together with its row in schema_version, and
// returns how many it applied. Reopening an up-to-date database applies
// none. A database migrated by a newer build (a version this build does
// not know) is an error: this build cannot know what changed.
func (s *Store) migrate(ctx context.Context) (applied int, err error) {
	ms, err := loadMigrations()
	if err != nil {
		return 0, err
	}
	if _, err := s.w.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (
		version    INTEGER PRIMARY KEY,
		name       TEXT NOT NULL,
		applied_ms INTEGER NOT NULL
	)`); err != nil {
		return 0, fmt.Errorf("schema_version: %w", err)
	}
	for _, m := range ms {
		// The version is read again inside each transaction (which holds
		// the write lock from BEGIN), so two processes opening a new file
		// at once cannot both apply a migration.
		ok, err := s.migrateOne(ctx, m, len(ms))
		if err != nil {
			return applied, fmt.Errorf("migration %s: %w", m.Name, err)
		}
		if ok {
			applied++
		}
	}
	return applied, nil
}

// migrateOne applies m unless the database is at m's version or later.
// known is the highest version this build knows.
func (s *Store) migrateOne(ctx context.Context, m migrations.Migration, known int) (applied bool, err error) {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer tx.Rollback()
	var current int
	if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM schema_version`).Scan(&current); err != nil {
		return false, err
	}
	if current > known {
		return false, fmt.Errorf("the database is at schema version %d, newer than this build knows (%d)", current, known)
	}
	if current >= m.Version {
		return false, nil
	}
	if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
		return false, err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_version (version, name, applied_ms) VALUES (?, ?, ?)`,
		m.Version, m.Name, time.Now().UnixMilli()); err != nil {
		return false, err
	}
	return true, tx.Commit()
}

// translate maps driver errors to the domain's vocabulary where one fits:
// a lock not obtained within busyTimeout, a full disk, an I/O error or a
// file that cannot be opened become EUnavailable (the statement or
// transaction changed nothing; trying again later may succeed). Anything
// else, such as a corrupt file, stays internal. The driver error stays in
// the chain for logs.
func translate(err error) error {
	var se *modernc.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_CANTOPEN:
			return unavailable(err)
		}
	}
	return err
}

// unavailable wraps err as an EUnavailable error, keeping err in the chain.
func unavailable(err error) error {
	if fg.ErrorCode(err) == fg.EUnavailable || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("%w: %w", fg.Errorf(fg.EUnavailable, "the durable store is unavailable"), err)
}
