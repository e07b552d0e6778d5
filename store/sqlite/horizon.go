package sqlite

import (
	"context"
	"database/sql"
	"strconv"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/store/internal/row"
)

var _ fg.TombstonePurger = (*Store)(nil)

// TombstoneHorizon returns the store's tombstone horizon (see
// PurgeTombstones): 0 for a store that never purged.
func (s *Store) TombstoneHorizon(ctx context.Context) (fg.Version, error) {
	return sqlHorizon.TombstoneHorizon(ctx, s.r)
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
	return sqlHorizon.PurgeTombstones(ctx, s.w, below, limit)
}

// RaiseTombstoneHorizon raises the tombstone horizon to h; see
// followgraph.TombstonePurger.
func (s *Store) RaiseTombstoneHorizon(ctx context.Context, h fg.Version) error {
	return sqlHorizon.RaiseTombstoneHorizon(ctx, s.w, h)
}

// The statements of a purge step: ?1 is the bound, ?2 the most rows, ?3
// a link's kind. Each removal is of the rows its select (oldest first,
// ties in the index's order) names, and the select's newest version
// raises the horizon.
const (
	oldTombstones = `SELECT follower, followee, version FROM edges WHERE following = 0 AND version < ?1 ORDER BY version LIMIT ?2`
	oldLinks      = `SELECT user_id, kind, target_id, version FROM links WHERE active = 0 AND kind = ?3 AND version < ?1 ORDER BY version LIMIT ?2`
)

// sqlHorizon is the store's tombstone horizon, in its statements.
var sqlHorizon = &row.SQLHorizon{
	Store:     "sqlite",
	Translate: translate,
	Horizon:   `SELECT value FROM meta WHERE key = '` + row.MetaHorizon + `'`,
	Raise:     `UPDATE meta SET value = max(value, ?) WHERE key = '` + row.MetaHorizon + `'`,
	// The requests of the pairs of the tombstones removed, older than
	// them: ended by them, and standing again without them.
	Ended: `DELETE FROM links WHERE kind = ` + strconv.Itoa(int(fg.KindRequest)) + ` AND (user_id, target_id) IN (SELECT follower, followee FROM (` + oldTombstones + `))
		AND version < (SELECT e.version FROM edges e WHERE e.follower = links.user_id AND e.followee = links.target_id)`,
	NewestEdges: `SELECT max(version) FROM (` + oldTombstones + `)`,
	Edges:       `DELETE FROM edges WHERE (follower, followee) IN (SELECT follower, followee FROM (` + oldTombstones + `))`,
	NewestLinks: `SELECT max(version) FROM (` + oldLinks + `)`,
	Links:       `DELETE FROM links WHERE (user_id, kind, target_id) IN (SELECT user_id, kind, target_id FROM (` + oldLinks + `))`,
	LinkArgs:    func(below int64, n int, k fg.Kind) []any { return []any{below, n, k} },
	HeldLink:    `SELECT 1 FROM links WHERE user_id = ? AND kind = ? AND target_id = ?`,
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
			ok, err := row.Exists(st.QueryRowContext(ctx, e.Follower, e.Followee))
			if err != nil {
				return nil, err
			}
			held[e.Key()] = ok
		}
		return held, nil
	}
}
