package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"iter"
	"time"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/store/internal/row"
)

// eventsBatch is how many rows Events reads per query.
const eventsBatch = 10_000

// The keyset queries of Events: the first batch, and each batch after
// the edge (?, ?). The condition is spelled out rather than written
// (follower, followee) > (?, ?), which MariaDB reads as a scan of the
// whole index instead of a range.
const (
	eventsFirstSQL = `SELECT follower, followee, following, version FROM edges
		ORDER BY follower, followee LIMIT ?`
	eventsAfterSQL = `SELECT follower, followee, following, version FROM edges
		WHERE follower > ? OR (follower = ? AND followee > ?)
		ORDER BY follower, followee LIMIT ?`
)

// Events yields the state of every edge as one event, in (follower,
// followee) order, for loading an engine: an OpFollow at the edge's
// version for a live edge (its time is the follow time), an OpUnfollow at
// its version for an unfollowed one, which the engine keeps as a tombstone
// so that a late older follow cannot resurrect it.
//
// The events are one consistent state of the store: the rows are read in
// primary-key batches of eventsBatch from one read-only REPEATABLE READ
// transaction, whose InnoDB snapshot is taken at the first read. Writes
// go on meanwhile and are not seen. Memory does not grow with the number
// of edges, and no result set stays open while the caller works on a
// batch (a server gives up on a client that reads a result too slowly,
// after net_write_timeout). The snapshot holds back the server's purge of
// old row versions until the iteration ends, so a caller should not
// linger. Stopping the iteration early ends the transaction. An error is
// yielded once, with a zero Event, and ends the sequence.
// To load an engine while writes go on, read the log first and Events
// second (recovery.Load says why).
func (s *Store) Events(ctx context.Context) iter.Seq2[fg.Event, error] {
	return func(yield func(fg.Event, error) bool) {
		fail := func(err error) { yield(fg.Event{}, fmt.Errorf("mysql: events: %w", translate(err))) }
		tx, err := s.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
		if err != nil {
			fail(err)
			return
		}
		defer tx.Rollback()
		batch := make([]row.Edge, 0, eventsBatch)
		for {
			if len(batch) == 0 {
				batch, err = readEdges(ctx, tx, batch, eventsFirstSQL, eventsBatch)
			} else {
				last := batch[len(batch)-1]
				batch, err = readEdges(ctx, tx, batch[:0], eventsAfterSQL, last.Follower, last.Follower, last.Followee, eventsBatch)
			}
			if err != nil {
				fail(err)
				return
			}
			for _, e := range batch {
				if !yield(e.Event(), nil) {
					return
				}
			}
			if len(batch) < eventsBatch {
				break
			}
		}
		links := make([]row.Link, 0, eventsBatch)
		for {
			if len(links) == 0 {
				links, err = readLinks(ctx, tx, links, linksFirstSQL, eventsBatch)
			} else {
				l := links[len(links)-1]
				links, err = readLinks(ctx, tx, links[:0], linksAfterSQL, l.User, l.User, l.Kind, l.Kind, l.Target, eventsBatch)
			}
			if err != nil {
				fail(err)
				return
			}
			for _, l := range links {
				if !yield(l.Event(), nil) {
					return
				}
			}
			if len(links) < eventsBatch {
				return
			}
		}
	}
}

// The keyset queries of Events for links, as for edges.
var (
	linksFirstSQL = row.LinksSelect + ` ORDER BY l.user_id, l.kind, l.target_id LIMIT ?`
	linksAfterSQL = row.LinksSelect + `
		WHERE l.user_id > ? OR (l.user_id = ? AND (l.kind > ? OR (l.kind = ? AND l.target_id > ?)))
		ORDER BY l.user_id, l.kind, l.target_id LIMIT ?`
)

// readLinks appends to dst the links of query (the columns of
// row.LinksSelect), each as it stands beside its pair's follow row
// (row.Link.Settle), and returns it.
func readLinks(ctx context.Context, tx *sql.Tx, dst []row.Link, query string, args ...any) ([]row.Link, error) {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return dst, err
	}
	defer rows.Close()
	for rows.Next() {
		var l row.Link
		var followVersion int64
		if err := rows.Scan(&l.User, &l.Kind, &l.Target, &l.On, &l.SinceMs, &l.ExpiresMs, &l.Version, &l.State, &followVersion); err != nil {
			return dst, err
		}
		dst = append(dst, l.Settle(followVersion))
	}
	return dst, rows.Err()
}

