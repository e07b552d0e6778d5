package postgres

import (
	"context"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/store/internal/row"
)

var _ fg.TombstonePurger = (*Store)(nil)

// TombstoneHorizon returns the store's tombstone horizon (see
// PurgeTombstones): 0 for a store that never purged.
func (s *Store) TombstoneHorizon(ctx context.Context) (fg.Version, error) {
	var v int64
	if err := s.pool.QueryRow(ctx, `SELECT value FROM meta WHERE key = '`+row.MetaHorizon+`'`).Scan(&v); err != nil {
		return 0, fmt.Errorf("postgres: tombstone horizon: %w", translate(err))
	}
	return fg.Version(v), nil
}

// PurgeTombstones removes at most limit tombstones older than below,
// oldest first, and raises the tombstone horizon to just above the newest
// it removes, in one transaction; see followgraph.TombstonePurger. The
// follows' come first, each with the rows of requests of its pair older
// than it, which it ended (row.Link.Settle) and which would otherwise
// stand again; then those of the other edges between two users
// (row.PurgedKinds). The partial indexes of the tombstones (migration
// 0005) find them without a scan.
//
// The step first locks the horizon's row, which every Apply and Import
// holds with a share lock (see Apply): the step waits for those running,
// and those that start meanwhile wait for the step, so a step and a write
// never lock each other's rows in another order. Several processes may
// purge the same database; their steps take turns. A version of 2^63 or
// more, or a limit below 1, is EInvalidArgument.
func (s *Store) PurgeTombstones(ctx context.Context, below fg.Version, limit int) (removed int, more bool, err error) {
	if err := row.CheckPurge(below, limit); err != nil {
		return 0, false, fmt.Errorf("postgres: purge tombstones: %w", err)
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, lockRowSQL); err != nil {
			return err
		}
		removed, err = row.Purge(limit, func(k fg.Kind, n int) (int, int64, error) {
			q, args := purgeEdgesSQL, []any{int64(below), n}
			if k != fg.KindFollow {
				q, args = purgeLinksSQL, append(args, int16(k))
			}
			var gone, newest int64
			err := tx.QueryRow(ctx, q, args...).Scan(&gone, &newest)
			return int(gone), newest, err
		}, func(h int64) error {
			_, err := tx.Exec(ctx, raiseHorizonSQL, h)
			return err
		})
		return err
	})
	if err != nil {
		return 0, false, fmt.Errorf("postgres: purge tombstones: %w", translate(err))
	}
	return removed, removed == limit, nil
}

// RaiseTombstoneHorizon raises the tombstone horizon to h; see
// followgraph.TombstonePurger.
func (s *Store) RaiseTombstoneHorizon(ctx context.Context, h fg.Version) error {
	if err := row.CheckHorizon(h); err != nil {
		return fmt.Errorf("postgres: raise tombstone horizon: %w", err)
	}
	if _, err := s.pool.Exec(ctx, raiseHorizonSQL, int64(h)); err != nil {
		return fmt.Errorf("postgres: raise tombstone horizon: %w", translate(err))
	}
	return nil
}

// The statements of a purge step: $1 is the bound, $2 the most rows, $3
// a link's kind. Each returns how many rows it removed and the newest
// version among them.
const (
	raiseHorizonSQL = `UPDATE meta SET value = greatest(value, $1) WHERE key = '` + row.MetaHorizon + `'`
	lockRowSQL      = `SELECT value FROM meta WHERE key = '` + row.MetaHorizon + `' FOR UPDATE`
)

var (
	// The oldest tombstones of follows, with the requests of their pairs
	// older than them: ended by them, and standing again without them.
	purgeEdgesSQL = `WITH t AS (SELECT follower, followee, version FROM edges WHERE NOT following AND version < $1 ORDER BY version LIMIT $2),
	ended AS (DELETE FROM links l USING t WHERE l.user_id = t.follower AND l.kind = ` + strconv.Itoa(int(fg.KindRequest)) + ` AND l.target_id = t.followee AND l.version < t.version),
	gone AS (DELETE FROM edges e USING t WHERE e.follower = t.follower AND e.followee = t.followee RETURNING e.version)
SELECT count(*), coalesce(max(version), 0) FROM gone`
	purgeLinksSQL = `WITH t AS (SELECT user_id, kind, target_id FROM links WHERE NOT active AND kind = $3 AND version < $1 ORDER BY version LIMIT $2),
	gone AS (DELETE FROM links l USING t WHERE l.user_id = t.user_id AND l.kind = t.kind AND l.target_id = t.target_id RETURNING l.version)
SELECT count(*), coalesce(max(version), 0) FROM gone`
)
