// Package mysql is the durable record of the follow graph on MySQL or
// MariaDB (github.com/go-sql-driver/mysql): the state of every edge of
// every kind (follows in edges; blocks, mutes, follow requests, the
// private setting and the account state in links) with its version, and
// the event-log sequence applied last, changed together in one
// transaction per batch of events. It is store/sqlite's record for
// a deployment at scale, with the same schema, semantics and error codes.
//
// The persister applies batches of events from the event log with Apply,
// each with the log sequence it reaches (LastSeq), which the start-up check
// compares with the log; at start-up an engine is loaded from Events and
// the log, which holds exactly what the store lacks, is replayed over it.
// Import bulk-loads a store. Unlike SQLite's, this
// record is a shared system of record that other services may query
// without the hot copy, so it keeps covering list indexes and answers the
// lists (Following, Followers, Links: a user's blocks, mutes and pending
// requests) and the counts (Counts) on its own.
//
// Durability is the server's: a committed Apply survives a crash of the
// server only when InnoDB flushes its log at each commit
// (innodb_flush_log_at_trx_commit=1, the default) and, with a binary log,
// sync_binlog=1. The store does not change server settings.
package mysql

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"embed"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/store/internal/migrations"
	"github.com/followgraph/followgraph/store/internal/row"
)

