package postgres

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/store/internal/row"
)

// columns is a batch of edges as one array per column, the parameters of
// upsertSQL.
type columns struct {
	follower, followee []int64
	following          []bool
	sinceMs, version   []int64
}

func columnsOf(edges []row.Edge) columns {
	c := columns{
		follower:  make([]int64, len(edges)),
		followee:  make([]int64, len(edges)),
		following: make([]bool, len(edges)),
		sinceMs:   make([]int64, len(edges)),
		version:   make([]int64, len(edges)),
	}
	for i, e := range edges {
		c.follower[i], c.followee[i], c.following[i], c.sinceMs[i], c.version[i] =
			e.Follower, e.Followee, e.Following, e.SinceMs, e.Version
	}
	return c
}

// upsertSQL writes a whole batch in one statement from five arrays, one
// per column: insert each edge, or, when the edge exists, overwrite it
// only with a greater version. An edge whose stored version is equal or
// greater is left alone and not counted as changed. The statement text
// does not depend on the batch size, so pgx prepares it once per
// connection; the arrays travel in binary, 8 bytes an id.
//
// unnest yields the rows in array order, which is key order (see row.Dedupe).
//
// docs/design/stores.md lists the forms measured against it (none does
// better); docs/BENCHMARKS.md says where its time goes.
// A row older than the tombstone horizon whose edge has no row is left out
// (see refusedSQL).
const upsertSQL = `INSERT INTO edges AS e (follower, followee, following, since_ms, version)
SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::boolean[], $4::bigint[], $5::bigint[]) AS x(follower, followee, following, since_ms, version)
WHERE x.version >= ` + horizonSQL + `
	OR EXISTS (SELECT FROM edges o WHERE o.follower = x.follower AND o.followee = x.followee)
ON CONFLICT (follower, followee) DO UPDATE
SET following = excluded.following, since_ms = excluded.since_ms, version = excluded.version
WHERE e.version < excluded.version`

// linkColumns is a batch of links as one array per column, the
// parameters of upsertLinksSQL.
type linkColumns struct {
	user, target                []int64
	kind, state                 []int16
	active                      []bool
	sinceMs, expiresMs, version []int64
}

func linkColumnsOf(links []row.Link) linkColumns {
	n := len(links)
	c := linkColumns{user: make([]int64, n), target: make([]int64, n), kind: make([]int16, n), active: make([]bool, n),
		sinceMs: make([]int64, n), expiresMs: make([]int64, n), state: make([]int16, n), version: make([]int64, n)}
	for i, l := range links {
		c.user[i], c.kind[i], c.target[i], c.active[i] = l.User, int16(l.Kind), l.Target, l.On
		c.sinceMs[i], c.expiresMs[i], c.state[i], c.version[i] = l.SinceMs, l.ExpiresMs, int16(l.State), l.Version
	}
	return c
}

// upsertLinksSQL is upsertSQL for the links table.
var upsertLinksSQL = `INSERT INTO links AS l (user_id, kind, target_id, active, since_ms, expires_ms, state, version)
SELECT * FROM unnest($1::bigint[], $2::smallint[], $3::bigint[], $4::boolean[], $5::bigint[], $6::bigint[], $7::smallint[], $8::bigint[])
	AS x(user_id, kind, target_id, active, since_ms, expires_ms, state, version)
WHERE x.version >= ` + horizonSQL + ` OR x.kind <> ALL (` + purgedKinds + `)
	OR EXISTS (SELECT FROM links o WHERE o.user_id = x.user_id AND o.kind = x.kind AND o.target_id = x.target_id)
ON CONFLICT (user_id, kind, target_id) DO UPDATE
SET active = excluded.active, since_ms = excluded.since_ms, expires_ms = excluded.expires_ms, state = excluded.state,
	version = excluded.version
WHERE l.version < excluded.version`

