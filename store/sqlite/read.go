package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"iter"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/store/internal/row"
)

// Events yields the state of every edge as one event, for loading an
// engine: the follows in (follower, followee) order, an OpFollow at the
// edge's version for a live edge (its time is the follow time), an
// OpUnfollow at its version for an unfollowed one, which the engine keeps
// as a tombstone so that a late older follow cannot resurrect it; then the
// links in (user, kind, target) order, each the op that turns its kind on
// or off at its version (a live mute with its Since and Expires; a
// request a later follow ended as an OpUnrequest, see row.Link.Settle; an
// account state as an OpState with its State).
//
// The rows are streamed from one read transaction: the events are one
// consistent state of the store, memory does not grow with the number of
// edges, and writes go on meanwhile (they are not seen). Stopping the
// iteration early ends the transaction. An error is yielded once, with a
// zero Event, and ends the sequence.
// To load an engine while writes go on, read the log first and Events
// second (recovery.Load says why).
func (s *Store) Events(ctx context.Context) iter.Seq2[fg.Event, error] {
	return func(yield func(fg.Event, error) bool) {
		fail := func(err error) { yield(fg.Event{}, fmt.Errorf("sqlite: events: %w", translate(err))) }
		tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			fail(err)
			return
		}
		defer tx.Rollback() // read only: nothing to commit
		var e row.Edge
		ok, err := scanRows(ctx, tx, edgesSQL, func(scan func(...any) error) (fg.Event, error) {
			err := scan(&e.Follower, &e.Followee, &e.Following, &e.Version)
			return e.Event(), err
		}, yield)
		if err != nil {
			fail(err)
			return
		}
		if !ok {
			return
		}
		var l row.Link
		var followVersion int64
		if _, err := scanRows(ctx, tx, row.LinksSelect+` ORDER BY l.user_id, l.kind, l.target_id`, func(scan func(...any) error) (fg.Event, error) {
			err := scan(&l.User, &l.Kind, &l.Target, &l.On, &l.SinceMs, &l.ExpiresMs, &l.Version, &l.State, &followVersion)
			return l.Settle(followVersion).Event(), err
		}, yield); err != nil {
			fail(err)
		}
	}
}

// edgesSQL reads every edge for Events.
const edgesSQL = `SELECT follower, followee, following, version FROM edges ORDER BY follower, followee`

// scanRows yields the event of each row of query, as read by scan, and
// reports whether yield wanted more.
func scanRows(ctx context.Context, tx *sql.Tx, query string, read func(scan func(...any) error) (fg.Event, error),
	yield func(fg.Event, error) bool) (more bool, err error) {
	rows, err := tx.QueryContext(ctx, query)
	if err != nil {
		return false, err
	}
	defer rows.Close()
	for rows.Next() {
		e, err := read(rows.Scan)
		if err != nil {
			return false, err
		}
		if !yield(e, nil) {
			return false, nil
		}
	}
	return true, rows.Err()
}
