package followgraph

import (
	"context"
	"slices"
	"strings"
	"time"
)

// Limits of the API, shared by every engine and the HTTP layer.
const (
	DefaultLimit    = 20    // page size when none is asked for
	MaxLimit        = 1000  // largest page
	MaxCountIDs     = 1000  // ids in one Counts call
	MaxRelationIDs  = 10000 // ids in one Relations call
	MaxSuggestLimit = MaxLimit
)

// Relation is how a user stands to another user x.
type Relation string

const (
	RelationNone      Relation = "none"      // neither follows the other
	RelationFollowing Relation = "following" // user follows x only
	RelationFollower  Relation = "follower"  // x follows user only
	RelationMutual    Relation = "mutual"    // both
	RelationSelf      Relation = "self"      // x is user
)

// RelationOf returns the relation given the two directions.
func RelationOf(following, followedBy bool) Relation {
	switch {
	case following && followedBy:
		return RelationMutual
	case following:
		return RelationFollowing
	case followedBy:
		return RelationFollower
	}
	return RelationNone
}

// FollowResult is the outcome of Follow and Approve.
type FollowResult struct {
	Created bool      // false when user already followed (or had already asked to follow) target
	Since   time.Time // when the follow (or the request) happened: the original time if not Created
	// Requested is true when target is private and user does not follow
	// it: a follow request was made (or existed), not a follow.
	Requested bool
}

// Edge is the state of user→target as IsFollowing reports it.
type Edge struct {
	Following bool
	Since     time.Time // zero when not following
}

// Counts are a user's maintained counters.
type Counts struct {
	ID             UserID
	FollowingCount int64
	FollowerCount  int64
	FollowRequests int64 // pending follow requests to the user
	// State is the user's account state: a user who is not active has
	// no edges in its counts (all three are 0).
	State State
}

// Entry is one user in a list, with the time of the follow that put it there.
type Entry struct {
	ID    UserID
	Since time.Time
}

// Key returns the entry's position in newest-first order.
func (e Entry) Key() Key { return Key{Millis: e.Since.UnixMilli(), ID: e.ID} }

// PageRequest asks for one page of a list. Limit 0 means DefaultLimit;
// otherwise it must be 1 to MaxLimit. Cursor is "" for the first page, or
// the Next of the previous page of the same list.
type PageRequest struct {
	Limit  int
	Cursor string
}

// Size returns the page size asked for, or an EInvalidArgument error.
func (r PageRequest) Size() (int, error) {
	switch {
	case r.Limit == 0:
		return DefaultLimit, nil
	case r.Limit < 1 || r.Limit > MaxLimit:
		return 0, Errorf(EInvalidArgument, "limit %d is out of range: it must be 1 to %d", r.Limit, MaxLimit)
	}
	return r.Limit, nil
}

// Page is one page of a list, newest first (ties: larger id first).
// Next is "" on the last page.
type Page struct {
	Entries []Entry
	Next    string
}

// SetPage is one page of a set query, with Count the exact size of the
// whole result.
type SetPage struct {
	Count   int64
	Entries []Entry
	Next    string
}

// RelationInfo is the relation of a viewer to one user, with the times of
// the two directions (zero where that direction does not exist).
type RelationInfo struct {
	ID              UserID
	Relation        Relation
	FollowingSince  time.Time // viewer → ID
	FollowedBySince time.Time // ID → viewer

	Blocking    bool // viewer blocks ID
	BlockedBy   bool // ID blocks viewer
	Muting      bool // viewer mutes ID (a mute not expired)
	Requested   bool // viewer has a pending follow request to ID
	RequestedBy bool // ID has a pending follow request to viewer
}

// Suggestion is a user that the people a user follows also follow.
// Score is how many of them do; Via names up to three of them.
type Suggestion struct {
	ID    UserID
	Score int64
	Via   []UserID
}

