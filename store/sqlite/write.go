package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"iter"
	"math/bits"
	"strings"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/store/internal/row"
)

// maxRows is the most rows one upsert statement writes. Each edge binds 5
// variables, each link 8: at most 4096 per statement, far below SQLite's
// limit (32766) and PostgreSQL's (65535). Multi-row statements made
// Apply's statement work 3-5 times faster than one row per statement; from
// 64 to 4096 rows per statement the difference was lost in the noise.
const maxRows = 512

// A table the upserts write: its name, its columns in the order they are
// bound, and its primary key.
type table struct{ name, key, rest string }

var (
	edgesTable = table{"edges", "follower, followee", "following, since_ms, version"}
	linksTable = table{"links", "user_id, kind, target_id", "active, since_ms, expires_ms, state, version"}
)

// upsertSQL returns the upsert of rows rows of t: insert each row, or,
// when the key exists, overwrite it only with a greater version. A row
// whose stored version is equal or greater is left alone and not counted
// as changed. PostgreSQL takes the same statement; MySQL spells it
// ON DUPLICATE KEY UPDATE with IF(VALUES(version) > version, …).
func upsertSQL(t table, rows int) string {
	cols := strings.Split(t.key+", "+t.rest, ", ")
	var b strings.Builder
	b.WriteString("INSERT INTO " + t.name + " (" + t.key + ", " + t.rest + ") VALUES ")
	one := "(" + strings.Repeat("?, ", len(cols)-1) + "?)"
	for i := range rows {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(one)
	}
	b.WriteString(" ON CONFLICT (" + t.key + ") DO UPDATE SET ")
	for i, c := range strings.Split(t.rest, ", ") {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(c + " = excluded." + c)
	}
	b.WriteString(" WHERE excluded.version > " + t.name + ".version")
	return b.String()
}

// Apply records a batch of events read from the event log, and lastSeq,
// the stream sequence of the batch's last event, in one transaction: when
// Apply returns nil, the batch is on disk (synchronous=FULL, see Open);
// when it returns an error, nothing of it is.
//
// Each event is a conditional upsert of each edge it sets (its Effects:
// follows in edges, the other kinds in links; a block is five rows): each
// takes effect only if its version is greater than that edge's stored
// version. Duplicates, redeliveries and any order of the same events
// therefore converge to the highest version of each edge, and an event
// older than the stored state changes nothing. Off edges (an unfollow, an
// unblock, the follows a block ended) are kept as tombstones, so a late
// older event cannot bring an edge back. The stored sequence never moves
// backward: a lastSeq below it leaves it unchanged (the events are still
// applied).
//
// A change older than the tombstone horizon (see PurgeTombstones) to an
// edge with no row is refused: not written, and passed to the function of
// WithRefused once the batch is committed (the rest of the batch is
// applied). Its edge may have had a newer tombstone, since removed.
//
// Apply returns the number of rows changed (created or overwritten).
// Every event is checked before anything is written: an invalid event
// (Event.Validate), or a version or lastSeq of 2^63 or more, returns an
// error with its code (EInvalidArgument, EInvalidID, ESelfFollow) and
// applies nothing. A lock not obtained in time returns EUnavailable.
func (s *Store) Apply(ctx context.Context, events []fg.Event, lastSeq uint64) (changed int, err error) {
	rows, err := row.Batch(events, lastSeq)
	if err != nil {
		return 0, fmt.Errorf("sqlite: apply: %w", err)
	}

	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("sqlite: apply: %w", translate(err))
	}
	defer tx.Rollback()
	// The writing connection is the only one: no purge runs between this
	// read and the commit.
	horizon, err := sqlHorizon.Read(ctx, tx)
	if err != nil {
		return 0, fmt.Errorf("sqlite: apply: %w", translate(err))
	}
	refused, err := rows.Refuse(horizon, heldEdges(ctx, tx), sqlHorizon.HeldLinks(ctx, tx))
	if err != nil {
		return 0, fmt.Errorf("sqlite: apply: %w", translate(err))
	}
	if changed, err = s.upsert(ctx, tx, rows.Edges); err != nil {
		return 0, fmt.Errorf("sqlite: apply: %w", translate(err))
	}
	if len(rows.Links) > 0 {
		// Not prepared at Open: links are rare, and a follow-only store
		// pays nothing for them.
		exec := func(n int, args []any) (sql.Result, error) {
			return tx.ExecContext(ctx, upsertSQL(linksTable, n), args...)
		}
		n, err := upsertRows(rows.Links, exec, func(args []any, l row.Link) []any {
			return append(args, l.User, l.Kind, l.Target, l.On, l.SinceMs, l.ExpiresMs, l.State, l.Version)
		})
		if err != nil {
			return 0, fmt.Errorf("sqlite: apply: %w", translate(err))
		}
		changed += n
	}
	if _, err := tx.ExecContext(ctx, `UPDATE meta SET value = max(value, ?) WHERE key = 'last_seq'`, int64(lastSeq)); err != nil {
		return 0, fmt.Errorf("sqlite: apply: %w", translate(err))
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("sqlite: apply: %w", translate(err))
	}
	s.refused.Report(refused)
	return changed, nil
}