// Store is the durable record in one MySQL or MariaDB database. It is
// safe for concurrent use: reads run on a pool of connections and never
// wait for writes (InnoDB's consistent reads take no locks); writes
// (Apply, Import) take turns on the meta row (see Apply).
type Store struct {
	db *sql.DB

	// rows is the most edges one statement writes: maxRows, or fewer if
	// the server's max_allowed_packet is smaller than such a statement.
	rows int

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

// Pool sizes. The store needs one connection per concurrent call; reads
// of the lists are short, and writes take turns anyway.
const (
	maxOpenConns = 16
	maxIdleConns = 4
	// connMaxLifetime retires connections well before the server's
	// wait_timeout (8 hours by default) or a proxy's idle timeout closes
	// them under the pool.
	connMaxLifetime = 30 * time.Minute
)

// dialTimeout is how long Open and each new connection wait for the
// server to answer, unless the URL's timeout parameter says otherwise.
const dialTimeout = 10 * time.Second

// maxPacket bounds every packet the store sends, and so every statement
// (the driver refuses to send more). The server's max_allowed_packet is
// 16 MiB on MariaDB and 64 MiB on MySQL 8 by default; 4 MiB is well
// beyond what the statements need (see maxRows) and within every
// version's default.
const maxPacket = 4 << 20

// ownedParams are the driver parameters the store sets itself: its
// statements and its count of changed rows depend on them. A URL that
// names one is rejected rather than silently overridden.
var ownedParams = []string{
	"allowAllFiles",     // no LOAD DATA from local files
	"clientFoundRows",   // affected rows are changed rows, not matched ones (see upsert)
	"columnsWithAlias",  // plain column names
	"interpolateParams", // see ParseURL
	"maxAllowedPacket",  // maxPacket
	"multiStatements",   // one statement per call: no injected second statement, ever
	"parseTime",         // the store reads no DATETIME
	"rejectReadOnly",    // see ParseURL
}

// ParseURL returns the driver configuration of a URL of the form
//
//	mysql://user:password@host:port/database?param=value&…
//
// The user and password are optional and percent-decoded (the password
// may be given as a parameter password=… instead, as libpq takes it); the
// port defaults to 3306; the database is required. The parameters are the
// driver's DSN parameters (timeout, readTimeout, writeTimeout, tls,
// charset, collation, …; a name the driver does not know is a server
// system variable set on each connection, such as
// innodb_lock_wait_timeout=10). timeout defaults to 10s.
//
// The store sets, and the URL may not name: interpolateParams=true (the
// driver writes the arguments into the statement text, escaped: one
// round trip per statement of any size; see below),
// multiStatements=false, clientFoundRows=false, parseTime=false,
// rejectReadOnly=true (a connection to a server that became read-only,
// such as an old primary after a failover, is dropped and reopened
// instead of failing every write), allowAllFiles=false,
// columnsWithAlias=false, and maxAllowedPacket=4194304 (every statement
// of the store is far smaller).
//
// A URL that is not of this form returns an EInvalidArgument error that
// says why; the error never contains the password.
//
// Interpolation rather than server-side prepared statements keeps every
// statement, of any row count, to one round trip; docs/design/stores.md says why
// prepared statements would not pay.
func ParseURL(rawURL string) (*gomysql.Config, error) {
	if strings.Contains(rawURL, "#") {
		return nil, badURL("a # starts a fragment, which has no meaning here (write # in a password as %%23)")
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		// url.Error repeats the whole URL, password included: keep only
		// the reason.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, badURL("%v", err)
	}
	switch {
	case u.Scheme != "mysql":
		return nil, badURL("the scheme is %q, not mysql", u.Scheme)
	case u.Opaque != "":
		return nil, badURL("no // after mysql:")
	case u.Hostname() == "":
		return nil, badURL("no host")
	}
	port := u.Port()
	if port == "" {
		port = "3306"
	} else if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return nil, badURL("port %s is out of range", port)
	}
	db := strings.TrimPrefix(u.Path, "/")
	switch {
	case db == "":
		return nil, badURL("no database: the path must be /database")
	case strings.ContainsAny(db, "/?\x00") || len(db) > 64:
		return nil, badURL("%q is not a database name", db)
	}
	// The driver parses its own parameters, escaped as in a URL's query:
	// "/?query" is a DSN of parameters only, and the rest is filled in
	// from the URL, so that no character of the user, password or host
	// needs escaping in a DSN. Each parameter is parsed alone first, so
	// that an error names it.
	seen := map[string]bool{}
	var query []string // the parameters for the driver
	var password *string
	for param := range strings.SplitSeq(u.RawQuery, "&") {
		if param == "" {
			continue
		}
		key, value, _ := strings.Cut(param, "=")
		name, err := url.QueryUnescape(key)
		if err == nil && name == "password" {
			// As libpq takes it: the password as a parameter, so that it
			// can stay out of the user info. It is the store's, not a
			// system variable to set, and never quoted in an error.
			pw, err := url.QueryUnescape(value)
			if err != nil || password != nil {
				return nil, badURL("parameter password: give it once, percent-encoded")
			}
			password = &pw
			continue
		}
		query = append(query, param)
		switch {
		case err != nil:
			return nil, badURL("query: %v", err)
		case name == "":
			return nil, badURL("a parameter has no name")
		case slices.Contains(ownedParams, name):
			return nil, badURL("parameter %s is set by the store", name)
		case seen[name]:
			return nil, badURL("parameter %s is given twice", name)
		}
		seen[name] = true
		if _, err := gomysql.ParseDSN("/?" + param); err != nil {
			return nil, badURL("parameter %s: %v", name, err)
		}
	}
	cfg, err := gomysql.ParseDSN("/?" + strings.Join(query, "&"))
	if err != nil {
		return nil, badURL("query: %v", err)
	}
	if u.User != nil {
		cfg.User = u.User.Username()
		cfg.Passwd, _ = u.User.Password()
	}
	if password != nil {
		if _, set := u.User.Password(); set {
			return nil, badURL("the password is given twice: in the user info and as a parameter")
		}
		cfg.Passwd = *password
	}
	cfg.Net = "tcp"
	cfg.Addr = net.JoinHostPort(u.Hostname(), port)
	cfg.DBName = db
	if !seen["timeout"] {
		cfg.Timeout = dialTimeout
	}
	cfg.InterpolateParams = true
	cfg.MultiStatements = false
	cfg.ClientFoundRows = false
	cfg.ParseTime = false
	cfg.RejectReadOnly = true
	cfg.AllowAllFiles = false
	cfg.ColumnsWithAlias = false
	cfg.MaxAllowedPacket = maxPacket
	// NewConnector checks what ParseDSN could not see yet (such as a
	// collation that interpolateParams cannot quote safely) and connects
	// to nothing.
	if _, err := gomysql.NewConnector(cfg); err != nil {
		return nil, badURL("%v", err)
	}
	return cfg, nil
}

