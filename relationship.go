package followgraph

import (
	"fmt"
	"time"
)

// Kind is the kind of an edge between two users. Every kind is kept by the
// same mechanism: an edge of a kind is on or off, with the version of its
// last change (whose millisecond part is that change's time), in both
// directions, and an Event changes it conditionally on that version. Off
// edges are kept as tombstones wherever a late, older event could
// otherwise bring them back.
type Kind uint8

const (
	KindFollow  Kind = iota // user follows target
	KindBlock               // user blocks target
	KindMute                // user mutes target, until an optional expiry
	KindRequest             // user asked to follow target, a private account, and waits
	// KindPrivate is not an edge but a user's setting, changed by the same
	// mechanism: its "edge" has Target 0.
	KindPrivate
	// KindState is a user's account state (state.go), a setting as
	// KindPrivate is, with Target 0; its Event carries the state.
	KindState
)

// KindInfo is what the domain says of a kind, once, for the engines, the
// stores and the tools to read rather than list the kinds again.
type KindInfo struct {
	Kind Kind
	Word string // its word: String's
	// Edge: an edge between two users, kept both ways; false for a
	// user's setting (KindPrivate, KindState: Target 0).
	Edge bool
	// Link: one of the other kinds, which Graph.Link reports and the
	// stores keep beside the follows (block, mute, request).
	Link bool
	// TwoSided: kept on both users' sides (a mute is on the muter's only).
	TwoSided bool
}

// Kinds are the kinds, by their number.
var Kinds = [...]KindInfo{
	KindFollow:  {KindFollow, "follow", true, false, true},
	KindBlock:   {KindBlock, "block", true, true, true},
	KindMute:    {KindMute, "mute", true, true, false},
	KindRequest: {KindRequest, "request", true, true, true},
	KindPrivate: {KindPrivate, "private", false, false, false},
	KindState:   {KindState, "state", false, false, false},
}

// Info returns what Kinds says of k (a zero KindInfo for an unknown k).
func (k Kind) Info() KindInfo {
	if int(k) < len(Kinds) {
		return Kinds[k]
	}
	return KindInfo{}
}

// LinkKinds returns the kinds Graph.Link reports, in their order.
func LinkKinds() []Kind {
	var out []Kind
	for _, i := range Kinds {
		if i.Link {
			out = append(out, i.Kind)
		}
	}
	return out
}