// upsert writes edges in tx with the statements prepared at Open (see
// upsertRows) and returns the number of rows changed.
func (s *Store) upsert(ctx context.Context, tx *sql.Tx, edges []row.Edge) (int, error) {
	exec := func(n int, args []any) (sql.Result, error) {
		return tx.StmtContext(ctx, s.upserts[bits.TrailingZeros(uint(n))]).ExecContext(ctx, args...)
	}
	return upsertRows(edges, exec, func(args []any, e row.Edge) []any {
		return append(args, e.Follower, e.Followee, e.Following, e.SinceMs, e.Version)
	})
}

// upsertRows writes rows with as few statements as possible, each the
// upsert (upsertSQL) of 2^k rows that exec runs (a batch of 1000 takes
// 512+256+128+64+32+8), to which bind appends a row's values, and returns
// the number of rows changed.
func upsertRows[R any](rows []R, exec func(n int, args []any) (sql.Result, error), bind func([]any, R) []any) (int, error) {
	changed := 0
	args := make([]any, 0, 8*min(len(rows), maxRows))
	for len(rows) > 0 {
		k := 0
		for 2<<k <= min(len(rows), maxRows) {
			k++
		}
		n := 1 << k
		args = args[:0]
		for _, r := range rows[:n] {
			args = bind(args, r)
		}
		res, err := exec(n, args)
		if err != nil {
			return changed, err
		}
		affected, err := res.RowsAffected()
		if err != nil {
			return changed, err
		}
		changed += int(affected)
		rows = rows[n:]
	}
	return changed, nil
}

// importChunk is how many events Import sorts and writes at a time.
const importChunk = 8 * maxRows