// Graph is the follow graph. Every method validates its input before it
// touches anything: an invalid id returns EInvalidID, a bad limit or too
// many ids EInvalidArgument, a cursor not issued for that list
// EInvalidCursor; such calls change nothing. A backend that cannot be
// reached returns EUnavailable; a write that returns it may still take
// effect (see Hook), and a retry is idempotent.
//
// Lists are ordered by follow time, newest first, ties by id, larger first,
// and paged with keyset cursors: paging through a list never returns an
// entry twice and never skips an entry present the whole time, whatever
// changes meanwhile. Users with no edges are not an error.
//
// Besides follows, the graph keeps blocks, mutes, follow requests and the
// private setting (relationship.go), each change of them an Event as a
// follow's is, passed to the Hook and replayed by Apply the same way.
type Graph interface {
	// Follow makes user follow target. It is idempotent: when user already
	// follows target it returns Created false and the original Since, and
	// changes nothing. Returns ErrSelfFollow when user equals target,
	// ErrBlocked (EBlocked) when either blocks the other, and
	// EFollowingLimit when user already follows, or has pending requests
	// to, the configured maximum of users together.
	//
	// When target is private and user does not follow it, Follow makes a
	// follow request instead (Requested true; Since the request's time,
	// the original one when it was pending already, with Created false).
	// A request is not a follow: it is in no follow list and no follow
	// count until target approves it.
	Follow(ctx context.Context, user, target UserID) (FollowResult, error)

	// Unfollow makes user stop following target, or withdraws user's
	// pending follow request to target. It is idempotent: it returns false
	// when there was neither, and changes nothing.
	Unfollow(ctx context.Context, user, target UserID) (removed bool, err error)

	// Block makes user block target. In the same change it ends the
	// follows user→target and target→user and the pending requests
	// between them (the counts follow); the Hook sees one event. While
	// either blocks the other, a follow or a request between them is
	// ErrBlocked. Idempotent: a block that exists returns Created false and
	// its original Since. ErrSelfFollow when user equals target.
	Block(ctx context.Context, user, target UserID) (LinkResult, error)

	// Unblock ends user's block of target; it restores nothing. It returns
	// false when there was none, and changes nothing then.
	Unblock(ctx context.Context, user, target UserID) (removed bool, err error)

	// Mute makes user mute target for d (0: until unmuted; else positive
	// up to MaxMute, or EInvalidArgument). Muting changes no follow and no
	// count. Repeating it sets the new expiry: Created false, Since the
	// original. A mute is gone from every read at its expiry, as if
	// unmuted then. ErrSelfFollow when user equals target.
	Mute(ctx context.Context, user, target UserID, d time.Duration) (LinkResult, error)

	// Unmute ends user's mute of target. It returns false when there was
	// none (or it had expired), and changes nothing then.
	Unmute(ctx context.Context, user, target UserID) (removed bool, err error)

	// Link reports the edge of kind KindBlock, KindMute or KindRequest from
	// user to target (any other kind is EInvalidArgument): whether it is
	// on, since when, and a mute's expiry.
	Link(ctx context.Context, kind Kind, user, target UserID) (Link, error)

	// Links returns a page of the list named list (ListBlocks, ListMutes
	// or ListFollowRequests, else EInvalidArgument) of user: the users
	// user blocks, the users user mutes, the users whose follow requests
	// to user are pending; Since is when each was made.
	Links(ctx context.Context, list string, user UserID, req PageRequest) (Page, error)

	// Approve approves requester's pending follow request to user: the
	// follow requester→user exists from then on, with Since the approval
	// time. When requester already follows user it returns Created false
	// and the follow's Since. With neither, it is ENoRequest and changes
	// nothing.
	Approve(ctx context.Context, user, requester UserID) (FollowResult, error)

	// RemoveFollower ends the follow follower→user, or rejects follower's
	// pending request to user, whatever user's setting. It returns false
	// when there was neither, and changes nothing then.
	RemoveFollower(ctx context.Context, user, follower UserID) (removed bool, err error)

	// Settings returns user's settings (a user never set is public).
	Settings(ctx context.Context, user UserID) (Settings, error)

	// SetPrivate sets whether user's account is private. Turning it off
	// approves every pending request to user, each as Approve would; that
	// may finish after SetPrivate returns (the engine documents how), and
	// repeating SetPrivate(false) goes on with whatever is left.
	SetPrivate(ctx context.Context, user UserID, private bool) (Settings, error)

	// State returns user's account state (a user never set is active,
	// with a zero Since), with Pending what its job has left.
	State(ctx context.Context, user UserID) (AccountState, error)

	// SetState sets user's account state (state.go): the state holds at
	// once, new writes obey it at once, and the job of its edges runs in
	// the background (JobRunner). Setting the state user already has
	// changes nothing and returns it. A deleted user's state is final:
	// any other is ErrTargetInactive. An invalid state is EInvalidArgument.
	//
	// Every write by a user who is not active is ErrUserInactive; a
	// follow or request of one is ErrTargetInactive, and so is a block
	// or mute of a deleted one. A read about a user who is not active
	// answers as for a user with no edges (Counts with its State); what
	// others' reads show of it is what its job has changed so far. Other
	// writes that touch a hidden user's stored edges (unfollow, unblock,
	// unmute, block, mute, remove a follower, approve) apply to them as
	// stored, so what comes back on StateActive is what remains.
	SetState(ctx context.Context, user UserID, s State) (AccountState, error)

	// IsFollowing reports whether user follows target, and since when.
	IsFollowing(ctx context.Context, user, target UserID) (Edge, error)

	// Counts returns the counters of each id, in request order (duplicates
	// repeated). At most MaxCountIDs ids.
	Counts(ctx context.Context, ids []UserID) ([]Counts, error)

	// Following returns a page of the users that user follows.
	Following(ctx context.Context, user UserID, req PageRequest) (Page, error)

	// Followers returns a page of the users that follow user.
	Followers(ctx context.Context, user UserID, req PageRequest) (Page, error)

	// Relations returns the relation of viewer to each id, in request order
	// (duplicates repeated; the viewer itself is RelationSelf), with the
	// flags of blocks, mutes and requests both ways. At most
	// MaxRelationIDs ids.
	Relations(ctx context.Context, viewer UserID, ids []UserID) ([]RelationInfo, error)

	// Mutuals returns the users that user follows and that follow user.
	// Since is when user followed them.
	Mutuals(ctx context.Context, user UserID, req PageRequest) (SetPage, error)

	// CommonFollowing returns the users that both user and other follow.
	// Since is when user followed them.
	CommonFollowing(ctx context.Context, user, other UserID, req PageRequest) (SetPage, error)

	// CommonFollowers returns the users that follow both user and other.
	// Since is when they followed user.
	CommonFollowers(ctx context.Context, user, other UserID, req PageRequest) (SetPage, error)

	// KnownFollowers returns the users that user follows and that follow
	// target ("followed by people you follow"). Since is when user
	// followed them.
	KnownFollowers(ctx context.Context, user, target UserID, req PageRequest) (SetPage, error)

	// Suggestions returns up to limit users followed by the people user
	// follows, excluding user, those user already follows or has asked to
	// follow, and those user blocks, is blocked by or mutes, ordered by
	// Score, highest first, ties by id, smaller first. limit 0 means
	// DefaultLimit; otherwise 1 to MaxSuggestLimit. An engine may bound the
	// work on very large neighbourhoods; it documents how.
	Suggestions(ctx context.Context, user UserID, limit int) ([]Suggestion, error)
}

