package postgres

import (
	"context"
	"fmt"
	"iter"
	"math"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/store/internal/row"
)

// eventsBatch is how many rows Events reads per query.
const eventsBatch = 10_000

// Events yields the state of every edge as one event, in (follower,
// followee) order, for loading an engine: an OpFollow at the edge's
// version for a live edge (its time is the follow time), an OpUnfollow at
// its version for an unfollowed one, which the engine keeps as a tombstone
// so that a late older follow cannot resurrect it.
//
// The rows are read in batches of eventsBatch, each starting after the
// last key of the previous one (keyset paging on the primary key), all in
// one repeatable-read, read-only transaction: the events are one
// consistent state of the store, memory does not grow with the number of
// edges, no result is left open on the connection while the caller works
// on a batch, and writes go on meanwhile (they are not seen). Stopping the
// iteration early ends the transaction. An error is yielded once, with a
// zero Event, and ends the sequence.
// To load an engine while writes go on, read the log first and Events
// second (recovery.Load says why).
func (s *Store) Events(ctx context.Context) iter.Seq2[fg.Event, error] {
	return func(yield func(fg.Event, error) bool) {
		fail := func(err error) { yield(fg.Event{}, fmt.Errorf("postgres: events: %w", translate(err))) }
		tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
		if err != nil {
			fail(err)
			return
		}
		defer tx.Rollback(ctx) // read only: nothing to commit
		var after row.Edge     // ids are positive: (0, 0) is before every key
		batch := make([]row.Edge, 0, eventsBatch)
		for {
			rows, err := tx.Query(ctx, `SELECT follower, followee, following, version FROM edges
				WHERE (follower, followee) > ($1, $2)
				ORDER BY follower, followee LIMIT $3`, after.Follower, after.Followee, eventsBatch)
			if err != nil {
				fail(err)
				return
			}
			batch = batch[:0]
			var e row.Edge
			_, err = pgx.ForEachRow(rows, []any{&e.Follower, &e.Followee, &e.Following, &e.Version}, func() error {
				batch = append(batch, e)
				return nil
			})
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
			after = batch[len(batch)-1]
		}
		var last row.Link // (0, 0, 0) is before every key
		links := make([]row.Link, 0, eventsBatch)
		for {
			rows, err := tx.Query(ctx, linksAfterSQL, last.User, int16(last.Kind), last.Target, eventsBatch)
			if err != nil {
				fail(err)
				return
			}
			links = links[:0]
			var l row.Link
			var kind, state int16
			var followVersion int64
			_, err = pgx.ForEachRow(rows, []any{&l.User, &kind, &l.Target, &l.On, &l.SinceMs, &l.ExpiresMs, &l.Version, &state, &followVersion}, func() error {
				l.Kind, l.State = fg.Kind(kind), fg.State(state)
				links = append(links, l.Settle(followVersion))
				return nil
			})
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
			last = links[len(links)-1]
		}
	}
}

// linksAfterSQL reads the links after the key ($1, $2, $3), at most $4,
// for Events.
var linksAfterSQL = row.LinksSelect + `
	WHERE (l.user_id, l.kind, l.target_id) > ($1, $2, $3)
	ORDER BY l.user_id, l.kind, l.target_id LIMIT $4`

// LastSeq returns the stream sequence recorded by the last Apply, 0 for a
// new store: everything in the log up to it is in the store. The start-up
// check compares it with the log's sequences (package recovery); loading
// an engine does not need it, as the log is replayed whole.
func (s *Store) LastSeq(ctx context.Context) (uint64, error) {
	var seq int64
	if err := s.pool.QueryRow(ctx, `SELECT value FROM meta WHERE key = 'last_seq'`).Scan(&seq); err != nil {
		return 0, fmt.Errorf("postgres: last seq: %w", translate(err))
	}
	return uint64(seq), nil
}

// The list queries: the live edges of one user, newest first (ties: the
// larger id first), strictly after the keyset ($2, $3), at most $4. Each
// is a backward range scan of its partial index that reads nothing else
// (an index-only scan once the table is vacuumed), however long the list.
const (
	followingSQL = `SELECT followee, since_ms FROM edges
		WHERE follower = $1 AND following AND (since_ms, followee) < ($2, $3)
		ORDER BY since_ms DESC, followee DESC LIMIT $4`
	followersSQL = `SELECT follower, since_ms FROM edges
		WHERE followee = $1 AND following AND (since_ms, follower) < ($2, $3)
		ORDER BY since_ms DESC, follower DESC LIMIT $4`
)

