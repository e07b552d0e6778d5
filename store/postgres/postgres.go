// Package postgres is the durable record of the follow graph on PostgreSQL
// (github.com/jackc/pgx/v5): the state of every edge of every kind
// (follows in edges; blocks, mutes, follow requests, the private setting
// and the account state in links) with its version, and the event-log sequence applied
// last, changed together in one transaction
// per batch of events. It is the record of the at-scale deployment, shared
// by every node, with the same schema and the same semantics as
// store/sqlite.
//
// The persister applies batches of events from the event log with Apply,
// each with the log sequence it reaches (LastSeq), which the start-up check
// compares with the log; at start-up an engine is loaded from Events and
// the log, which holds exactly what the store lacks, is replayed over it.
// Import bulk-loads a store with COPY.
//
// Unlike the SQLite record, this one answers the lists and the counts by
// itself (Following, Followers, Links, Counts), from partial covering
// indexes, so that other systems can query the graph without the hot copy.
// docs/design/stores.md says why SQLite has no such indexes.
package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/store/internal/migrations"
	"github.com/followgraph/followgraph/store/internal/row"
)

// Store is the durable record in one PostgreSQL database. It is safe for
// concurrent use, and any number of processes may share the database:
// every write is one transaction, conditional on the versions of the
// edges it touches.
type Store struct {
	pool    *pgxpool.Pool
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

// Open connects to the database at url (postgres://user:password@host:port/
// database?…; pgx's parameters, such as pool_max_conns, are accepted) and
// brings its schema up to date (see migrate). A server that cannot be
// reached returns an EUnavailable error.
//
// Apply's guarantee that a returned batch is on disk is the server's
// synchronous_commit: the default, on, flushes the WAL at each commit (to
// the synchronous standbys too, when there are). The store does not change
// it; a server set to off may lose the last batches of a crash after the
// persister has let the log drop them.
func Open(ctx context.Context, url string, opts ...Option) (*Store, error) {
	if !strings.HasPrefix(url, "postgres://") && !strings.HasPrefix(url, "postgresql://") {
		return nil, fmt.Errorf("postgres: open: %w", fg.Errorf(fg.EInvalidArgument, "the database must be a postgres:// URL"))
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// The error says what is wrong with the URL; pgx redacts the password.
		return nil, fmt.Errorf("postgres: open: %w", err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: open: %w", translate(err))
	}
	s := &Store{pool: pool}
	for _, o := range opts {
		o(s)
	}
	if _, err := s.migrate(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: open: %w", translate(err))
	}
	return s, nil
}

// Close closes the store's connections, waiting for those in use to be
// released.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}

// Ready returns nil when the store answers reads, and an EUnavailable
// error otherwise.
func (s *Store) Ready(ctx context.Context) error {
	var n int64
	if err := s.pool.QueryRow(ctx, `SELECT value FROM meta WHERE key = 'last_seq'`).Scan(&n); err != nil {
		return fmt.Errorf("postgres: ready: %w", unavailable(err))
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

// migrateLock is the key of the transaction-level advisory lock that
// serializes migrations: every process opening the database takes it
// before it reads the schema version, so two processes starting at once
// apply each migration once, the second waiting for the first. Advisory
// locks are per database, so stores in other databases of the server do
// not wait for each other.
const migrateLock int64 = 0x666f6c6c6f77 // "follow"

// migrate applies the embedded migrations the database has not had yet,
// each in its own transaction together with its row in schema_migrations,
// and returns how many it applied. Reopening an up-to-date database
// applies none. A database migrated by a newer build (a version this
// build does not know) is an error: this build cannot know what changed.
func (s *Store) migrate(ctx context.Context) (applied int, err error) {
	ms, err := loadMigrations()
	if err != nil {
		return 0, err
	}
	for _, m := range ms {
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
// known is the highest version this build knows. DDL is transactional in
// PostgreSQL: a migration that fails leaves no trace.
func (s *Store) migrateOne(ctx context.Context, m migrations.Migration, known int) (applied bool, err error) {
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrateLock); err != nil {
			return err
		}
		// Under the lock: CREATE TABLE IF NOT EXISTS is not safe against a
		// concurrent CREATE of the same table.
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version    integer     PRIMARY KEY,
			name       text        NOT NULL,
			applied_at timestamptz NOT NULL DEFAULT now()
		)`); err != nil {
			return fmt.Errorf("schema_migrations: %w", err)
		}
		var current int
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&current); err != nil {
			return err
		}
		if current > known {
			return fmt.Errorf("the database is at schema version %d, newer than this build knows (%d)", current, known)
		}
		if current >= m.Version {
			return nil
		}
		if _, err := tx.Exec(ctx, m.SQL); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.Version, m.Name); err != nil {
			return err
		}
		applied = true
		return nil
	})
	return applied && err == nil, err
}

// translate maps driver errors to the domain's vocabulary where one fits:
// a server that cannot be reached or dropped the connection, one that is
// starting, shutting down, out of connections or disk, a read-only server
// (a standby after a failover), and a transaction that lost a deadlock or a
// serialization conflict become EUnavailable (the statement changed
// nothing, or, for a connection lost during COMMIT, may have committed;
// either way trying again converges, as every write is idempotent).
// Anything else, such as a missing table, stays internal. The driver error
// stays in the chain for logs.
func translate(err error) error {
	if err == nil {
		return nil
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch code := pgErr.Code; {
		case strings.HasPrefix(code, "08"), // connection exception
			strings.HasPrefix(code, "53"),  // insufficient resources: disk full, out of memory, too many connections
			strings.HasPrefix(code, "57P"), // admin or crash shutdown, cannot connect now
			code == "40001",                // serialization failure
			code == "40P01",                // deadlock detected
			code == "55P03",                // lock not available
			code == "25006":                // read-only transaction: a standby
			return unavailable(err)
		}
		return err
	}
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	if errors.As(err, &connectErr) || errors.As(err, &netErr) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		pgconn.Timeout(err) || pgconn.SafeToRetry(err) {
		return unavailable(err)
	}
	return err
}

// unavailable wraps err as an EUnavailable error, keeping err in the chain.
// A canceled or expired context stays as it is: the caller gave up.
func unavailable(err error) error {
	if fg.ErrorCode(err) == fg.EUnavailable || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("%w: %w", fg.Errorf(fg.EUnavailable, "the durable store is unavailable"), err)
}
