package sqlite

import (
	"context"
	"fmt"
	"iter"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/store/internal/row"
)

// Events yields the state of every edge as one event, in (follower,
// followee) order, for loading an engine: an OpFollow at the edge's
// version for a live edge (its time is the follow time), an OpUnfollow at
// its version for an unfollowed one, which the engine keeps as a tombstone
// so that a late older follow cannot resurrect it.
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
		rows, err := s.r.QueryContext(ctx,
			`SELECT follower, followee, following, version FROM edges ORDER BY follower, followee`)
		if err != nil {
			yield(fg.Event{}, fmt.Errorf("sqlite: events: %w", translate(err)))
			return
		}
		defer rows.Close()
		for rows.Next() {
			var e row.Edge
			if err := rows.Scan(&e.Follower, &e.Followee, &e.Following, &e.Version); err != nil {
				yield(fg.Event{}, fmt.Errorf("sqlite: events: %w", err))
				return
			}
			if !yield(e.Event(), nil) {
				return
			}
		}
		if err := rows.Err(); err != nil {
			yield(fg.Event{}, fmt.Errorf("sqlite: events: %w", translate(err)))
		}
	}
}