// Import loads events into the store in one transaction, for
// `followgraph import`, and returns the number of rows written (edges
// created, plus edges overwritten by a higher version). It is meant for an
// empty store, before the service first starts. It leaves the stored
// sequence alone. Events may come in any order, with several versions of
// one edge; as with Apply, the highest version of each edge wins, so
// importing into a store that has edges is correct too.
//
// An invalid event (as for Apply) returns an error and imports nothing.
// So does the first event, in the order given, that is the first of its
// edge, is older than the tombstone horizon, and whose edge the store
// holds no row of: the error is its followgraph.Refusal (code
// EBeforeHorizon), since the edge may have had a newer tombstone, since
// removed.
func (s *Store) Import(ctx context.Context, events iter.Seq[fg.Event]) (int, error) {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("sqlite: import: %w", translate(err))
	}
	defer tx.Rollback()
	horizon, err := sqlHorizon.Read(ctx, tx)
	if err != nil {
		return 0, fmt.Errorf("sqlite: import: %w", translate(err))
	}
	changed := 0
	for chunk, err := range row.Chunks(events, importChunk) {
		if err != nil {
			return 0, fmt.Errorf("sqlite: import: %w", err)
		}
		r, err := row.FirstRefused(chunk, horizon, heldEdges(ctx, tx))
		if err != nil {
			return 0, fmt.Errorf("sqlite: import: %w", translate(err))
		}
		if r != nil {
			return 0, fmt.Errorf("sqlite: import: %w", *r)
		}
		n, err := s.upsert(ctx, tx, row.Dedupe(chunk))
		if err != nil {
			return 0, fmt.Errorf("sqlite: import: %w", translate(err))
		}
		changed += n
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("sqlite: import: %w", translate(err))
	}
	// One big transaction leaves a big WAL: copy it into the database and
	// truncate it now rather than on some later commit.
	if _, err := s.w.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		return changed, fmt.Errorf("sqlite: import: checkpoint: %w", translate(err))
	}
	return changed, nil
}

// LastSeq returns the stream sequence recorded by the last Apply, 0 for a
// new store: everything in the log up to it is in the store. The start-up
// check compares it with the log's sequences (package recovery); loading
// an engine does not need it, as the log is replayed whole.
func (s *Store) LastSeq(ctx context.Context) (uint64, error) {
	var seq int64
	if err := s.r.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = 'last_seq'`).Scan(&seq); err != nil {
		return 0, fmt.Errorf("sqlite: last seq: %w", translate(err))
	}
	return uint64(seq), nil
}

// positionSQL is the store's spelling of the log position's statements.
var positionSQL = row.PositionStatements("key", "max", func(int) string { return "?" })

// LogPosition returns what the store knows of the event log it is fed
// from (see followgraph.LogPosition): its own identity, the log's (0
// until SaveLogPosition first sets it), the highest sequence applied
// (LastSeq), and the highest the log is known to have stored (raised by
// SaveLogPosition). At start the service compares them with the log, so
// that a log or a store that lost events is noticed.
func (s *Store) LogPosition(ctx context.Context) (fg.LogPosition, error) {
	rows, err := s.r.QueryContext(ctx, positionSQL.Read)
	if err != nil {
		return fg.LogPosition{}, fmt.Errorf("sqlite: log position: %w", translate(err))
	}
	defer rows.Close()
	p, err := row.ScanPosition(rows.Next, rows.Scan)
	if err == nil {
		err = rows.Err()
	}
	if err != nil {
		return fg.LogPosition{}, fmt.Errorf("sqlite: log position: %w", translate(err))
	}
	return p, nil
}

// SaveLogPosition records p.Log as the identity of the event log the
// store is fed from, and raises the sequence the log is known to have
// stored to p.Seen (it never lowers it). p.Store and p.Applied are not
// written.
func (s *Store) SaveLogPosition(ctx context.Context, p fg.LogPosition) error {
	if err := row.CheckPosition(p); err != nil {
		return fmt.Errorf("sqlite: save log position: %w", err)
	}
	if _, err := s.w.ExecContext(ctx, positionSQL.Save, p.Log, int64(p.Seen)); err != nil {
		return fmt.Errorf("sqlite: save log position: %w", translate(err))
	}
	return nil
}

// ResetLogPosition sets the log's identity, the sequence applied and the one
// seen to those of p (p.Store is not written), for when an operator has
// accepted a loss: the log was replaced, or its sequence went back.
func (s *Store) ResetLogPosition(ctx context.Context, p fg.LogPosition) error {
	if err := row.CheckPosition(p); err != nil {
		return fmt.Errorf("sqlite: reset log position: %w", err)
	}
	if _, err := s.w.ExecContext(ctx, positionSQL.Reset, p.Log, int64(p.Applied), int64(p.Seen)); err != nil {
		return fmt.Errorf("sqlite: reset log position: %w", translate(err))
	}
	return nil
}
