package row

import (
	fg "github.com/followgraph/followgraph"
)

// MetaHorizon is the meta row of the store's tombstone horizon
// (followgraph.TombstonePurger): every tombstone of an edge between two
// users with a version below it may be gone. 0 in a new store; it only
// grows.
const MetaHorizon = "tombstone_horizon"

// PurgedKinds are the kinds of the links rows whose tombstones
// PurgeTombstones removes: the edges between two users. A user's private
// setting and account state are one row per user, and State answers with
// the version of the last change: they stay.
var PurgedKinds = []fg.Kind{fg.KindBlock, fg.KindMute, fg.KindRequest}

// EdgeKey is the primary key of an edges row.
type EdgeKey struct{ Follower, Followee int64 }

// LinkKey is the primary key of a links row.
type LinkKey struct {
	User   int64
	Kind   fg.Kind
	Target int64
}

// Key returns e's primary key.
func (e Edge) Key() EdgeKey { return EdgeKey{e.Follower, e.Followee} }

// Key returns l's primary key.
func (l Link) Key() LinkKey { return LinkKey{l.User, l.Kind, l.Target} }

// Refusal returns the refusal of e's change below horizon.
func (e Edge) Refusal(horizon int64) fg.Refusal {
	return fg.Refusal{Effect: fg.Effect{Kind: fg.KindFollow, User: fg.UserID(e.Follower), Target: fg.UserID(e.Followee), On: e.Following},
		Version: fg.Version(e.Version), Horizon: fg.Version(horizon)}
}

// Refusal returns the refusal of l's change below horizon.
func (l Link) Refusal(horizon int64) fg.Refusal {
	return fg.Refusal{Effect: fg.Effect{Kind: l.Kind, User: fg.UserID(l.User), Target: fg.UserID(l.Target), On: l.On},
		Version: fg.Version(l.Version), Horizon: fg.Version(horizon)}
}

// Refused is what a store's Apply calls, once its batch is committed,
// with each change it refused (the stores' WithRefused); nil, a store's
// default, calls nothing.
type Refused func(fg.Refusal)

// Set sets r to f, unless f is nil.
func (r *Refused) Set(f func(fg.Refusal)) {
	if f != nil {
		*r = f
	}
}

// Report calls r with each of refusals, in order.
func (r Refused) Report(refusals []fg.Refusal) {
	if r == nil {
		return
	}
	for _, x := range refusals {
		r(x)
	}
}

// Refuse takes out of r the rows of edges between two users older than
// the store's tombstone horizon of whose keys the store holds no row, and
// returns their refusals: such a row's edge may have had a newer
// tombstone, since removed, so writing it as new could bring back an edge
// a later change ended. A user's setting (private, state) is never
// removed, so never refused. heldEdges and
// heldLinks report which of the keys of the rows given the store holds;
// they are called only with rows below the horizon, which the service
// never sends while the horizon is kept as serve keeps it, so a store may
// answer them one key at a time.
func (r *Rows) Refuse(horizon int64, heldEdges func([]Edge) (map[EdgeKey]bool, error),
	heldLinks func([]Link) (map[LinkKey]bool, error)) ([]fg.Refusal, error) {
	var refused []fg.Refusal
	edges, err := refuse(r.Edges, horizon, Edge.Key, heldEdges, func(e Edge) { refused = append(refused, e.Refusal(horizon)) })
	if err != nil {
		return nil, err
	}
	links, err := refuse(r.Links, horizon, Link.Key, heldLinks, func(l Link) { refused = append(refused, l.Refusal(horizon)) })
	if err != nil {
		return nil, err
	}
	r.Edges, r.Links = edges, links
	return refused, nil
}

// versioned is a row: an Edge or a Link.
type versioned interface {
	version() int64
	purged() bool // its tombstone may be removed
}

func (e Edge) version() int64 { return e.Version }
func (l Link) version() int64 { return l.Version }
func (e Edge) purged() bool   { return true }
func (l Link) purged() bool   { return l.Kind.Info().Edge }

// refuse returns rows without those below horizon of a kind whose
// tombstones may be removed whose keys held does not report, each passed
// to refused, keeping rows' order and reusing its array.
func refuse[R versioned, K comparable](rows []R, horizon int64, key func(R) K, held func([]R) (map[K]bool, error), refused func(R)) ([]R, error) {
	var below []R
	for _, r := range rows {
		if r.version() < horizon && r.purged() {
			below = append(below, r)
		}
	}
	if len(below) == 0 {
		return rows, nil
	}
	have, err := held(below)
	if err != nil {
		return nil, err
	}
	kept := rows[:0]
	for _, r := range rows {
		if r.version() < horizon && r.purged() && !have[key(r)] {
			refused(r)
			continue
		}
		kept = append(kept, r)
	}
	return kept, nil
}

// FirstRefused returns the refusal of the first row of chunk, in chunk's
// order (an import's, the file's), that is the first of its edge in chunk,
// is older than horizon, and whose edge the store holds no row of, as
// held reports; nil when there is none. Import refuses the whole import
// for it: a later row of an edge that has a row by then changes it only
// over an older version, as any write does.
func FirstRefused(chunk []Edge, horizon int64, held func([]Edge) (map[EdgeKey]bool, error)) (*fg.Refusal, error) {
	if horizon == 0 {
		return nil, nil
	}
	seen := make(map[EdgeKey]bool)
	var firsts []Edge
	for _, e := range chunk {
		if seen[e.Key()] {
			continue
		}
		seen[e.Key()] = true
		if e.Version < horizon {
			firsts = append(firsts, e)
		}
	}
	if len(firsts) == 0 {
		return nil, nil
	}
	have, err := held(firsts)
	if err != nil {
		return nil, err
	}
	for _, e := range firsts {
		if !have[e.Key()] {
			r := e.Refusal(horizon)
			return &r, nil
		}
	}
	return nil, nil
}

// CheckPurge returns the EInvalidArgument error of a PurgeTombstones
// whose bound does not fit the stores' signed columns or whose limit is
// below 1, and nil otherwise.
func CheckPurge(below fg.Version, limit int) error {
	if below > MaxVersion || limit < 1 {
		return fg.Errorf(fg.EInvalidArgument, "bound %d or limit %d out of range: the bound must be below 2^63, the limit at least 1", below, limit)
	}
	return nil
}

// CheckHorizon returns the EInvalidArgument error of a horizon that does
// not fit the stores' signed columns, and nil otherwise.
func CheckHorizon(h fg.Version) error {
	if h > MaxVersion {
		return fg.Errorf(fg.EInvalidArgument, "horizon %d is 2^63 or more", h)
	}
	return nil
}

// Removal removes at most n tombstones (of the follows, or of the links
// of kind k), oldest first, and returns how many it removed and the
// newest version among them.
type Removal func(k fg.Kind, n int) (removed int, newest int64, err error)

// Purge is one step of a store's PurgeTombstones, in its transaction:
// the follows' tombstones (remove with fg.KindFollow), then those of each
// of PurgedKinds, until limit are removed, and then raise, with just above
// the newest version removed, when any was. It returns how many it
// removed.
func Purge(limit int, remove Removal, raise func(horizon int64) error) (int, error) {
	removed, newest := 0, int64(-1)
	for _, k := range append([]fg.Kind{fg.KindFollow}, PurgedKinds...) {
		if removed == limit {
			break
		}
		n, v, err := remove(k, limit-removed)
		if err != nil {
			return 0, err
		}
		if n > 0 {
			removed, newest = removed+n, max(newest, v)
		}
	}
	if newest < 0 {
		return removed, nil
	}
	return removed, raise(newest + 1)
}
