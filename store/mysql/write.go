package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"iter"
	"strings"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/store/internal/row"
)

// maxRows is the most edges one statement writes. A statement of 1000
// rows is at most about 110 KB of SQL text (rowBytes each), a small part
// of any server's max_allowed_packet. On MariaDB 10.11, batches of 5000
// edges to the 1M-edge graph in a buffer pool that holds it ran at the
// same rate, within 5%, with 500, 1000, 2500 and 5000 rows per statement,
// and 22% slower with 250.
const maxRows = 1000

// rowBytes bounds the SQL text of one row of a statement once the driver
// has written its arguments in. The widest is a link's: "(" + five
// integers of at most 20 characters, three small ones, and their
// separators + "),", at most 120.
const rowBytes = 7*20 + 10

// statementRows returns how many rows a statement may hold for a server
// whose max_allowed_packet is packet bytes: maxRows, or fewer when the
// packet (or maxPacket) is smaller than such a statement, but at least 1.
func statementRows(packet int64) int {
	const overhead = 1024 // the statement text around the rows
	budget := min(packet, maxPacket) - overhead
	return int(max(1, min(maxRows, budget/rowBytes)))
}

// lockMeta starts Import's transaction, as the update of the sequence
// starts Apply's: both take the meta row's exclusive lock, which the
// transaction holds until it ends. So writers take turns, and two of them
// never wait on each other's edge rows or on the gaps of each other's
// index entries (no deadlock). Every Apply updates this row anyway, so
// writers were serialized on it at commit already; taking it first costs
// no concurrency.
const lockMeta = "SELECT value FROM meta WHERE `key` = 'last_seq' FOR UPDATE"

// Apply records a batch of events read from the event log, and lastSeq,
// the stream sequence of the batch's last event, in one transaction: when
// Apply returns nil, the batch is committed (and on disk as far as the
// server's settings make commits durable; see the package doc); when it
// returns an error, nothing of it is.
//
// Each event is a conditional upsert of each edge it sets (its Effects:
// follows in edges, the other kinds in links; a block is five rows): each
// takes effect only if its version is greater than that edge's stored
// version. Duplicates, redeliveries and any order of the same events
// therefore converge to the highest version of each edge, and an event
// older than the stored state changes nothing. Off edges are kept as
// tombstones, so a late older event cannot bring an edge back. The stored
// sequence never moves backward: a lastSeq below it leaves it unchanged
// (the events are still applied).
//
// Apply returns the number of rows changed (created or overwritten),
// which one INSERT … ON DUPLICATE KEY UPDATE per s.rows rows writes and
// counts (see upsert): a redelivered batch changes no row. A follow's end
// of the request of its pair is its own edges row (see row.Link.Settle):
// a batch of follows writes edges alone, as before there were links. As writers take turns (see lockMeta), concurrent Applies never
// deadlock; each writes its rows in primary-key order all the same, which
// touches the B-tree pages in order.
//
// A change older than the tombstone horizon (see PurgeTombstones) to an
// edge with no row is refused: not written, and passed to the function of
// WithRefused once the batch is committed (the rest of the batch is
// applied). Its edge may have had a newer tombstone, since removed. A
// purge step holds the writers' lock too, so the horizon read here is the
// one of the rows written.
//
// Every event is checked before anything is written: an invalid event
// (Event.Validate), or a version or lastSeq of 2^63 or more, returns an
// error with its code (EInvalidArgument, EInvalidID, ESelfFollow) and
// applies nothing. A server that cannot be reached, a lock not obtained
// within the server's innodb_lock_wait_timeout or a deadlock returns
// EUnavailable.
func (s *Store) Apply(ctx context.Context, events []fg.Event, lastSeq uint64) (changed int, err error) {
	rows, err := row.Batch(events, lastSeq)
	if err != nil {
		return 0, fmt.Errorf("mysql: apply: %w", err)
	}

	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("mysql: apply: %w", translate(err))
	}
	defer tx.Rollback()
	// The sequence first: this takes the writers' lock (see lockMeta).
	if _, err := tx.ExecContext(ctx, "UPDATE meta SET value = GREATEST(value, ?) WHERE `key` = 'last_seq'", int64(lastSeq)); err != nil {
		return 0, fmt.Errorf("mysql: apply: %w", translate(err))
	}
	horizon, err := sqlHorizon.Read(ctx, tx)
	if err != nil {
		return 0, fmt.Errorf("mysql: apply: %w", translate(err))
	}
	refused, err := rows.Refuse(horizon, heldEdges(ctx, tx), sqlHorizon.HeldLinks(ctx, tx))
	if err != nil {
		return 0, fmt.Errorf("mysql: apply: %w", translate(err))
	}
	if changed, err = s.write(ctx, tx, rows.Edges); err != nil {
		return 0, fmt.Errorf("mysql: apply: %w", translate(err))
	}
	if len(rows.Links) > 0 {
		n, err := writeRows(ctx, tx, s.rows, linksTable, rows.Links, bindLink)
		if err != nil {
			return 0, fmt.Errorf("mysql: apply: %w", translate(err))
		}
		changed += n
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("mysql: apply: %w", translate(err))
	}
	s.refused.Report(refused)
	return changed, nil
}