// readEdges appends to dst the rows (follower, followee, following,
// version) of query, and returns it.
func readEdges(ctx context.Context, tx *sql.Tx, dst []row.Edge, query string, args ...any) ([]row.Edge, error) {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return dst, err
	}
	defer rows.Close()
	for rows.Next() {
		var e row.Edge
		if err := rows.Scan(&e.Follower, &e.Followee, &e.Following, &e.Version); err != nil {
			return dst, err
		}
		dst = append(dst, e)
	}
	return dst, rows.Err()
}

// The list queries. Each is a range of one covering index (edges_following
// or edges_followers: the user, following = 1, then since_ms and the other
// id), read backward from the cursor: the page costs its own size in
// index entries, however long the list.
const (
	followingSQL = `SELECT followee, since_ms FROM edges
		WHERE follower = ? AND following = 1
		ORDER BY since_ms DESC, followee DESC LIMIT ?`
	followingAfterSQL = `SELECT followee, since_ms FROM edges
		WHERE follower = ? AND following = 1 AND (since_ms < ? OR (since_ms = ? AND followee < ?))
		ORDER BY since_ms DESC, followee DESC LIMIT ?`
	followersSQL = `SELECT follower, since_ms FROM edges
		WHERE followee = ? AND following = 1
		ORDER BY since_ms DESC, follower DESC LIMIT ?`
	followersAfterSQL = `SELECT follower, since_ms FROM edges
		WHERE followee = ? AND following = 1 AND (since_ms < ? OR (since_ms = ? AND follower < ?))
		ORDER BY since_ms DESC, follower DESC LIMIT ?`
)

// Following returns up to limit users that user follows, in the order of
// the Graph's lists: by follow time, newest first, ties by id, larger
// first. after is the position (fg.Key) of the last entry of the previous
// page, and the page starts strictly after it; nil starts at the newest.
// Paging so never returns an entry twice nor skips one present the whole
// time, whatever changes meanwhile. Each entry's Since is the follow time.
//
// The store's lists lag the engine's by what the persister has not yet
// applied. An invalid user returns EInvalidID, a limit outside 1 to
// fg.MaxLimit EInvalidArgument.
func (s *Store) Following(ctx context.Context, user fg.UserID, after *fg.Key, limit int) ([]fg.Entry, error) {
	entries, err := s.list(ctx, followingSQL, followingAfterSQL, user, after, limit)
	if err != nil {
		return nil, fmt.Errorf("mysql: following: %w", err)
	}
	return entries, nil
}

// Followers returns up to limit users that follow user, as Following
// does: newest first, after the position after. Each entry's Since is
// when that user followed user.
func (s *Store) Followers(ctx context.Context, user fg.UserID, after *fg.Key, limit int) ([]fg.Entry, error) {
	entries, err := s.list(ctx, followersSQL, followersAfterSQL, user, after, limit)
	if err != nil {
		return nil, fmt.Errorf("mysql: followers: %w", err)
	}
	return entries, nil
}

// The link list queries, as the follow lists': the blocks or the mutes
// of a user (the kind, then the time in ms from which a mute is expired,
// 0 for blocks, follow the user), a range of links_out; the pending
// requests to a user, a range of links_requests, leaving out those a
// later follow of the pair ended (row.Link.Settle, one primary-key probe
// of edges each): the range also holds the approved requests, so a page
// of a private user's list costs its approved requests newer than the
// page's end as well.
const (
	linksOutSQL = `SELECT target_id, since_ms FROM links
		WHERE user_id = ? AND kind = ? AND active = 1 AND (expires_ms = 0 OR expires_ms > ?)
		ORDER BY since_ms DESC, target_id DESC LIMIT ?`
	linksOutAfterSQL = `SELECT target_id, since_ms FROM links
		WHERE user_id = ? AND kind = ? AND active = 1 AND (expires_ms = 0 OR expires_ms > ?)
		AND (since_ms < ? OR (since_ms = ? AND target_id < ?))
		ORDER BY since_ms DESC, target_id DESC LIMIT ?`
	requestsSQL = `SELECT user_id, since_ms FROM links l
		WHERE target_id = ? AND kind = 3 AND active = 1
		AND NOT EXISTS (SELECT 1 FROM edges e WHERE e.follower = l.user_id AND e.followee = l.target_id AND e.version > l.version)
		ORDER BY since_ms DESC, user_id DESC LIMIT ?`
	requestsAfterSQL = `SELECT user_id, since_ms FROM links l
		WHERE target_id = ? AND kind = 3 AND active = 1
		AND NOT EXISTS (SELECT 1 FROM edges e WHERE e.follower = l.user_id AND e.followee = l.target_id AND e.version > l.version)
		AND (since_ms < ? OR (since_ms = ? AND user_id < ?))
		ORDER BY since_ms DESC, user_id DESC LIMIT ?`
)