func badURL(format string, args ...any) error {
	return fg.Errorf(fg.EInvalidArgument, "mysql: url: "+format, args...)
}

// Open connects to the database named by the URL (see ParseURL) and brings
// its schema up to date (see migrate). The database must exist; its
// tables are created. A server that cannot be reached returns an
// EUnavailable error, a bad URL an EInvalidArgument error.
func Open(ctx context.Context, rawURL string, opts ...Option) (*Store, error) {
	cfg, err := ParseURL(rawURL)
	if err != nil {
		return nil, err
	}
	conn, err := gomysql.NewConnector(cfg)
	if err != nil {
		return nil, badURL("%v", err) // checked by ParseURL already
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(maxOpenConns)
	db.SetMaxIdleConns(maxIdleConns)
	db.SetConnMaxLifetime(connMaxLifetime)
	s := &Store{db: db}
	for _, o := range opts {
		o(s)
	}
	if err := s.open(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("mysql: open: %w", translate(err))
	}
	return s, nil
}

// open sizes the statements to the server and migrates the schema.
func (s *Store) open(ctx context.Context) error {
	var packet int64
	if err := s.db.QueryRowContext(ctx, `SELECT @@max_allowed_packet`).Scan(&packet); err != nil {
		return err
	}
	s.rows = statementRows(packet)
	_, err := s.migrate(ctx)
	return err
}

// Close closes the store's connections.
func (s *Store) Close() error {
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("mysql: close: %w", err)
	}
	return nil
}

// Ready returns nil when the store answers reads, and an EUnavailable
// error otherwise. It does not wait for a write in progress.
func (s *Store) Ready(ctx context.Context) error {
	var n int64
	if err := s.db.QueryRowContext(ctx, "SELECT value FROM meta WHERE `key` = 'last_seq'").Scan(&n); err != nil {
		return fmt.Errorf("mysql: ready: %w", unavailable(err))
	}
	return nil
}

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migration is one file of migrations/ (see migrations.Load), split into
// its statements.
type migration struct {
	migrations.Migration
	statements []string
}

// loadMigrations returns the embedded migrations (migrations/NNNN_name.sql,
// applied as schema version NNNN) in version order. Their versions must be
// 1, 2, 3, … with no gap or repeat.
func loadMigrations() ([]migration, error) {
	loaded, err := migrations.Load(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	ms := make([]migration, 0, len(loaded))
	for _, m := range loaded {
		stmts, err := splitStatements(m.SQL)
		if err != nil {
			return nil, fmt.Errorf("migration %s: %w", path.Join("migrations", m.Name), err)
		}
		ms = append(ms, migration{Migration: m, statements: stmts})
	}
	return ms, nil
}

// splitStatements splits a migration file into its statements, which the
// store runs one at a time (multiStatements is off). A statement ends
// with a semicolon at the end of a line; lines that start with -- are
// comments.
func splitStatements(file string) ([]string, error) {
	var stmts []string
	var cur strings.Builder
	for line := range strings.Lines(file) {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "--") {
			continue
		}
		cur.WriteString(line)
		if strings.HasSuffix(trimmed, ";") {
			if stmt := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(cur.String()), ";")); stmt != "" {
				stmts = append(stmts, stmt)
			}
			cur.Reset()
		}
	}
	if strings.TrimSpace(cur.String()) != "" {
		return nil, errors.New("the last statement does not end with a semicolon at the end of a line")
	}
	return stmts, nil
}

// migrateLockTimeout is how long Open waits for another process that is
// migrating the same database.
const migrateLockTimeout = 60 * time.Second

