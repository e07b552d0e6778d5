package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/store/internal/row"
)

var _ fg.TombstonePurger = (*Store)(nil)

// TombstoneHorizon returns the store's tombstone horizon (see
// PurgeTombstones): 0 for a store that never purged.
func (s *Store) TombstoneHorizon(ctx context.Context) (fg.Version, error) {
	var v int64
	if err := s.db.QueryRowContext(ctx, horizonSQL).Scan(&v); err != nil {
		return 0, fmt.Errorf("mysql: tombstone horizon: %w", translate(err))
	}
	return fg.Version(v), nil
}

// PurgeTombstones removes at most limit tombstones older than below,
// oldest first, and raises the tombstone horizon to just above the newest
// it removes, in one transaction; see followgraph.TombstonePurger. The
// follows' come first, each with the rows of requests of its pair older
// than it, which it ended (row.Link.Settle) and which would otherwise
// stand again; then those of the other edges between two users
// (row.PurgedKinds). The indexes of the tombstones (migration 0005) find
// them without a scan. The step holds the writers' lock (see lockMeta),
// so Apply and Import wait for it: keep limit to what takes milliseconds.
// A version of 2^63 or more, or a limit below 1, is EInvalidArgument.
func (s *Store) PurgeTombstones(ctx context.Context, below fg.Version, limit int) (removed int, more bool, err error) {
	if err := row.CheckPurge(below, limit); err != nil {
		return 0, false, fmt.Errorf("mysql: purge tombstones: %w", err)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, false, fmt.Errorf("mysql: purge tombstones: %w", translate(err))
	}
	defer tx.Rollback()
	removed, more, err = purge(ctx, tx, int64(below), limit)
	if err == nil {
		err = tx.Commit()
	}
	if err != nil {
		return 0, false, fmt.Errorf("mysql: purge tombstones: %w", translate(err))
	}
	return removed, more, nil
}

// RaiseTombstoneHorizon raises the tombstone horizon to h; see
// followgraph.TombstonePurger.
func (s *Store) RaiseTombstoneHorizon(ctx context.Context, h fg.Version) error {
	if err := row.CheckHorizon(h); err != nil {
		return fmt.Errorf("mysql: raise tombstone horizon: %w", err)
	}
	if _, err := s.db.ExecContext(ctx, raiseHorizonSQL, int64(h)); err != nil {
		return fmt.Errorf("mysql: raise tombstone horizon: %w", translate(err))
	}
	return nil
}

// The statements of a purge step. The tombstones of follows are taken in
// one order (the index's, and the key's for equal versions) by the
// removal of the requests they ended, by their own, and by the read of
// the newest of them.
var (
	horizonSQL      = "SELECT value FROM meta WHERE `key` = '" + row.MetaHorizon + "'"
	raiseHorizonSQL = "UPDATE meta SET value = GREATEST(value, ?) WHERE `key` = '" + row.MetaHorizon + "'"
	oldTombstones   = `SELECT follower, followee, version FROM edges WHERE following = 0 AND version < ? ORDER BY version, follower, followee LIMIT ?`
	purgeEndedSQL   = `DELETE l FROM links l JOIN (` + oldTombstones + `) t
		ON l.user_id = t.follower AND l.kind = ` + strconv.Itoa(int(fg.KindRequest)) + ` AND l.target_id = t.followee
		WHERE l.version < t.version`
	purgeEdgesSQL = `DELETE FROM edges WHERE following = 0 AND version < ? ORDER BY version, follower, followee LIMIT ?`
	oldLinks      = `SELECT version FROM links WHERE active = 0 AND kind = ? AND version < ? ORDER BY version, user_id, target_id LIMIT ?`
	purgeLinksSQL = `DELETE FROM links WHERE active = 0 AND kind = ? AND version < ? ORDER BY version, user_id, target_id LIMIT ?`
)

// purge is one step of PurgeTombstones in tx (see row.Purge), holding
// the writers' lock.
func purge(ctx context.Context, tx *sql.Tx, below int64, limit int) (removed int, more bool, err error) {
	var seq int64
	if err := tx.QueryRowContext(ctx, lockMeta).Scan(&seq); err != nil {
		return 0, false, err
	}
	if _, err := tx.ExecContext(ctx, purgeEndedSQL, below, limit); err != nil {
		return 0, false, err
	}
	removed, err = row.Purge(limit, func(k fg.Kind, n int) (int, int64, error) {
		last, remove, args := oldTombstones, purgeEdgesSQL, []any{below, n}
		if k != fg.KindFollow {
			last, remove, args = oldLinks, purgeLinksSQL, []any{k, below, n}
		}
		var v sql.NullInt64
		if err := tx.QueryRowContext(ctx, `SELECT MAX(version) FROM (`+last+`) t`, args...).Scan(&v); err != nil || !v.Valid {
			return 0, 0, err
		}
		res, err := tx.ExecContext(ctx, remove, args...)
		if err != nil {
			return 0, 0, err
		}
		gone, err := res.RowsAffected()
		return int(gone), v.Int64, err
	}, func(h int64) error {
		_, err := tx.ExecContext(ctx, raiseHorizonSQL, h)
		return err
	})
	return removed, removed == limit, err
}

// readHorizon returns the tombstone horizon as tx sees it.
func readHorizon(ctx context.Context, tx *sql.Tx) (int64, error) {
	var v int64
	err := tx.QueryRowContext(ctx, horizonSQL).Scan(&v)
	return v, err
}

// heldChunk is how many keys heldEdges asks for in one statement.
const heldChunk = 500

// heldEdges returns the keys among edges' that tx holds a row of, asking
// for heldChunk at a time.
func heldEdges(ctx context.Context, tx *sql.Tx) func([]row.Edge) (map[row.EdgeKey]bool, error) {
	return func(edges []row.Edge) (map[row.EdgeKey]bool, error) {
		held := make(map[row.EdgeKey]bool)
		for len(edges) > 0 {
			n := min(len(edges), heldChunk)
			args := make([]any, 0, 2*n)
			for _, e := range edges[:n] {
				args = append(args, e.Follower, e.Followee)
			}
			q := "SELECT follower, followee FROM edges WHERE (follower, followee) IN (" +
				strings.TrimSuffix(strings.Repeat("(?,?),", n), ",") + ")"
			rows, err := tx.QueryContext(ctx, q, args...)
			if err != nil {
				return nil, err
			}
			for rows.Next() {
				var k row.EdgeKey
				if err := rows.Scan(&k.Follower, &k.Followee); err != nil {
					rows.Close()
					return nil, err
				}
				held[k] = true
			}
			if err := rows.Close(); err != nil {
				return nil, err
			}
			if err := rows.Err(); err != nil {
				return nil, err
			}
			edges = edges[n:]
		}
		return held, nil
	}
}

// heldLinks returns the keys among links' that tx holds a row of, one at
// a time: Apply asks only about rows below the horizon, which the service
// never sends while the horizon is kept as serve keeps it.
func heldLinks(ctx context.Context, tx *sql.Tx) func([]row.Link) (map[row.LinkKey]bool, error) {
	return func(links []row.Link) (map[row.LinkKey]bool, error) {
		held := make(map[row.LinkKey]bool)
		for _, l := range links {
			var one int
			err := tx.QueryRowContext(ctx, "SELECT 1 FROM links WHERE user_id = ? AND kind = ? AND target_id = ?", l.User, l.Kind, l.Target).Scan(&one)
			switch err {
			case nil:
				held[l.Key()] = true
			case sql.ErrNoRows:
			default:
				return nil, err
			}
		}
		return held, nil
	}
}