// write writes edges (in primary-key order, one row per edge) in tx (see
// writeRows) and returns how many it changed.
func (s *Store) write(ctx context.Context, tx *sql.Tx, edges []row.Edge) (int, error) {
	return writeRows(ctx, tx, s.rows, edgesTable, edges, bindEdge)
}

func bindEdge(args []any, e row.Edge) []any {
	return append(args, e.Follower, e.Followee, e.Following, e.SinceMs, e.Version)
}

func bindLink(args []any, l row.Link) []any {
	return append(args, l.User, l.Kind, l.Target, l.On, l.SinceMs, l.ExpiresMs, l.State, l.Version)
}

// writeRows writes rows of table t in tx, per statements of n rows (see
// upsert), binding each with bind, and returns how many it changed:
// created, or overwritten by a greater version. tx must hold the writers'
// lock (see lockMeta).
func writeRows[R any](ctx context.Context, tx *sql.Tx, n int, t table, rows []R, bind func([]any, R) []any) (int, error) {
	changed := 0
	for len(rows) > 0 {
		k := min(len(rows), n)
		c, err := upsert(ctx, tx, t, rows[:k], bind)
		if err != nil {
			return changed, err
		}
		changed += c
		rows = rows[k:]
	}
	return changed, nil
}

// resetCounter zeroes the connection's LAST_INSERT_ID, the counter of the
// rows a table's upsert tail overwrites.
const resetCounter = "DO LAST_INSERT_ID(0)"

// A table upsert writes: the head of its INSERT, one row's placeholders,
// and the tail that makes it an upsert.
type table struct{ insert, row, tail string }

// The upsert tails make the INSERT of upsert an upsert: it inserts each
// row, or, when the key exists, overwrites it only with a greater version.
//
// In ON DUPLICATE KEY UPDATE each assignment sees the columns as the
// assignments before it left them, so version is assigned last: the
// conditions before it compare against the stored version. VALUES(col)
// is the value the row would have inserted; MySQL 8.0.20 deprecates it
// for a row alias that MariaDB does not have, and both still take it.
//
// The assignment of version also counts the rows it overwrites, in the
// connection's LAST_INSERT_ID: LAST_INSERT_ID(expr) returns expr, makes it
// the value of the next LAST_INSERT_ID(), and the server returns it with
// the statement's result as the insert id (the tables have no
// AUTO_INCREMENT column to compete with it). IF evaluates only the branch
// it returns, so the counter moves only for a row whose version is lower.
// The inner IF's condition, the counter, is never 0; an IF rather than
// arithmetic such as VALUES(version) + 0 * LAST_INSERT_ID(…), whose
// result would be unsigned, keeps the type of VALUES(version).
const versionTail = " version = IF(version < VALUES(version), IF(LAST_INSERT_ID(LAST_INSERT_ID() + 1), VALUES(version), 0), version)"