// Following returns up to limit users that user follows, newest follow
// first (ties: the larger id first), starting strictly after the entry
// whose key is after, or at the start when after is nil. The next page
// starts after the Key of the last entry; it is exact under concurrent
// change: an entry is neither repeated nor skipped unless it was itself
// changed. Following reads the record alone, without the hot copy.
//
// Returns EInvalidID for an invalid user and EInvalidArgument for a limit
// outside 1 to fg.MaxLimit; EUnavailable when the server is.
func (s *Store) Following(ctx context.Context, user fg.UserID, after *fg.Key, limit int) ([]fg.Entry, error) {
	es, err := s.list(ctx, followingSQL, user, after, limit)
	if err != nil {
		return nil, fmt.Errorf("postgres: following: %w", err)
	}
	return es, nil
}

// Followers returns up to limit users that follow user, as Following
// does for the users user follows.
func (s *Store) Followers(ctx context.Context, user fg.UserID, after *fg.Key, limit int) ([]fg.Entry, error) {
	es, err := s.list(ctx, followersSQL, user, after, limit)
	if err != nil {
		return nil, fmt.Errorf("postgres: followers: %w", err)
	}
	return es, nil
}

// list runs query, one of the list queries, with the parameters after
// the first four.
func (s *Store) list(ctx context.Context, query string, user fg.UserID, after *fg.Key, limit int, more ...any) ([]fg.Entry, error) {
	if err := fg.CheckIDs(user); err != nil {
		return nil, err
	}
	if limit < 1 || limit > fg.MaxLimit {
		return nil, fg.Errorf(fg.EInvalidArgument, "limit %d is out of range: it must be 1 to %d", limit, fg.MaxLimit)
	}
	// Every stored time and id is below the largest int64: the first page
	// starts after that.
	k := fg.Key{Millis: math.MaxInt64, ID: fg.MaxUserID}
	if after != nil {
		k = *after
	}
	rows, err := s.pool.Query(ctx, query, append([]any{int64(user), k.Millis, int64(k.ID), limit}, more...)...)
	if err != nil {
		return nil, translate(err)
	}
	es := make([]fg.Entry, 0, limit)
	var id, ms int64
	if _, err := pgx.ForEachRow(rows, []any{&id, &ms}, func() error {
		es = append(es, fg.Entry{ID: fg.UserID(id), Since: fg.Millis(ms)})
		return nil
	}); err != nil {
		return nil, translate(err)
	}
	return es, nil
}

// The link list queries, as followingSQL: the blocks or the mutes ($5
// the kind; $6 the time in ms from which a mute is expired, 0 for
// blocks) of user $1 from links_out, and the pending requests to user $1
// from links_requests, leaving out those a later follow of the pair ended
// (row.Link.Settle, one primary-key probe of edges each): the range also
// holds the approved requests, so a page of a private user's list costs
// its approved requests newer than the page's end as well.
const (
	linksOutSQL = `SELECT target_id, since_ms FROM links
		WHERE user_id = $1 AND kind = $5 AND active AND (since_ms, target_id) < ($2, $3)
		AND (expires_ms = 0 OR expires_ms > $6)
		ORDER BY since_ms DESC, target_id DESC LIMIT $4`
	requestsSQL = `SELECT user_id, since_ms FROM links l
		WHERE target_id = $1 AND kind = 3 AND active AND (since_ms, user_id) < ($2, $3)
		AND NOT EXISTS (SELECT FROM edges e WHERE e.follower = l.user_id AND e.followee = l.target_id AND e.version > l.version)
		ORDER BY since_ms DESC, user_id DESC LIMIT $4`
)