// Apply records a batch of events read from the event log, and lastSeq,
// the stream sequence of the batch's last event, in one transaction: when
// Apply returns nil, the batch is committed (and flushed, see Open) and so
// is lastSeq; when it returns an error, nothing of it is, unless the
// connection was lost during the commit, when all of it may be (a
// redelivery then changes nothing twice).
//
// Each event is a conditional upsert of each edge it sets (its Effects:
// follows in edges, the other kinds in links; a block is five rows): each
// takes effect only if its version is greater than that edge's stored
// version. Duplicates, redeliveries and any order of the same events
// therefore converge to the highest version of each edge, and an event
// older than the stored state changes nothing. Off edges are kept as
// tombstones, so a late older event cannot bring an edge back. The stored
// sequence never moves backward: a lastSeq below it leaves it unchanged
// (the events are still applied). Concurrent Applies, from this process
// or others, are safe: each writes its edges in key order and the
// sequence last, so they wait for each other only inside the server, and
// never in a cycle: edges, then links, each in key order.
//
// A change older than the tombstone horizon (see PurgeTombstones) to an
// edge with no row is refused: not written, and passed to the function of
// WithRefused once the batch is committed (the rest of the batch is
// applied). Its edge may have had a newer tombstone, since removed. Each
// Apply holds the horizon's row with a share lock, which a purge step
// waits for (and the other way round), so the horizon it compares with is
// the one of the rows it writes over.
//
// Apply returns the number of rows changed (created or overwritten). A
// follow's end of the request of its pair is its own edges row (see
// row.Link.Settle): a batch of follows writes edges alone.
// Every event is checked before anything is written: an invalid event
// (Event.Validate), or a version or lastSeq of 2^63 or more, returns an
// error with its code (EInvalidArgument, EInvalidID, ESelfFollow) and
// applies nothing. A server that cannot be reached, or a transaction that
// cannot go through for now, returns EUnavailable (see translate).
func (s *Store) Apply(ctx context.Context, events []fg.Event, lastSeq uint64) (changed int, err error) {
	rows, err := row.Batch(events, lastSeq)
	if err != nil {
		return 0, fmt.Errorf("postgres: apply: %w", err)
	}
	// The statements go in one pipeline, ended by one Sync: one round trip,
	// and one implicit transaction that commits when the server reaches the
	// Sync, or rolls back whole at the first error. The meta row, which
	// every Apply writes, comes last: it is locked only once the edges are,
	// and for the shortest time.
	b := &pgx.Batch{}
	count := func(tag pgconn.CommandTag) error {
		changed += int(tag.RowsAffected())
		return nil
	}
	var horizon int64
	var refused []fg.Refusal
	b.Queue(lockHorizonSQL).QueryRow(func(r pgx.Row) error { return r.Scan(&horizon) })
	if len(rows.Edges) > 0 {
		c := columnsOf(rows.Edges)
		b.Queue(refusedSQL, c.follower, c.followee, c.following, c.version).Query(func(rs pgx.Rows) error {
			var e row.Edge
			_, err := pgx.ForEachRow(rs, []any{&e.Follower, &e.Followee, &e.Following, &e.Version}, func() error {
				refused = append(refused, e.Refusal(horizon))
				return nil
			})
			return err
		})
		b.Queue(upsertSQL, c.follower, c.followee, c.following, c.sinceMs, c.version).Exec(count)
	}
	if len(rows.Links) > 0 {
		c := linkColumnsOf(rows.Links)
		b.Queue(refusedLinksSQL, c.user, c.kind, c.target, c.active, c.version).Query(func(rs pgx.Rows) error {
			var l row.Link
			var kind int16
			_, err := pgx.ForEachRow(rs, []any{&l.User, &kind, &l.Target, &l.On, &l.Version}, func() error {
				l.Kind = fg.Kind(kind)
				refused = append(refused, l.Refusal(horizon))
				return nil
			})
			return err
		})
		b.Queue(upsertLinksSQL, c.user, c.kind, c.target, c.active, c.sinceMs, c.expiresMs, c.state, c.version).Exec(count)
	}
	b.Queue(moveSeqSQL, int64(lastSeq))
	// Close reads every result up to the server's answer to the Sync, which
	// comes after the commit: a nil error means committed.
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return 0, fmt.Errorf("postgres: apply: %w", translate(err))
	}
	s.refused.Report(refused)
	return changed, nil
}

// horizonSQL is the tombstone horizon, in a statement.
const horizonSQL = `(SELECT value FROM meta WHERE key = '` + row.MetaHorizon + `')`