var (
	edgesTable = table{
		insert: "INSERT INTO edges (follower, followee, following, since_ms, version) VALUES ",
		row:    "(?,?,?,?,?)",
		tail: " ON DUPLICATE KEY UPDATE" +
			" following = IF(version < VALUES(version), VALUES(following), following)," +
			" since_ms = IF(version < VALUES(version), VALUES(since_ms), since_ms)," + versionTail,
	}
	linksTable = table{
		insert: "INSERT INTO links (user_id, kind, target_id, active, since_ms, expires_ms, state, version) VALUES ",
		row:    "(?,?,?,?,?,?,?,?)",
		tail: " ON DUPLICATE KEY UPDATE" +
			" active = IF(version < VALUES(version), VALUES(active), active)," +
			" since_ms = IF(version < VALUES(version), VALUES(since_ms), since_ms)," +
			" expires_ms = IF(version < VALUES(version), VALUES(expires_ms), expires_ms)," +
			" state = IF(version < VALUES(version), VALUES(state), state)," + versionTail,
	}
)

// upsert writes rows of t (at most s.rows, with distinct keys) in one
// statement, INSERT … ON DUPLICATE KEY UPDATE (see the tails), and
// returns how many it changed.
//
// The count cannot come from the affected rows alone: they are 1 per
// inserted row, 2 per overwritten row and 0 per row left as it was, so
// one overwrite and two inserts look the same. The statement also counts
// the overwritten rows (see versionTail), from 0 (resetCounter, on the
// same connection since it is the same transaction), so the changed rows
// are affected - overwritten.
//
// It does in one pass of the primary key what reading the stored versions
// first and writing only the changed rows does in two (docs/design/stores.md);
// docs/BENCHMARKS.md says what limits the rate with InnoDB's default buffer
// pool.
func upsert[R any](ctx context.Context, tx *sql.Tx, t table, rows []R, bind func([]any, R) []any) (int, error) {
	if _, err := tx.ExecContext(ctx, resetCounter); err != nil {
		return 0, err
	}
	var b strings.Builder
	b.Grow(len(t.insert) + len(t.tail) + len(rows)*(len(t.row)+1))
	b.WriteString(t.insert)
	args := make([]any, 0, 8*len(rows))
	for i, r := range rows {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(t.row)
		args = bind(args, r)
	}
	b.WriteString(t.tail)
	res, err := tx.ExecContext(ctx, b.String(), args...)
	if err != nil {
		return 0, err
	}
	affected, err := res.RowsAffected()
	if err != nil {
		return 0, err
	}
	overwritten, err := res.LastInsertId()
	if err != nil {
		return 0, err
	}
	inserted := affected - 2*overwritten
	if overwritten < 0 || inserted < 0 || inserted+overwritten > int64(len(rows)) {
		// A server that does not count as documented: fail rather than
		// return a wrong count.
		return 0, fmt.Errorf("upsert of %d rows: %d rows affected, %d overwritten: the counts do not add up", len(rows), affected, overwritten)
	}
	return int(inserted + overwritten), nil
}

// importChunk is how many events Import sorts and deduplicates at a time.
const importChunk = 16 * maxRows

// Import loads events into the store in one transaction, for
// `followgraph import`, and returns the number of rows written (edges
// created, plus edges overwritten by a higher version). It is meant for an
// empty store, before the service first starts. It leaves the stored
// sequence alone. Events may come in any order, with several versions of
// one edge; as with Apply, the highest version of each edge wins, so
// importing into a store that has edges is correct too.
//
// Import writes with Apply's statements, importChunk events sorted and
// deduplicated at a time, in one transaction (so that an invalid event
// imports nothing). LOAD DATA LOCAL INFILE would save the server the
// parsing of the statement text, about 5% of its time in a profile of
// Apply; but highest-version-wins would then need a staging table and an
// INSERT … SELECT doing the same index work as these statements.
//
// Import holds the writers' lock (see lockMeta) for its whole
// transaction: an Apply meanwhile waits for it, up to the server's
// innodb_lock_wait_timeout, and then fails with EUnavailable.
//
// An invalid event (as for Apply) returns an error and imports nothing.
// So does the first event, in the order given, that is the first of its
// edge, is older than the tombstone horizon, and whose edge the store
// holds no row of: the error is its followgraph.Refusal (code
// EBeforeHorizon), since the edge may have had a newer tombstone, since
// removed.
func (s *Store) Import(ctx context.Context, events iter.Seq[fg.Event]) (int, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("mysql: import: %w", translate(err))
	}
	defer tx.Rollback()
	var seq int64
	if err := tx.QueryRowContext(ctx, lockMeta).Scan(&seq); err != nil {
		return 0, fmt.Errorf("mysql: import: %w", translate(err))
	}
	horizon, err := sqlHorizon.Read(ctx, tx)
	if err != nil {
		return 0, fmt.Errorf("mysql: import: %w", translate(err))
	}
	changed := 0
	for chunk, err := range row.Chunks(events, importChunk) {
		if err != nil {
			return 0, fmt.Errorf("mysql: import: %w", err)
		}
		r, err := row.FirstRefused(chunk, horizon, heldEdges(ctx, tx))
		if err != nil {
			return 0, fmt.Errorf("mysql: import: %w", translate(err))
		}
		if r != nil {
			return 0, fmt.Errorf("mysql: import: %w", *r)
		}
		n, err := s.write(ctx, tx, row.Dedupe(chunk))
		if err != nil {
			return 0, fmt.Errorf("mysql: import: %w", translate(err))
		}
		changed += n
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("mysql: import: %w", translate(err))
	}
	return changed, nil
}

