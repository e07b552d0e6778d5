package row

import (
	"context"
	"database/sql"
	"fmt"

	fg "github.com/followgraph/followgraph"
)

// SQLHorizon is the tombstone horizon of a store on database/sql
// (store/sqlite, store/mysql): the store's statements, and in its methods
// the Go around them that those stores share, which returns the store's
// own errors.
type SQLHorizon struct {
	// Store names the store in its errors ("sqlite"), and Translate is
	// its translation of a driver's error (see the stores' translate).
	Store     string
	Translate func(error) error

	// Horizon selects the horizon; Raise raises it to its one argument.
	Horizon, Raise string
	// Lock, when not empty, selects one row, which a purge step locks
	// first and holds until it ends (the store's writers' lock).
	Lock string
	// Ended removes the rows of requests that the oldest tombstones of
	// follows ended (Link.Settle), which would stand again without them,
	// with the bound and the most rows as arguments.
	Ended string
	// NewestEdges selects the newest version among the oldest tombstones
	// of follows (NULL when there is none), and Edges removes them, with
	// the bound and the most rows as arguments. NewestLinks and Links do
	// the same for the tombstones of the links of a kind, with the
	// arguments of LinkArgs.
	NewestEdges, Edges, NewestLinks, Links string
	// LinkArgs returns the arguments of NewestLinks and Links: the bound
	// below, the most rows n and the kind k, in the store's order.
	LinkArgs func(below int64, n int, k fg.Kind) []any
	// HeldLink selects a row of links by its user, kind and target (see
	// HeldLinks).
	HeldLink string
}

// Querier is a pool or a transaction of database/sql.
type Querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Read returns the tombstone horizon as q sees it.
func (h *SQLHorizon) Read(ctx context.Context, q Querier) (int64, error) {
	var v int64
	err := q.QueryRowContext(ctx, h.Horizon).Scan(&v)
	return v, err
}

// TombstoneHorizon is the store's TombstoneHorizon, read in db.
func (h *SQLHorizon) TombstoneHorizon(ctx context.Context, db *sql.DB) (fg.Version, error) {
	v, err := h.Read(ctx, db)
	if err != nil {
		return 0, fmt.Errorf("%s: tombstone horizon: %w", h.Store, h.Translate(err))
	}
	return fg.Version(v), nil
}

// PurgeTombstones is the store's PurgeTombstones: it checks below and
// limit (CheckPurge), and runs one step in one transaction of db (see
// purge).
func (h *SQLHorizon) PurgeTombstones(ctx context.Context, db *sql.DB, below fg.Version, limit int) (removed int, more bool, err error) {
	if err := CheckPurge(below, limit); err != nil {
		return 0, false, fmt.Errorf("%s: purge tombstones: %w", h.Store, err)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return 0, false, fmt.Errorf("%s: purge tombstones: %w", h.Store, h.Translate(err))
	}
	defer tx.Rollback()
	removed, err = h.purge(ctx, tx, int64(below), limit)
	if err == nil {
		err = tx.Commit()
	}
	if err != nil {
		return 0, false, fmt.Errorf("%s: purge tombstones: %w", h.Store, h.Translate(err))
	}
	return removed, removed == limit, nil
}

// RaiseTombstoneHorizon is the store's RaiseTombstoneHorizon, written
// in db.
func (h *SQLHorizon) RaiseTombstoneHorizon(ctx context.Context, db *sql.DB, v fg.Version) error {
	if err := CheckHorizon(v); err != nil {
		return fmt.Errorf("%s: raise tombstone horizon: %w", h.Store, err)
	}
	if _, err := db.ExecContext(ctx, h.Raise, int64(v)); err != nil {
		return fmt.Errorf("%s: raise tombstone horizon: %w", h.Store, h.Translate(err))
	}
	return nil
}

// purge is one step of PurgeTombstones in tx (see Purge): Lock, then
// Ended, then the removals, each of the rows its select of the newest
// names, and the raise of the horizon. It returns how many tombstones it
// removed.
func (h *SQLHorizon) purge(ctx context.Context, tx *sql.Tx, below int64, limit int) (int, error) {
	if h.Lock != "" {
		var v int64
		if err := tx.QueryRowContext(ctx, h.Lock).Scan(&v); err != nil {
			return 0, err
		}
	}
	if _, err := tx.ExecContext(ctx, h.Ended, below, limit); err != nil {
		return 0, err
	}
	return Purge(limit, func(k fg.Kind, n int) (int, int64, error) {
		newest, remove, args := h.NewestEdges, h.Edges, []any{below, n}
		if k != fg.KindFollow {
			newest, remove, args = h.NewestLinks, h.Links, h.LinkArgs(below, n, k)
		}
		var v sql.NullInt64
		if err := tx.QueryRowContext(ctx, newest, args...).Scan(&v); err != nil || !v.Valid {
			return 0, 0, err
		}
		res, err := tx.ExecContext(ctx, remove, args...)
		if err != nil {
			return 0, 0, err
		}
		gone, err := res.RowsAffected()
		return int(gone), v.Int64, err
	}, func(v int64) error {
		_, err := tx.ExecContext(ctx, h.Raise, v)
		return err
	})
}

// HeldLinks returns the keys among links' that tx holds a row of, for
// Rows.Refuse, asking HeldLink one key at a time: Apply asks only about
// rows below the horizon, which the service never sends while the
// horizon is kept as serve keeps it.
func (h *SQLHorizon) HeldLinks(ctx context.Context, tx *sql.Tx) func([]Link) (map[LinkKey]bool, error) {
	return func(links []Link) (map[LinkKey]bool, error) {
		held := make(map[LinkKey]bool)
		for _, l := range links {
			ok, err := Exists(tx.QueryRowContext(ctx, h.HeldLink, l.User, l.Kind, l.Target))
			if err != nil {
				return nil, err
			}
			held[l.Key()] = ok
		}
		return held, nil
	}
}

// Exists reports whether r, of a select of one column, has a row.
func Exists(r *sql.Row) (bool, error) {
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
