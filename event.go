package followgraph

import (
	"fmt"
	"time"
)

// Version orders the changes of one edge. It is a hybrid logical clock:
// the high 44 bits are milliseconds since the Unix epoch, the low 20 bits a
// counter that separates changes within one millisecond. An engine assigns
// each change a version greater than every version it has issued or
// applied (NextVersion), so the versions of one edge only grow, across
// unfollow and refollow too, and a change's time is its version's
// millisecond part.
type Version uint64

// VersionCounterBits is the width of the counter part of a Version.
const VersionCounterBits = 20

// VersionAt returns the smallest version of millisecond ms.
func VersionAt(ms int64) Version { return Version(uint64(ms) << VersionCounterBits) }

// RegionBits is the width of the low part of a version's counter that
// names the region that issued it. Regions that each take writes and
// exchange their events keep for each edge the change of the highest
// version, so two of them must never issue the same version: each issues
// only versions whose low RegionBits bits are its number, from 1 to
// MaxRegion. Region 0 is a deployment without regions, whose versions may
// have any counter.
const RegionBits = 4

// MaxRegion is the highest region number.
const MaxRegion = 1<<RegionBits - 1

// NextVersion returns the version of a change made at millisecond nowMs
// by an engine whose clock is last (the greatest version it has issued or
// applied) in region (0 to MaxRegion): the smallest version above last,
// not below VersionAt(nowMs), and, unless region is 0, whose low
// RegionBits bits are region. A region's counter so skips the other
// regions' values, and may carry into the next millisecond, which keeps
// the region: 1<<VersionCounterBits is a multiple of 1<<RegionBits.
// Region 0 takes the next counter, as every deployment did before
// regions: max(last+1, VersionAt(nowMs)).
func NextVersion(last Version, nowMs int64, region int) Version {
	v := max(last+1, VersionAt(nowMs))
	if region > 0 {
		v += (Version(region) - v) & MaxRegion
	}
	return v
}

// Region returns the low RegionBits bits of v: the region that issued v.
// It means something only in a deployment with regions; in one without,
// they are part of any counter.
func (v Version) Region() int { return int(v & MaxRegion) }

// Millis returns the millisecond part of v.
func (v Version) Millis() int64 { return int64(uint64(v) >> VersionCounterBits) }

// Time returns the millisecond part of v as a UTC time.
func (v Version) Time() time.Time { return Millis(v.Millis()) }

// Millis converts milliseconds since the Unix epoch to a UTC time.
func Millis(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// Op is the change an Event records: a kind of edge turned on or off (see
// relationship.go for the ops of the other kinds).
type Op uint8

const (
	OpFollow   Op = 1
	OpUnfollow Op = 2
)

// String returns the op's word, such as "follow" or "unblock"; these words
// also name the operation in event-log subjects.
func (op Op) String() string {
	if op.Valid() {
		return opWords[op]
	}
	return fmt.Sprintf("op(%d)", uint8(op))
}

// Event records one effective change of one edge: User started (OpFollow)
// or stopped (OpUnfollow) following Target at Time, as change Version of
// that edge, or did the same with an edge of another kind (OpBlock, …;
// see Op.Kind). Time is always Version.Time(). A change may set more than
// one edge (a block ends the follows between the two): Effects lists them.
// Replaying a set of events in any order, with duplicates, and keeping for
// each edge the effect of the highest version, gives the same state as the
// live graph.
//
// OpPrivate, OpPublic and OpState change a setting of User, not an edge:
// their Target is 0.
type Event struct {
	User    UserID
	Target  UserID
	Op      Op
	Time    time.Time
	Version Version
	// Since and Expires are an OpMute's: when the mute began (Time for a
	// new mute, the original time when a mute's expiry is changed) and
	// when it ends (zero: never). Zero for every other op.
	Since, Expires time.Time
	// State is an OpState's new account state; StateActive (zero) for
	// every other op.
	State State
}

// NewEvent returns the event of op on user→target at version v.
func NewEvent(user, target UserID, op Op, v Version) Event {
	return Event{User: user, Target: target, Op: op, Time: v.Time(), Version: v}
}

// ID names the event uniquely: two events with the same ID are the same
// change, so an event log can drop a repeated publish.
func (e Event) ID() string {
	if k := e.Op.Kind(); k != KindFollow {
		return fmt.Sprintf("%d-%d-%d-%s", e.User, e.Target, e.Version, k)
	}
	return fmt.Sprintf("%d-%d-%d", e.User, e.Target, e.Version)
}

// PerUser reports whether e changes a setting of its user rather than an
// edge (its Target is then 0).
func (e Event) PerUser() bool { k := e.Op.Kind(); return k == KindPrivate || k == KindState }

// Validate returns an error unless e could have been produced by an engine:
// valid and distinct ids (a valid User and Target 0 for a per-user op), a
// known op, a non-zero version, a time equal to its version's millisecond
// part, and, for an OpMute only, a Since not after Time and an Expires
// after Since, or zero.
func (e Event) Validate() error {
	if !e.Op.Valid() {
		return Errorf(EInvalidArgument, "event %d-%d-%d: unknown op %d", e.User, e.Target, e.Version, e.Op)
	}
	if e.PerUser() {
		if err := CheckIDs(e.User); err != nil {
			return err
		}
		if e.Target != 0 {
			return Errorf(EInvalidArgument, "event %s: a %s event has target 0, not %d", e.ID(), e.Op, e.Target)
		}
	} else if err := CheckLinkIDs(e.User, e.Target); err != nil {
		return err
	}
	if e.Op == OpMute {
		if e.Since.IsZero() || e.Since.After(e.Time) {
			return Errorf(EInvalidArgument, "event %s: a mute's since must be set and not after its time", e.ID())
		}
		if !e.Expires.IsZero() && !e.Expires.After(e.Since) {
			return Errorf(EInvalidArgument, "event %s: a mute's expiry must be after its since", e.ID())
		}
	} else if !e.Since.IsZero() || !e.Expires.IsZero() {
		return Errorf(EInvalidArgument, "event %s: only a mute has a since or an expiry", e.ID())
	}
	if e.Op == OpState {
		if !e.State.Valid() {
			return Errorf(EInvalidArgument, "event %s: unknown state %d", e.ID(), e.State)
		}
	} else if e.State != StateActive {
		return Errorf(EInvalidArgument, "event %s: only a state event has a state", e.ID())
	}
	if e.Version == 0 {
		return Errorf(EInvalidArgument, "event %s: zero version", e.ID())
	}
	if !e.Time.Equal(e.Version.Time()) {
		return Errorf(EInvalidArgument, "event %s: time %s is not its version's time %s",
			e.ID(), e.Time.Format(TimeFormat), e.Version.Time().Format(TimeFormat))
	}
	return nil
}

// TimeFormat is how times are written in the API: RFC 3339, UTC, milliseconds.
const TimeFormat = "2006-01-02T15:04:05.000Z07:00"

// LogPosition is what a durable store knows of the event log it applies the
// events of: enough for the service to prove at start that the two still
// hold every change it acknowledged, and to notice a store or a log that
// was deleted, emptied or replaced.
type LogPosition struct {
	// Store is the store's own identity, drawn at random when the store
	// was created. The log keeps the identity of the store it feeds.
	Store int64
	// Log is the identity of the log the store is fed from (its stream's
	// creation time in Unix nanoseconds); 0 before the service first
	// started on the store.
	Log int64
	// Applied is the highest log sequence the store has applied.
	Applied uint64
	// Seen is the highest sequence the log is known to have stored.
	Seen uint64
}
