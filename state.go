package followgraph

import (
	"context"
	"fmt"
	"time"
)

// State is a user's account state. A user never set is StateActive.
// Deactivated and suspended users are hidden: their edges of every kind,
// both directions, stay stored with their times but leave every other
// user's lists, counts, relations, set queries and suggestions; StateActive
// again restores them. A deleted user's edges are removed for good, and
// its state never changes again. What a state does to a user's edges is a
// background job (JobRunner): the state itself holds at once.
type State uint8

const (
	StateActive State = iota
	StateDeactivated
	StateSuspended
	StateDeleted
)

var stateWords = [...]string{
	StateActive: "active", StateDeactivated: "deactivated",
	StateSuspended: "suspended", StateDeleted: "deleted",
}

// String returns the state's word, as the API writes it.
func (s State) String() string {
	if s.Valid() {
		return stateWords[s]
	}
	return fmt.Sprintf("state(%d)", uint8(s))
}

// ParseState returns the state named word.
func ParseState(word string) (State, bool) {
	for s, w := range stateWords {
		if w == word {
			return State(s), true
		}
	}
	return 0, false
}

// Valid reports whether s is one of the four states.
func (s State) Valid() bool { return s <= StateDeleted }

// Active reports whether s is StateActive.
func (s State) Active() bool { return s == StateActive }

// Shown reports whether the side that owner keeps of an edge with other
// is in owner's lists and counts, given the two users' states. This is
// the rule every engine's jobs bring a user's edges to, and every write
// and replay obeys:
//
//   - between two active users, both sides are shown;
//   - an active user does not show its edges with a hidden user, while the
//     hidden user keeps its own side (the archive that StateActive
//     restores from, with the edges' original times); two hidden users
//     both keep theirs;
//   - nothing is kept of an edge with a deleted user.
func Shown(owner, other State) bool {
	if owner == StateDeleted || other == StateDeleted {
		return false
	}
	return other == StateActive || owner != StateActive
}

// AccountState is a user's state as Graph.State reports it.
type AccountState struct {
	ID    UserID
	State State
	// Since is when the state was set; zero for a user never set.
	Since time.Time
	// Pending is how many of the user's edges the job of its last change
	// has left to change; 0 once the job is done.
	Pending int64
}

// NewStateEvent returns the event that sets user's state to s at version
// v: an OpState, Target 0.
func NewStateEvent(user UserID, s State, v Version) Event {
	e := NewEvent(user, 0, OpState, v)
	e.State = s
	return e
}

// ErrUserInactive is returned by any write by a user who is not active.
var ErrUserInactive = &Error{Code: EUserInactive, Message: "this user is not active"}

// ErrTargetInactive is returned by a follow or follow request of a user
// who is not active, by a block or mute of a deleted user, and by a
// change of a deleted user's state.
var ErrTargetInactive = &Error{Code: ETargetInactive, Message: "the target user is not active"}

// CheckState returns an EInvalidArgument error unless s is a valid state.
func CheckState(s State) error {
	if !s.Valid() {
		return Errorf(EInvalidArgument, "unknown state %d", s)
	}
	return nil
}

// JobRunner is implemented by engines whose account-state changes run as
// background jobs: hiding a deactivated or suspended user's edges at every
// counterpart, restoring them when it is active again, removing them when
// it is deleted (see Shown). Each job changes an edge's two sides and both
// counts together, so a list and its count never disagree; a state changed
// again while its job runs ends in the state last set. An engine says how
// its jobs survive a restart.
type JobRunner interface {
	// RunJobs runs the jobs until ctx ends, changing at most rate edges a
	// second in all (0: as fast as the engine allows), and then returns
	// ctx's error; any other error it returns is the engine's failure,
	// after which RunJobs may be called again.
	RunJobs(ctx context.Context, rate int) error
	// JobStats returns what the jobs are doing.
	JobStats() JobStats
}

// JobStats are the jobs' figures.
type JobStats struct {
	Running int   // jobs not done
	Pending int64 // edges they have left
	Changed int64 // edges changed by jobs since the engine started
}