// lockHorizonSQL reads the tombstone horizon and holds its row with a
// share lock until the transaction ends: a purge step, which raises it
// first, waits for the transaction, or the transaction for the step.
const lockHorizonSQL = `SELECT value FROM meta WHERE key = '` + row.MetaHorizon + `' FOR SHARE`

// refusedSQL returns the rows of upsertSQL's arrays (but since_ms) that
// it leaves out: older than the tombstone horizon, of an edge with no row.
const refusedSQL = `SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::boolean[], $4::bigint[]) AS x(follower, followee, following, version)
WHERE x.version < ` + horizonSQL + `
	AND NOT EXISTS (SELECT FROM edges o WHERE o.follower = x.follower AND o.followee = x.followee)`

// refusedLinksSQL is refusedSQL for upsertLinksSQL (user, kind, target,
// active and version): a user's setting is never refused (row.Refuse).
var refusedLinksSQL = `SELECT * FROM unnest($1::bigint[], $2::smallint[], $3::bigint[], $4::boolean[], $5::bigint[]) AS x(user_id, kind, target_id, active, version)
WHERE x.version < ` + horizonSQL + ` AND x.kind = ANY (` + purgedKinds + `)
	AND NOT EXISTS (SELECT FROM links o WHERE o.user_id = x.user_id AND o.kind = x.kind AND o.target_id = x.target_id)`

// purgedKinds is row.PurgedKinds as an array: the kinds of links whose
// tombstones are removed, and so whose changes may be refused.
var purgedKinds = func() string {
	var ks []string
	for _, k := range row.PurgedKinds {
		ks = append(ks, strconv.Itoa(int(k)))
	}
	return "'{" + strings.Join(ks, ",") + "}'::smallint[]"
}()

// moveSeqSQL moves the stored sequence forward to $1.
const moveSeqSQL = `UPDATE meta SET value = greatest(value, $1) WHERE key = 'last_seq'`

// importChunk is how many events Import checks and sends in one COPY.
const importChunk = 64 << 10

// Import loads events into the store in one transaction, for
// `followgraph import`, and returns the number of rows written (edges
// created, plus edges overwritten by a higher version). It leaves the
// stored sequence alone. Events may come in any order, with several
// versions of one edge; as with Apply, the highest version of each edge
// wins, so importing into a store that has edges, or while Apply runs, is
// correct too.
//
// The events are copied (COPY, binary) into a temporary table, which is
// not written to the WAL and has no index, then written to edges by one
// upsert of the highest version of each edge, in key order. Memory holds
// one chunk of events at a time. Into an empty store, the list indexes are
// dropped before the upsert and built again after it, in the same
// transaction: sorting once is several times faster than a million
// insertions at random places (see dropListIndexes). Until the import
// commits, other sessions then wait for the edges table, reads included.
// Imports run one at a time (see importLock).
//
// An invalid event (as for Apply) returns an error and imports nothing.
// So does the first event, in the order given, that is the first of its
// edge, is older than the tombstone horizon, and whose edge the store
// holds no row of: the error is its followgraph.Refusal (code
// EBeforeHorizon), since the edge may have had a newer tombstone, since
// removed.
func (s *Store) Import(ctx context.Context, events iter.Seq[fg.Event]) (int, error) {
	var changed int64
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// First, before any lock on edges (see importLock).
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, importLock); err != nil {
			return err
		}
		var horizon int64
		if err := tx.QueryRow(ctx, lockHorizonSQL).Scan(&horizon); err != nil {
			return err
		}
		// Sorting a million rows for DISTINCT ON in the default 4 MB of
		// work_mem spills to disk several times over.
		if _, err := tx.Exec(ctx, `SET LOCAL work_mem = '256MB'`); err != nil {
			return err
		}
		// ord is each event's place in the import, for the refusal.
		if _, err := tx.Exec(ctx, `CREATE TEMPORARY TABLE edges_import (LIKE edges, ord bigint NOT NULL) ON COMMIT DROP`); err != nil {
			return err
		}
		var ord int64
		for chunk, err := range row.Chunks(events, importChunk) {
			if err != nil {
				return err
			}
			if _, err := tx.CopyFrom(ctx, pgx.Identifier{"edges_import"},
				[]string{"follower", "followee", "following", "since_ms", "version", "ord"},
				pgx.CopyFromSlice(len(chunk), func(i int) ([]any, error) {
					e := chunk[i]
					return []any{e.Follower, e.Followee, e.Following, e.SinceMs, e.Version, ord + int64(i)}, nil
				})); err != nil {
				return err
			}
			ord += int64(len(chunk))
		}
		if horizon > 0 {
			var e row.Edge
			// The horizon written in: the simple protocol, as below.
			switch err := tx.QueryRow(ctx, fmt.Sprintf(firstRefusedSQL, horizon)).Scan(&e.Follower, &e.Followee, &e.Following, &e.Version); {
			case err == nil:
				return e.Refusal(horizon)
			case !errors.Is(err, pgx.ErrNoRows):
				return err
			}
		}
		rebuild, err := dropListIndexes(ctx, tx)
		if err != nil {
			return err
		}
		// No parameters: the simple protocol, so no statement naming this
		// transaction's temporary table is prepared and cached.
		tag, err := tx.Exec(ctx, `INSERT INTO edges AS e (follower, followee, following, since_ms, version)
			SELECT DISTINCT ON (follower, followee) follower, followee, following, since_ms, version
			FROM edges_import
			ORDER BY follower, followee, version DESC
			ON CONFLICT (follower, followee) DO UPDATE
			SET following = excluded.following, since_ms = excluded.since_ms, version = excluded.version
			WHERE e.version < excluded.version`)
		if err != nil {
			return err
		}
		changed = tag.RowsAffected()
		for _, def := range rebuild {
			if _, err := tx.Exec(ctx, def); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("postgres: import: %w", translate(err))
	}
	return int(changed), nil
}

