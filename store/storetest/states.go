package storetest

import (
	"math/rand/v2"
	"slices"
	"testing"

	fg "github.com/followgraph/followgraph"
)

// State is the event of u's account state set to state at version ver.
func State(u fg.UserID, state fg.State, ver fg.Version) fg.Event {
	return fg.NewStateEvent(u, state, ver)
}

// testLinksState: a user's account state is a row of its own kind with
// target 0, by the rule of every edge: the highest version wins, in any
// order and within one batch too, and Events gives it back as an OpState
// with its state, active included. The states of two users, and a user's
// state, follows and private setting, stay apart.
func (s suite) testLinksState(t *testing.T) {
	st := s.newStore(t)
	Apply(t, st, 1, Follow(1, 2, V(1)), State(1, fg.StateDeactivated, V(1)), Private(1, V(1)))
	Apply(t, st, 2, State(1, fg.StateSuspended, V(3)))
	for _, e := range []fg.Event{State(1, fg.StateActive, V(2)), State(1, fg.StateSuspended, V(3))} {
		if n := Apply(t, st, 3, e); n != 0 {
			t.Errorf("%v after the suspension at %d changed %d rows", e, V(3), n)
		}
	}
	CheckEvents(t, st, []fg.Event{Follow(1, 2, V(1)), Private(1, V(1)), State(1, fg.StateSuspended, V(3))})

	Apply(t, st, 4, State(1, fg.StateActive, V(4)), State(2, fg.StateDeactivated, V(4)))
	CheckEvents(t, st, []fg.Event{
		Follow(1, 2, V(1)), Private(1, V(1)), State(1, fg.StateActive, V(4)), State(2, fg.StateDeactivated, V(4)),
	})
	Apply(t, st, 5, State(1, fg.StateDeleted, V(5)))
	want := []fg.Event{
		Follow(1, 2, V(1)), Private(1, V(1)), State(1, fg.StateDeleted, V(5)), State(2, fg.StateDeactivated, V(4)),
	}
	CheckEvents(t, st, want)
	if n := Apply(t, st, 6, State(1, fg.StateActive, V(4)), State(2, fg.StateActive, V(3))); n != 0 {
		t.Errorf("older states changed %d rows", n)
	}
	CheckEvents(t, st, want)

	// The same history in one batch, in random orders: the highest
	// version of each user's state is kept.
	history := []fg.Event{
		State(1, fg.StateDeactivated, V(1)), State(1, fg.StateActive, V(2)), State(1, fg.StateSuspended, V(3)),
		State(1, fg.StateActive, V(4)), State(1, fg.StateDeleted, V(5)),
		State(2, fg.StateSuspended, V(1)), State(2, fg.StateActive, V(6)),
	}
	rng := rand.New(rand.NewPCG(16, 5))
	for range 3 {
		rng.Shuffle(len(history), func(i, j int) { history[i], history[j] = history[j], history[i] })
		st := s.newStore(t)
		Apply(t, st, 1, slices.Concat(history, history)...)
		CheckEvents(t, st, []fg.Event{State(1, fg.StateDeleted, V(5)), State(2, fg.StateActive, V(6))})
	}
}
