// Package row holds the row logic the durable stores (store/sqlite,
// store/postgres, store/mysql) share: one row of their edges table (the
// follows) and of their links table (the other kinds of edge: blocks,
// mutes, follow requests, the private setting and the account state),
// built from an event's effects and checked against the range of a signed
// 64-bit column, and the deduplication of a batch of rows before it is
// written; and the Go around their SQL that is the same in each: the log
// position, and the tombstone horizon (SQLHorizon for the stores on
// database/sql).
package row

import (
	"cmp"
	"iter"
	"math"
	"slices"

	fg "github.com/followgraph/followgraph"
)

// MaxVersion bounds the versions and sequences the stores accept: their
// columns (SQLite integers, PostgreSQL bigint, MySQL BIGINT) are signed
// 64-bit. A Version below 2^63 has a millisecond part below 2^43, that
// is, times before the year 2248.
const MaxVersion = math.MaxInt64

// Edge is one row of the edges table.
type Edge struct {
	Follower, Followee int64
	// Following is false for an unfollowed edge (a tombstone). SQLite and
	// MySQL store it as 1 or 0: their drivers bind a bool as 1 or 0, and
	// database/sql scans 1 or 0 into a bool.
	Following bool
	SinceMs   int64 // the time of Version
	Version   int64
}

// Event returns the event that records e, the inverse of FromEvent: an
// OpFollow at the edge's version for a live edge, an OpUnfollow for a
// tombstone. It is what the stores' Events yield for a row.
func (e Edge) Event() fg.Event {
	op := fg.OpUnfollow
	if e.Following {
		op = fg.OpFollow
	}
	return fg.NewEvent(fg.UserID(e.Follower), fg.UserID(e.Followee), op, fg.Version(e.Version))
}

// FromEvent returns the row that records e, a follow or an unfollow (the
// edges table holds follows only), or an error if e is invalid (see
// check) or of another kind.
func FromEvent(e fg.Event) (Edge, error) {
	if err := check(e); err != nil {
		return Edge{}, err
	}
	if e.Op.Kind() != fg.KindFollow {
		return Edge{}, fg.Errorf(fg.EInvalidArgument, "event %s: a %s is not a follow or an unfollow", e.ID(), e.Op)
	}
	return edgeOf(e.User, e.Target, e.Op.On(), e.Version), nil
}

// check returns an error if e is invalid (Event.Validate) or its version
// does not fit a signed 64-bit integer.
func check(e fg.Event) error {
	if err := e.Validate(); err != nil {
		return err
	}
	if e.Version > MaxVersion {
		return fg.Errorf(fg.EInvalidArgument,
			"event %s: version %d is 2^63 or more, beyond the store's range (times after the year 2248)", e.ID(), e.Version)
	}
	return nil
}

func edgeOf(user, target fg.UserID, on bool, v fg.Version) Edge {
	return Edge{Follower: int64(user), Followee: int64(target), Following: on, SinceMs: v.Millis(), Version: int64(v)}
}

// Rows are the rows that record a batch of events: edges (follows) and
// links (every other kind), each deduplicated and in primary-key order.
type Rows struct {
	Edges []Edge
	Links []Link
}

// Batch returns the rows that record a batch of events applied with the
// stream sequence lastSeq, for the stores' Applies, which check all of a
// batch before they write any of it and write all of it in one
// transaction. Each event becomes one row per effect (Event.Effects), each
// to be written conditionally on its own version, deduplicated per key
// keeping the highest version (see Dedupe), except the end of the
// request that a follow's second effect names: the follow's own row
// records it (see Link.Pending), so a batch of follows writes the edges
// table alone, as it did before there were other kinds. An invalid event
// (Event.Validate), a version or a lastSeq that does not fit a signed
// 64-bit integer is an error with its code.
func Batch(events []fg.Event, lastSeq uint64) (Rows, error) {
	if lastSeq > MaxVersion {
		return Rows{}, fg.Errorf(fg.EInvalidArgument, "sequence %d is 2^63 or more", lastSeq)
	}
	rows := Rows{Edges: make([]Edge, 0, len(events))}
	for _, e := range events {
		if err := check(e); err != nil {
			return Rows{}, err
		}
		if e.Op.Kind() == fg.KindFollow {
			rows.Edges = append(rows.Edges, edgeOf(e.User, e.Target, e.Op.On(), e.Version))
			continue
		}
		for x := range e.Effects {
			if x.Kind == fg.KindFollow {
				rows.Edges = append(rows.Edges, edgeOf(x.User, x.Target, x.On, e.Version))
			} else {
				rows.Links = append(rows.Links, linkOf(e, x))
			}
		}
	}
	rows.Edges = Dedupe(rows.Edges)
	rows.Links = DedupeLinks(rows.Links)
	return rows, nil
}

// Dedupe sorts edges in primary-key order and keeps only the highest
// version of each edge, reusing edges' array. Fewer rows to write, B-tree
// pages touched in order, and no statement that names one row twice
// (which PostgreSQL's ON CONFLICT DO UPDATE rejects). The key order also
// makes every applier lock the rows it changes in the same order, so
// concurrent appliers (two persisters, or Apply and Import) wait for each
// other instead of deadlocking.
func Dedupe(edges []Edge) []Edge {
	slices.SortFunc(edges, func(a, b Edge) int {
		if c := cmp.Compare(a.Follower, b.Follower); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Followee, b.Followee); c != 0 {
			return c
		}
		return cmp.Compare(b.Version, a.Version) // highest first, kept by Compact
	})
	return slices.CompactFunc(edges, func(a, b Edge) bool {
		return a.Follower == b.Follower && a.Followee == b.Followee
	})
}

// Chunks yields the rows of events n at a time (the last chunk may be
// shorter, and is not yielded empty), for the stores' Imports, which write
// a chunk at a time. Each chunk reuses the array of the one before it. An
// invalid event (as for FromEvent) is yielded as the error, and ends it.
func Chunks(events iter.Seq[fg.Event], n int) iter.Seq2[[]Edge, error] {
	return func(yield func([]Edge, error) bool) {
		buf := make([]Edge, 0, n)
		for e := range events {
			r, err := FromEvent(e)
			if err != nil {
				yield(nil, err)
				return
			}
			if buf = append(buf, r); len(buf) == n {
				if !yield(buf, nil) {
					return
				}
				buf = buf[:0]
			}
		}
		if len(buf) > 0 {
			yield(buf, nil)
		}
	}
}