// String returns the kind's word: "follow", "block", "mute", "request",
// "private" or "state".
func (k Kind) String() string {
	if w := k.Info().Word; w != "" {
		return w
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Ops of the other kinds, beside OpFollow and OpUnfollow (event.go). Each
// op sets one kind on or off; see Op.Kind and Op.On.
const (
	OpBlock     Op = 3
	OpUnblock   Op = 4
	OpMute      Op = 5
	OpUnmute    Op = 6
	OpRequest   Op = 7 // a follow request made
	OpUnrequest Op = 8 // a follow request withdrawn or rejected (an approval is an OpFollow)
	OpPrivate   Op = 9 // the user's account made private
	OpPublic    Op = 10
	// OpState sets the user's account state to the event's State. It has
	// no "off" op: every state, active too, is a value of it.
	OpState Op = 11
)

// opWords are the ops' words, which also name them in event-log subjects.
var opWords = [...]string{
	OpFollow: "follow", OpUnfollow: "unfollow",
	OpBlock: "block", OpUnblock: "unblock",
	OpMute: "mute", OpUnmute: "unmute",
	OpRequest: "request", OpUnrequest: "unrequest",
	OpPrivate: "private", OpPublic: "public",
	OpState: "state",
}

// ParseOp returns the op named word (see Op.String).
func ParseOp(word string) (Op, bool) {
	for op, w := range opWords {
		if w != "" && w == word {
			return Op(op), true
		}
	}
	return 0, false
}

// Valid reports whether op is one of the ops above.
func (op Op) Valid() bool { return op >= OpFollow && op <= OpState }

// Kind returns the kind op changes.
func (op Op) Kind() Kind { return Kind((op - 1) / 2) }

// On reports whether op turns its kind on (follow, block, mute, request,
// private) rather than off. OpState is on: its event says the state.
func (op Op) On() bool { return op%2 == 1 }

// OpOf returns the op that turns kind k on or off (KindState: OpState,
// whatever on is).
func OpOf(k Kind, on bool) Op {
	if on || k == KindState {
		return Op(2*k + 1)
	}
	return Op(2*k + 2)
}

// Effect is one edge as an event leaves it: the edge of Kind from User to
// Target (Target 0 for KindPrivate and KindState), on or off, at the
// event's version. A KindState effect is on unless the state is active.
type Effect struct {
	Kind         Kind
	User, Target UserID
	On           bool
}

// Effects calls yield with every edge e sets, each to be changed to its On
// at e.Version only if that edge's version is lower (each edge on its
// own: an edge already at a higher version is left as it is, and the
// others are still changed). Applying these, in any order of events, with
// duplicates, converges to the live graph. The first effect is always the
// edge e is about (e.Op's kind, User to Target); the others are what the
// change does with it:
//
//   - a follow also ends the follow request of the same direction (an
//     approval is a follow), and so does an unfollow: a request stands
//     only while it is newer than every change of the follow of its
//     direction, which is what the stores keep (one edge row for both).
//     Within one region a request never meets an unfollow (no request is
//     made while following); between regions it can, and each must end
//     as the others do, whatever the order the two changes arrive in;
//   - a block also ends the follows and the follow requests between the
//     two, both ways, in the same change.
func (e Event) Effects(yield func(Effect) bool) {
	k, u, t := e.Op.Kind(), e.User, e.Target
	on := e.Op.On()
	if e.Op == OpState {
		on = !e.State.Active()
	}
	if !yield(Effect{k, u, t, on}) {
		return
	}
	switch e.Op {
	case OpFollow, OpUnfollow:
		yield(Effect{KindRequest, u, t, false})
	case OpBlock:
		_ = yield(Effect{KindFollow, u, t, false}) &&
			yield(Effect{KindFollow, t, u, false}) &&
			yield(Effect{KindRequest, u, t, false}) &&
			yield(Effect{KindRequest, t, u, false})
	}
}

// The lists of the other kinds that take cursors (see the follow lists in
// graph.go), for Graph.Links: the users a user blocks, the users a user
// mutes (expired mutes are not listed), the pending follow requests to a
// user. Ordered like the follow lists, by the time of the block, mute or
// request, newest first, ties by id, larger first.
const (
	ListBlocks         = "blocks"
	ListMutes          = "mutes"
	ListFollowRequests = "follow-requests"
)

// MaxMute is the longest mute with an expiry (about 100 years); a longer
// one is EInvalidArgument. A mute with no duration has no expiry.
const MaxMute = 100 * 365 * 24 * time.Hour

// Link is the state of one edge of a kind other than follow, as Graph.Link
// reports it.
type Link struct {
	On      bool
	Since   time.Time // when the edge was made; zero when not On
	Expires time.Time // a mute's expiry; zero when none
}

// LinkResult is the outcome of Block and Mute.
type LinkResult struct {
	Created bool      // false when the edge existed already
	Since   time.Time // when the edge was made (the original time if not Created)
	Expires time.Time // a mute's expiry (the new one); zero when none
}

// Settings are a user's settings.
type Settings struct {
	ID      UserID
	Private bool // follows must be requested and approved
}

// CheckMute returns an EInvalidArgument error unless d is a mute's
// duration: 0 (until unmuted) or positive up to MaxMute.
func CheckMute(d time.Duration) error {
	if d < 0 || d > MaxMute {
		return Errorf(EInvalidArgument, "mute duration %s is out of range: it must be 0 (until unmuted) or up to %s", d, MaxMute)
	}
	return nil
}

// ErrBlocked is returned by a follow or a follow request between two users
// one of whom blocks the other.
var ErrBlocked = &Error{Code: EBlocked, Message: "one of these users blocks the other"}

// CheckLinkIDs returns the error of a block, mute or request of target by
// user for their ids: EInvalidID, or ErrSelfFollow when they are equal.
func CheckLinkIDs(user, target UserID) error {
	if err := CheckIDs(user, target); err != nil {
		return err
	}
	if user == target {
		return ErrSelfFollow
	}
	return nil
}