// Applier is implemented by engines that can replay events, from the event
// log or the durable store.
type Applier interface {
	// Apply makes each event's change unless the edge already has a change
	// of an equal or higher version. It is idempotent, and any order of the
	// same events, with duplicates, converges to the same state: for each
	// edge, that of its highest version. Apply produces no new events.
	// An invalid event returns an error and nothing of the batch is applied.
	Apply(ctx context.Context, events []Event) error
}

// Hook receives the event of every effective change a write makes. An
// engine calls it once per change, after deciding the change and its
// version and before the write returns; a follow's event has the returned
// Since as its time. A write that changes nothing (a follow of an edge that
// exists, an unfollow of one that does not, a write refused for its input
// or the following limit) calls no hook. When the hook returns an error the
// write fails, and its outcome is unknown to the caller, as the API's 503
// says: the change may take effect; a retry is idempotent. A hook error of
// code EUnavailable reaches the caller with that code. The option that
// installs the hook says what the engine keeps beyond this: whether reads
// see a change while its hook runs, what a failed hook leaves, which code
// another error gets. The service's hook makes the event durable in the
// event log.
type Hook func(ctx context.Context, e Event) error

// The lists that take cursors, by the name their scope starts with (they
// are also the last segment of their API paths). Every engine and the HTTP
// layer name them the same, so a cursor is valid on any node and engine.
const (
	ListFollowing       = "following"
	ListFollowers       = "followers"
	ListMutuals         = "mutuals"
	ListCommonFollowing = "common-following"
	ListCommonFollowers = "common-followers"
	ListKnownFollowers  = "known-followers"
)

