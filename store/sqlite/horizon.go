package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/store/internal/row"
)

var _ fg.TombstonePurger = (*Store)(nil)

// TombstoneHorizon returns the store's tombstone horizon (see
// PurgeTombstones): 0 for a store that never purged.
func (s *Store) TombstoneHorizon(ctx context.Context) (fg.Version, error) {
	var v int64
	if err := s.r.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = '`+row.MetaHorizon+`'`).Scan(&v); err != nil {
		return 0, fmt.Errorf("sqlite: tombstone horizon: %w", translate(err))
	}
	return fg.Version(v), nil
}

// PurgeTombstones removes at most limit tombstones older than below,
// oldest first, and raises the tombstone horizon to just above the newest
// it removes, in one transaction; see followgraph.TombstonePurger. The
// follows' come first, each with the rows of requests of its pair older
// than it, which it ended (row.Link.Settle) and which would otherwise
// stand again; then those of the other edges between two users
// (row.PurgedKinds: an unblock's, an unmute's, a request withdrawn). The
// partial indexes of the tombstones (migration 0006) find them without a
// scan. A version of 2^63 or more, or a limit below 1, is
// EInvalidArgument.
func (s *Store) PurgeTombstones(ctx context.Context, below fg.Version, limit int) (removed int, more bool, err error) {
	if err := row.CheckPurge(below, limit); err != nil {
		return 0, false, fmt.Errorf("sqlite: purge tombstones: %w", err)
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return 0, false, fmt.Errorf("sqlite: purge tombstones: %w", translate(err))
	}
	defer tx.Rollback()
	removed, more, err = purge(ctx, tx, int64(below), limit)
	if err == nil {
		err = tx.Commit()
	}
	if err != nil {
		return 0, false, fmt.Errorf("sqlite: purge tombstones: %w", translate(err))
	}
	return removed, more, nil
}

// RaiseTombstoneHorizon raises the tombstone horizon to h; see
// followgraph.TombstonePurger.
func (s *Store) RaiseTombstoneHorizon(ctx context.Context, h fg.Version) error {
	if err := row.CheckHorizon(h); err != nil {
		return fmt.Errorf("sqlite: raise tombstone horizon: %w", err)
	}
	if _, err := s.w.ExecContext(ctx, raiseHorizonSQL, int64(h)); err != nil {
		return fmt.Errorf("sqlite: raise tombstone horizon: %w", translate(err))
	}
	return nil
}

// The statements of a purge step: ?1 is the bound, ?2 the most rows, ?3
// a link's kind. Each removal is of the rows its select (oldest first,
// ties in the index's order) names, and the select's newest version
// raises the horizon.
const (
	raiseHorizonSQL = `UPDATE meta SET value = max(value, ?) WHERE key = '` + row.MetaHorizon + `'`
	oldTombstones   = `SELECT follower, followee, version FROM edges WHERE following = 0 AND version < ?1 ORDER BY version LIMIT ?2`
	oldLinks        = `SELECT user_id, kind, target_id, version FROM links WHERE active = 0 AND kind = ?3 AND version < ?1 ORDER BY version LIMIT ?2`
)

var (
	// The requests of the pairs of the tombstones removed, older than
	// them: ended by them, and standing again without them.
	purgeEndedSQL = `DELETE FROM links WHERE kind = ` + kindRequest + ` AND (user_id, target_id) IN (SELECT follower, followee FROM (` + oldTombstones + `))
		AND version < (SELECT e.version FROM edges e WHERE e.follower = links.user_id AND e.followee = links.target_id)`
	purgeEdgesSQL = `DELETE FROM edges WHERE (follower, followee) IN (SELECT follower, followee FROM (` + oldTombstones + `))`
	purgeLinksSQL = `DELETE FROM links WHERE (user_id, kind, target_id) IN (SELECT user_id, kind, target_id FROM (` + oldLinks + `))`
	kindRequest   = strconv.Itoa(int(fg.KindRequest))
)

// purge is one step of PurgeTombstones in tx (see row.Purge).
func purge(ctx context.Context, tx *sql.Tx, below int64, limit int) (removed int, more bool, err error) {
	if _, err := tx.ExecContext(ctx, purgeEndedSQL, below, limit); err != nil {
		return 0, false, err
	}
	removed, err = row.Purge(limit, func(k fg.Kind, n int) (int, int64, error) {
		last, remove, args := oldTombstones, purgeEdgesSQL, []any{below, n}
		if k != fg.KindFollow {
			last, remove, args = oldLinks, purgeLinksSQL, append(args, k)
		}
		var v sql.NullInt64
		if err := tx.QueryRowContext(ctx, `SELECT max(version) FROM (`+last+`)`, args...).Scan(&v); err != nil || !v.Valid {
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
	err := tx.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = '`+row.MetaHorizon+`'`).Scan(&v)
	return v, err
}

// heldEdges returns the keys among edges' that tx holds a row of. It
// asks one key at a time: the rows it is asked about are rare (see
// row.Rows.Refuse), or, in an import, usually refused at the first.
func heldEdges(ctx context.Context, tx *sql.Tx) func([]row.Edge) (map[row.EdgeKey]bool, error) {
	return func(edges []row.Edge) (map[row.EdgeKey]bool, error) {
		st, err := tx.PrepareContext(ctx, `SELECT 1 FROM edges WHERE follower = ? AND followee = ?`)
		if err != nil {
			return nil, err
		}
		defer st.Close()
		held := make(map[row.EdgeKey]bool)
		for _, e := range edges {
			ok, err := exists(st.QueryRowContext(ctx, e.Follower, e.Followee))
			if err != nil {
				return nil, err
			}
			held[e.Key()] = ok
		}
		return held, nil
	}
}

// heldLinks is heldEdges for links.
func heldLinks(ctx context.Context, tx *sql.Tx) func([]row.Link) (map[row.LinkKey]bool, error) {
	return func(links []row.Link) (map[row.LinkKey]bool, error) {
		held := make(map[row.LinkKey]bool)
		for _, l := range links {
			ok, err := exists(tx.QueryRowContext(ctx, `SELECT 1 FROM links WHERE user_id = ? AND kind = ? AND target_id = ?`, l.User, l.Kind, l.Target))
			if err != nil {
				return nil, err
			}
			held[l.Key()] = ok
		}
		return held, nil
	}
}

// exists reports whether r has a row.
func exists(r *sql.Row) (bool, error) {
	var one int
	switch err := r.Scan(&one); err {
	case nil:
		return true, nil
	case sql.ErrNoRows:
		return false, nil
	default:
		return false, err
	}
}
