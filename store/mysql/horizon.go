package mysql

import (
	"context"
	"database/sql"
	"strconv"
	"strings"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/store/internal/row"
)

var _ fg.TombstonePurger = (*Store)(nil)

// TombstoneHorizon returns the store's tombstone horizon (see
// PurgeTombstones): 0 for a store that never purged.
func (s *Store) TombstoneHorizon(ctx context.Context) (fg.Version, error) {
	return sqlHorizon.TombstoneHorizon(ctx, s.db)
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
	return sqlHorizon.PurgeTombstones(ctx, s.db, below, limit)
}

// RaiseTombstoneHorizon raises the tombstone horizon to h; see
// followgraph.TombstonePurger.
func (s *Store) RaiseTombstoneHorizon(ctx context.Context, h fg.Version) error {
	return sqlHorizon.RaiseTombstoneHorizon(ctx, s.db, h)
}

// The statements of a purge step. The tombstones of follows are taken in
// one order (the index's, and the key's for equal versions) by the
// removal of the requests they ended, by their own, and by the read of
// the newest of them.
var (
	oldTombstones = `SELECT follower, followee, version FROM edges WHERE following = 0 AND version < ? ORDER BY version, follower, followee LIMIT ?`
	oldLinks      = `SELECT version FROM links WHERE active = 0 AND kind = ? AND version < ? ORDER BY version, user_id, target_id LIMIT ?`
)

// sqlHorizon is the store's tombstone horizon, in its statements; a
// purge step first takes the writers' lock.
var sqlHorizon = &row.SQLHorizon{
	Store:     "mysql",
	Translate: translate,
	Horizon:   "SELECT value FROM meta WHERE `key` = '" + row.MetaHorizon + "'",
	Raise:     "UPDATE meta SET value = GREATEST(value, ?) WHERE `key` = '" + row.MetaHorizon + "'",
	Lock:      lockMeta,
	Ended: `DELETE l FROM links l JOIN (` + oldTombstones + `) t
		ON l.user_id = t.follower AND l.kind = ` + strconv.Itoa(int(fg.KindRequest)) + ` AND l.target_id = t.followee
		WHERE l.version < t.version`,
	NewestEdges: `SELECT MAX(version) FROM (` + oldTombstones + `) t`,
	Edges:       `DELETE FROM edges WHERE following = 0 AND version < ? ORDER BY version, follower, followee LIMIT ?`,
	NewestLinks: `SELECT MAX(version) FROM (` + oldLinks + `) t`,
	Links:       `DELETE FROM links WHERE active = 0 AND kind = ? AND version < ? ORDER BY version, user_id, target_id LIMIT ?`,
	LinkArgs:    func(below int64, n int, k fg.Kind) []any { return []any{k, below, n} },
	HeldLink:    "SELECT 1 FROM links WHERE user_id = ? AND kind = ? AND target_id = ?",
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