// Links returns a page of the list named list of user, as Following does
// for follows: fg.ListBlocks, the users user blocks; fg.ListMutes, the
// users user mutes, without the mutes expired by the store's clock now;
// fg.ListFollowRequests, the users whose follow requests to user are
// pending. Since is when each block, mute or request was made. Links
// reads the record alone, without the hot copy, and lags it by what the
// persister has not yet applied.
//
// Returns EInvalidArgument for another list or a limit outside 1 to
// fg.MaxLimit, EInvalidID for an invalid user; EUnavailable when the
// server is.
func (s *Store) Links(ctx context.Context, list string, user fg.UserID, after *fg.Key, limit int) ([]fg.Entry, error) {
	var es []fg.Entry
	var err error
	switch list {
	case fg.ListBlocks:
		es, err = s.list(ctx, linksOutSQL, user, after, limit, int16(fg.KindBlock), int64(0))
	case fg.ListMutes:
		es, err = s.list(ctx, linksOutSQL, user, after, limit, int16(fg.KindMute), time.Now().UnixMilli())
	case fg.ListFollowRequests:
		es, err = s.list(ctx, requestsSQL, user, after, limit)
	default:
		err = fg.Errorf(fg.EInvalidArgument, "no list %q: want %s, %s or %s", list, fg.ListBlocks, fg.ListMutes, fg.ListFollowRequests)
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: %s: %w", list, err)
	}
	return es, nil
}

// Counts returns how many users user follows and how many follow user.
//
// The record keeps no counters (they would make every follow and unfollow
// two more row writes, and the rows of a popular user a point where all
// appliers wait): each count is an index-only count of the user's range in
// one list index, at a cost that grows with the count, some milliseconds
// per hundred thousand. The hot copy keeps counters; use it where counts are
// read often.
//
// Returns EInvalidID for an invalid user; EUnavailable when the server is.
func (s *Store) Counts(ctx context.Context, user fg.UserID) (following, followers int64, err error) {
	if err := fg.CheckIDs(user); err != nil {
		return 0, 0, fmt.Errorf("postgres: counts: %w", err)
	}
	if err := s.pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM edges WHERE follower = $1 AND following),
		(SELECT count(*) FROM edges WHERE followee = $1 AND following)`, int64(user)).Scan(&following, &followers); err != nil {
		return 0, 0, fmt.Errorf("postgres: counts: %w", translate(err))
	}
	return following, followers, nil
}

// positionSQL is the store's spelling of the log position's statements.
var positionSQL = row.PositionStatements("key", "greatest", func(i int) string { return "$" + strconv.Itoa(i) + "::bigint" })

// LogPosition returns what the store knows of the event log it is fed
// from (see followgraph.LogPosition): its own identity, the log's (0
// until SaveLogPosition first sets it), the highest sequence applied
// (LastSeq), and the highest the log is known to have stored (raised by
// SaveLogPosition). At start the service compares them with the log, so
// that a log or a store that lost events is noticed.
func (s *Store) LogPosition(ctx context.Context) (fg.LogPosition, error) {
	rows, err := s.pool.Query(ctx, positionSQL.Read)
	if err != nil {
		return fg.LogPosition{}, fmt.Errorf("postgres: log position: %w", translate(err))
	}
	defer rows.Close()
	p, err := row.ScanPosition(rows.Next, rows.Scan)
	if err == nil {
		err = rows.Err()
	}
	if err != nil {
		return fg.LogPosition{}, fmt.Errorf("postgres: log position: %w", translate(err))
	}
	return p, nil
}

// SaveLogPosition records p.Log as the identity of the event log the
// store is fed from, and raises the sequence the log is known to have
// stored to p.Seen (it never lowers it). p.Store and p.Applied are not
// written.
func (s *Store) SaveLogPosition(ctx context.Context, p fg.LogPosition) error {
	if err := row.CheckPosition(p); err != nil {
		return fmt.Errorf("postgres: save log position: %w", err)
	}
	if _, err := s.pool.Exec(ctx, positionSQL.Save, p.Log, int64(p.Seen)); err != nil {
		return fmt.Errorf("postgres: save log position: %w", translate(err))
	}
	return nil
}

// ResetLogPosition sets the log's identity, the sequence applied and the one
// seen to those of p (p.Store is not written), for when an operator has
// accepted a loss: the log was replaced, or its sequence went back.
func (s *Store) ResetLogPosition(ctx context.Context, p fg.LogPosition) error {
	if err := row.CheckPosition(p); err != nil {
		return fmt.Errorf("postgres: reset log position: %w", err)
	}
	if _, err := s.pool.Exec(ctx, positionSQL.Reset, p.Log, int64(p.Applied), int64(p.Seen)); err != nil {
		return fmt.Errorf("postgres: reset log position: %w", translate(err))
	}
	return nil
}