// Scope names a list for its cursors, such as Scope(ListFollowers, 42), so
// that a cursor of one list is rejected by another.
func Scope(list string, ids ...UserID) string {
	var b strings.Builder
	b.WriteString(list)
	for _, id := range ids {
		b.WriteByte('/')
		b.WriteString(id.String())
	}
	return b.String()
}

// CheckSuggestLimit returns the number of suggestions asked for, or an
// EInvalidArgument error.
func CheckSuggestLimit(limit int) (int, error) {
	return PageRequest{Limit: limit}.Size()
}

// PageQuery is a PageRequest checked for one list: what an engine needs to
// answer it.
type PageQuery struct {
	Size  int    // entries per page
	Scope string // the list's cursor scope (see Scope)
	After *Key   // the page starts strictly after this position; nil: at the start
}

// Query checks r for the list named list of the users ids (see Scope): an
// invalid id returns EInvalidID, a bad limit EInvalidArgument, a cursor
// not issued for that list EInvalidCursor.
func (r PageRequest) Query(list string, ids ...UserID) (PageQuery, error) {
	if err := CheckIDs(ids...); err != nil {
		return PageQuery{}, err
	}
	size, err := r.Size()
	if err != nil {
		return PageQuery{}, err
	}
	q := PageQuery{Size: size, Scope: Scope(list, ids...)}
	k, ok, err := DecodeCursor(q.Scope, r.Cursor)
	if err != nil {
		return PageQuery{}, err
	}
	if ok {
		q.After = &k
	}
	return q, nil
}

// Page returns the page of es, the list's entries after q.After in order:
// the first Size of them, with Next set when es holds more.
func (q PageQuery) Page(es []Entry) Page {
	if len(es) <= q.Size {
		return Page{Entries: es}
	}
	es = es[:q.Size]
	return Page{Entries: es, Next: EncodeCursor(q.Scope, es[q.Size-1].Key())}
}

// PageOf returns the page of q among the entries with the given keys, in
// any order.
func (q PageQuery) PageOf(keys []Key) Page {
	if q.After != nil {
		keys = slices.DeleteFunc(keys, func(k Key) bool { return !q.After.Before(k) })
	}
	slices.SortFunc(keys, Key.Compare)
	keys = keys[:min(len(keys), q.Size+1)]
	es := make([]Entry, len(keys))
	for i, k := range keys {
		es[i] = Entry{ID: k.ID, Since: Millis(k.Millis)}
	}
	return q.Page(es)
}
