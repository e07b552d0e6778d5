package postgres

import (
	"context"
	"fmt"
	"iter"

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
const upsertSQL = `INSERT INTO edges AS e (follower, followee, following, since_ms, version)
SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::boolean[], $4::bigint[], $5::bigint[])
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
const upsertLinksSQL = `INSERT INTO links AS l (user_id, kind, target_id, active, since_ms, expires_ms, state, version)
SELECT * FROM unnest($1::bigint[], $2::smallint[], $3::bigint[], $4::boolean[], $5::bigint[], $6::bigint[], $7::smallint[], $8::bigint[])
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
	if len(rows.Edges) > 0 {
		c := columnsOf(rows.Edges)
		b.Queue(upsertSQL, c.follower, c.followee, c.following, c.sinceMs, c.version).Exec(count)
	}
	if len(rows.Links) > 0 {
		c := linkColumnsOf(rows.Links)
		b.Queue(upsertLinksSQL, c.user, c.kind, c.target, c.active, c.sinceMs, c.expiresMs, c.state, c.version).Exec(count)
	}
	b.Queue(moveSeqSQL, int64(lastSeq))
	// Close reads every result up to the server's answer to the Sync, which
	// comes after the commit: a nil error means committed.
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return 0, fmt.Errorf("postgres: apply: %w", translate(err))
	}
	return changed, nil
}

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
func (s *Store) Import(ctx context.Context, events iter.Seq[fg.Event]) (int, error) {
	var changed int64
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// First, before any lock on edges (see importLock).
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, importLock); err != nil {
			return err
		}
		// Sorting a million rows for DISTINCT ON in the default 4 MB of
		// work_mem spills to disk several times over.
		if _, err := tx.Exec(ctx, `SET LOCAL work_mem = '256MB'`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE TEMPORARY TABLE edges_import (LIKE edges) ON COMMIT DROP`); err != nil {
			return err
		}
		for chunk, err := range row.Chunks(events, importChunk) {
			if err != nil {
				return err
			}
			if _, err := tx.CopyFrom(ctx, pgx.Identifier{"edges_import"},
				[]string{"follower", "followee", "following", "since_ms", "version"},
				pgx.CopyFromSlice(len(chunk), func(i int) ([]any, error) {
					e := chunk[i]
					return []any{e.Follower, e.Followee, e.Following, e.SinceMs, e.Version}, nil
				})); err != nil {
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