// migrate applies the embedded migrations the database has not had yet,
// each followed by its row in schema_migrations, and returns how many it
// applied. Reopening an up-to-date database applies none. A database
// migrated by a newer build (a version this build does not know) is an
// error: this build cannot know what changed.
//
// MySQL commits DDL implicitly, so a migration and its row cannot be one
// transaction. Two guards make this safe: the whole migration runs under
// a named lock of the server (GET_LOCK, per database), so two processes
// opening a new database at once take turns and the second finds the
// work done; and every migration is idempotent, so one that a dead
// process left half done is simply run again.
func (s *Store) migrate(ctx context.Context) (applied int, err error) {
	ms, err := loadMigrations()
	if err != nil {
		return 0, err
	}
	// GET_LOCK belongs to the session: the lock, the migrations and the
	// release run on one connection, which then goes back to the pool (a
	// connection that broke meanwhile took the lock with its session).
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	const lockName = "LEFT(CONCAT('followgraph.migrate.', DATABASE()), 64)"
	var got sql.NullInt64
	if err := conn.QueryRowContext(ctx, `SELECT GET_LOCK(`+lockName+`, ?)`,
		int(migrateLockTimeout.Seconds())).Scan(&got); err != nil {
		return 0, fmt.Errorf("migration lock: %w", err)
	}
	if got.Int64 != 1 {
		return 0, unavailable(fmt.Errorf("migration lock: not obtained within %s: another process is migrating the database", migrateLockTimeout))
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), `DO RELEASE_LOCK(`+lockName+`)`)

	if _, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INT NOT NULL PRIMARY KEY,
		name       VARCHAR(255) NOT NULL,
		applied_ms BIGINT NOT NULL
	) ENGINE = InnoDB`); err != nil {
		return 0, fmt.Errorf("schema_migrations: %w", err)
	}
	var current int
	if err := conn.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&current); err != nil {
		return 0, fmt.Errorf("schema_migrations: %w", err)
	}
	if current > len(ms) {
		return 0, fmt.Errorf("the database is at schema version %d, newer than this build knows (%d)", current, len(ms))
	}
	for _, m := range ms[current:] {
		for _, stmt := range m.statements {
			if _, err := conn.ExecContext(ctx, stmt); err != nil {
				return applied, fmt.Errorf("migration %s: %w", m.Name, err)
			}
		}
		if _, err := conn.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_ms) VALUES (?, ?, ?)`,
			m.Version, m.Name, time.Now().UnixMilli()); err != nil {
			return applied, fmt.Errorf("migration %s: %w", m.Name, err)
		}
		applied++
	}
	return applied, nil
}

// MySQL and MariaDB error numbers that mean "not now": the statement or
// transaction changed nothing (InnoDB rolls back a deadlocked transaction
// whole; the store rolls back after any error), and trying again later
// may succeed.
var unavailableErrors = []uint16{
	1021, // ER_DISK_FULL
	1040, // ER_CON_COUNT_ERROR: too many connections
	1053, // ER_SERVER_SHUTDOWN
	1114, // ER_RECORD_FILE_FULL: the table is full
	1205, // ER_LOCK_WAIT_TIMEOUT
	1213, // ER_LOCK_DEADLOCK
	1290, // ER_OPTION_PREVENTS_STATEMENT: --read-only, such as a replica
	1836, // ER_READ_ONLY_MODE
	1927, // ER_CONNECTION_KILLED (MariaDB)
	4031, // ER_CLIENT_INTERACTION_TIMEOUT (MySQL 8): the server closed an idle connection
}

// translate maps driver errors to the domain's vocabulary where one fits:
// a server that cannot be reached or that drops the connection, and the
// errors of unavailableErrors, become EUnavailable. Anything else, such as
// a denied login or a missing table, stays internal. The driver error
// stays in the chain for logs.
func translate(err error) error {
	if err == nil {
		return nil
	}
	var me *gomysql.MySQLError
	if errors.As(err, &me) {
		if slices.Contains(unavailableErrors, me.Number) {
			return unavailable(err)
		}
		return err
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, driver.ErrBadConn) || errors.Is(err, gomysql.ErrInvalidConn) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return unavailable(err)
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
