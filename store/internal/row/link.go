package row

import (
	"cmp"
	"slices"
	"strconv"

	fg "github.com/followgraph/followgraph"
)

// Link is one row of the links table: the edge of a kind other than
// follow (KindBlock, KindMute, KindRequest; KindPrivate and KindState
// with Target 0 for the private setting and the account state) from User
// to Target, on or off (a tombstone) at Version, by the same rule as an
// Edge.
type Link struct {
	User   int64
	Kind   fg.Kind // stored as its number
	Target int64
	On     bool
	// SinceMs is when the edge was made: a mute's Since, else the time of
	// Version. ExpiresMs is a live mute's expiry, 0 for none.
	SinceMs, ExpiresMs int64
	Version            int64
	// State is a KindState row's account state (stored as its number);
	// StateActive for every other kind.
	State fg.State
}

// linkOf returns the row of effect x of e.
func linkOf(e fg.Event, x fg.Effect) Link {
	l := Link{User: int64(x.User), Kind: x.Kind, Target: int64(x.Target), On: x.On,
		SinceMs: e.Version.Millis(), Version: int64(e.Version)}
	if x.Kind == fg.KindState {
		l.State = e.State
	}
	if e.Op == fg.OpMute && x.Kind == fg.KindMute {
		l.SinceMs = e.Since.UnixMilli()
		if !e.Expires.IsZero() {
			l.ExpiresMs = e.Expires.UnixMilli()
		}
	}
	return l
}

// Event returns the event that records l, what the stores' Events yield
// for it: the op that turns its kind on or off at its version, with a
// live mute's Since and Expires; for a KindState row, the OpState of its
// State.
func (l Link) Event() fg.Event {
	e := fg.NewEvent(fg.UserID(l.User), fg.UserID(l.Target), fg.OpOf(l.Kind, l.On), fg.Version(l.Version))
	if l.Kind == fg.KindState {
		e.State = l.State
	}
	if l.Kind == fg.KindMute && l.On {
		e.Since = fg.Millis(l.SinceMs)
		if l.ExpiresMs != 0 {
			e.Expires = fg.Millis(l.ExpiresMs)
		}
	}
	return e
}

// Settle returns l as it stands beside followVersion, the version of the
// edges row of the same pair (0 when there is none). A follow ends the
// request of its direction (Event.Effects), and the stores record that
// end in the follow's edges row rather than in a second row (see Batch):
// a request whose pair's follow row has a higher version is off, at that
// version. Only a follow or an unfollow after the follow that ended it
// can have raised that version, and neither can happen while a request is
// pending (an engine makes a request only when user does not follow
// target), so the version is the end's or later, and no request made
// after it is hidden. Every other link is returned as it is.
func (l Link) Settle(followVersion int64) Link {
	if l.Kind != fg.KindRequest || followVersion <= l.Version {
		return l
	}
	return Link{User: l.User, Kind: l.Kind, Target: l.Target,
		SinceMs: fg.Version(followVersion).Millis(), Version: followVersion}
}

// DedupeLinks does for links what Dedupe does for edges: primary-key
// order (user, kind, target), the highest version of each key, in links'
// array.
func DedupeLinks(links []Link) []Link {
	slices.SortFunc(links, func(a, b Link) int {
		return cmp.Or(cmp.Compare(a.User, b.User), cmp.Compare(a.Kind, b.Kind),
			cmp.Compare(a.Target, b.Target), cmp.Compare(b.Version, a.Version))
	})
	return slices.CompactFunc(links, func(a, b Link) bool {
		return a.User == b.User && a.Kind == b.Kind && a.Target == b.Target
	})
}

// LinksSelect selects every link with the version of the edges row of
// its pair for a request (0 if none, or for another kind), the columns of
// Link (User, Kind, Target, On, SinceMs, ExpiresMs, Version, State) and
// then that version, for the stores' Events (see Link.Settle). The stores
// add their WHERE, ORDER BY (user_id, kind, target_id) and LIMIT.
var LinksSelect = `SELECT l.user_id, l.kind, l.target_id, l.active, l.since_ms, l.expires_ms, l.version, l.state, COALESCE(e.version, 0)
	FROM links l LEFT JOIN edges e ON l.kind = ` + strconv.Itoa(int(fg.KindRequest)) + ` AND e.follower = l.user_id AND e.followee = l.target_id`