// firstRefusedSQL returns the first event of an import (by ord) that is
// the first of its edge, older than the tombstone horizon (%d), of an edge
// with no row; see Import.
const firstRefusedSQL = `SELECT follower, followee, following, version FROM (
	SELECT DISTINCT ON (follower, followee) follower, followee, following, version, ord
	FROM edges_import ORDER BY follower, followee, ord) f
WHERE version < %d AND NOT EXISTS (SELECT FROM edges e WHERE e.follower = f.follower AND e.followee = f.followee)
ORDER BY ord LIMIT 1`

// importLock is the key of the transaction-level advisory lock that
// serializes Imports. Each takes it first, before any lock on edges: two
// Imports into an empty store would otherwise both hold a shared lock on
// edges (from reading it) and both wait for the exclusive lock that
// dropping its indexes takes, a deadlock.
const importLock int64 = migrateLock + 2

// dropListIndexes drops the indexes of edges other than its primary key,
// if edges is empty, and returns the statements that create them again:
// Import runs them once the rows are in. Building an index from one sort
// takes a fraction of the time of inserting the rows into it one by one
// (docs/BENCHMARKS.md).
//
// An Apply that inserts rows between the check and the drop is harmless:
// the upsert converges whatever the table holds, and the indexes are built
// from all of it. The drop takes the table's exclusive lock, so nothing
// else reads or writes edges until the import commits.
func dropListIndexes(ctx context.Context, tx pgx.Tx) (create []string, err error) {
	var empty bool
	if err := tx.QueryRow(ctx, `SELECT NOT EXISTS (SELECT FROM edges)`).Scan(&empty); err != nil || !empty {
		return nil, err
	}
	rows, err := tx.Query(ctx, `SELECT format('DROP INDEX %I.%I', n.nspname, c.relname), pg_get_indexdef(i.indexrelid)
		FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE i.indrelid = 'edges'::regclass AND NOT i.indisprimary ORDER BY c.relname`)
	if err != nil {
		return nil, err
	}
	var drop []string
	var d, c string
	if _, err := pgx.ForEachRow(rows, []any{&d, &c}, func() error {
		drop, create = append(drop, d), append(create, c)
		return nil
	}); err != nil {
		return nil, err
	}
	for _, d := range drop {
		if _, err := tx.Exec(ctx, d); err != nil {
			return nil, err
		}
	}
	if len(create) > 0 {
		// Each index is built from one sort, in memory rather than in
		// temporary files.
		if _, err := tx.Exec(ctx, `SET LOCAL maintenance_work_mem = '256MB'`); err != nil {
			return nil, err
		}
	}
	return create, nil
}