// Links returns a page of the list named list of user, as Following does
// for follows: fg.ListBlocks, the users user blocks; fg.ListMutes, the
// users user mutes, without the mutes expired by the store's clock now;
// fg.ListFollowRequests, the users whose follow requests to user are
// pending. Since is when each block, mute or request was made. The lists
// lag the engine's by what the persister has not yet applied.
//
// Returns EInvalidArgument for another list or a limit outside 1 to
// fg.MaxLimit, EInvalidID for an invalid user.
func (s *Store) Links(ctx context.Context, list string, user fg.UserID, after *fg.Key, limit int) ([]fg.Entry, error) {
	var es []fg.Entry
	var err error
	switch list {
	case fg.ListBlocks:
		es, err = s.list(ctx, linksOutSQL, linksOutAfterSQL, user, after, limit, fg.KindBlock, int64(0))
	case fg.ListMutes:
		es, err = s.list(ctx, linksOutSQL, linksOutAfterSQL, user, after, limit, fg.KindMute, time.Now().UnixMilli())
	case fg.ListFollowRequests:
		es, err = s.list(ctx, requestsSQL, requestsAfterSQL, user, after, limit)
	default:
		err = fg.Errorf(fg.EInvalidArgument, "no list %q: want %s, %s or %s", list, fg.ListBlocks, fg.ListMutes, fg.ListFollowRequests)
	}
	if err != nil {
		return nil, fmt.Errorf("mysql: %s: %w", list, err)
	}
	return es, nil
}

// list runs a list query: first for the first page, afterSQL for a
// page after a position, with the parameters more after the user's.
func (s *Store) list(ctx context.Context, first, afterSQL string, user fg.UserID, after *fg.Key, limit int, more ...any) ([]fg.Entry, error) {
	if err := fg.CheckIDs(user); err != nil {
		return nil, err
	}
	if limit < 1 || limit > fg.MaxLimit {
		return nil, fg.Errorf(fg.EInvalidArgument, "limit %d is out of range: it must be 1 to %d", limit, fg.MaxLimit)
	}
	var rows *sql.Rows
	var err error
	args := append([]any{int64(user)}, more...)
	if after == nil {
		rows, err = s.db.QueryContext(ctx, first, append(args, limit)...)
	} else {
		rows, err = s.db.QueryContext(ctx, afterSQL, append(args, after.Millis, after.Millis, int64(after.ID), limit)...)
	}
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	entries := make([]fg.Entry, 0, limit)
	for rows.Next() {
		var id, ms int64
		if err := rows.Scan(&id, &ms); err != nil {
			return nil, err
		}
		entries = append(entries, fg.Entry{ID: fg.UserID(id), Since: fg.Millis(ms)})
	}
	if err := rows.Err(); err != nil {
		return nil, translate(err)
	}
	return entries, nil
}

// countsSQL counts both lists of a user in their covering indexes.
const countsSQL = `SELECT
	(SELECT COUNT(*) FROM edges WHERE follower = ? AND following = 1),
	(SELECT COUNT(*) FROM edges WHERE followee = ? AND following = 1)`

// Counts returns how many users user follows and how many follow user,
// from the live edges of the record. They are counted in the two indexes,
// not kept as counters: the cost grows with the counts (a million index
// entries took 0.17 s on MariaDB 10.11 here with the pages in memory, and
// more when they are read from disk). That suits reconciling and checking the engine's maintained
// counters, which answer the API; it does not suit serving requests. An
// invalid user returns EInvalidID.
func (s *Store) Counts(ctx context.Context, user fg.UserID) (following, followers int64, err error) {
	if err := fg.CheckIDs(user); err != nil {
		return 0, 0, fmt.Errorf("mysql: counts: %w", err)
	}
	if err := s.db.QueryRowContext(ctx, countsSQL, int64(user), int64(user)).Scan(&following, &followers); err != nil {
		return 0, 0, fmt.Errorf("mysql: counts: %w", translate(err))
	}
	return following, followers, nil
}