// LastSeq returns the stream sequence recorded by the last Apply, 0 for a
// new store: everything in the log up to it is in the store. The start-up
// check compares it with the log's sequences (package recovery); loading
// an engine does not need it, as the log is replayed whole.
func (s *Store) LastSeq(ctx context.Context) (uint64, error) {
	var seq int64
	if err := s.db.QueryRowContext(ctx, "SELECT value FROM meta WHERE `key` = 'last_seq'").Scan(&seq); err != nil {
		return 0, fmt.Errorf("mysql: last seq: %w", translate(err))
	}
	return uint64(seq), nil
}

// positionSQL is the store's spelling of the log position's statements.
var positionSQL = row.PositionStatements("`key`", "GREATEST", func(int) string { return "?" })

// LogPosition returns what the store knows of the event log it is fed
// from (see followgraph.LogPosition): its own identity, the log's (0
// until SaveLogPosition first sets it), the highest sequence applied
// (LastSeq), and the highest the log is known to have stored (raised by
// SaveLogPosition). At start the service compares them with the log, so
// that a log or a store that lost events is noticed.
func (s *Store) LogPosition(ctx context.Context) (fg.LogPosition, error) {
	rows, err := s.db.QueryContext(ctx, positionSQL.Read)
	if err != nil {
		return fg.LogPosition{}, fmt.Errorf("mysql: log position: %w", translate(err))
	}
	defer rows.Close()
	p, err := row.ScanPosition(rows.Next, rows.Scan)
	if err == nil {
		err = rows.Err()
	}
	if err != nil {
		return fg.LogPosition{}, fmt.Errorf("mysql: log position: %w", translate(err))
	}
	return p, nil
}

// SaveLogPosition records p.Log as the identity of the event log the
// store is fed from, and raises the sequence the log is known to have
// stored to p.Seen (it never lowers it). p.Store and p.Applied are not
// written.
func (s *Store) SaveLogPosition(ctx context.Context, p fg.LogPosition) error {
	if err := row.CheckPosition(p); err != nil {
		return fmt.Errorf("mysql: save log position: %w", err)
	}
	if _, err := s.db.ExecContext(ctx, positionSQL.Save, p.Log, int64(p.Seen)); err != nil {
		return fmt.Errorf("mysql: save log position: %w", translate(err))
	}
	return nil
}

// ResetLogPosition sets the log's identity, the sequence applied and the one
// seen to those of p (p.Store is not written), for when an operator has
// accepted a loss: the log was replaced, or its sequence went back.
func (s *Store) ResetLogPosition(ctx context.Context, p fg.LogPosition) error {
	if err := row.CheckPosition(p); err != nil {
		return fmt.Errorf("mysql: reset log position: %w", err)
	}
	if _, err := s.db.ExecContext(ctx, positionSQL.Reset, p.Log, int64(p.Applied), int64(p.Seen)); err != nil {
		return fmt.Errorf("mysql: reset log position: %w", translate(err))
	}
	return nil
}
