package graphtest

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/followgraph/followgraph"
)

// The model of account states: m holds every edge as stored, whatever the
// states; the writes below refuse what a state refuses and otherwise
// change the stored edges as they would between active users; a read is
// answered by view, the stored edges between two active users only. That
// is what an engine shows once its jobs are done.

func (m *model) state(u followgraph.UserID) followgraph.State { return m.states[u] }

func (m *model) active(u followgraph.UserID) bool { return m.state(u).Active() }

// view returns the graph that reads show: the edges of every kind between
// two active users, the settings, and the states.
func (m *model) view() *model {
	v := newModel(m.maxFollowing)
	v.clock, v.states = m.clock, m.states
	shown := func(k edge) bool { return m.active(k.user) && m.active(k.target) }
	maps.Copy(v.private, m.private)
	for k, x := range m.since {
		if shown(k) {
			v.since[k] = x
		}
	}
	for k, x := range m.blocks {
		if shown(k) {
			v.blocks[k] = x
		}
	}
	for k, x := range m.mutes {
		if shown(k) {
			v.mutes[k] = x
		}
	}
	for k, x := range m.requests {
		if shown(k) {
			v.requests[k] = x
		}
	}
	return v
}

// setState sets user's state, as SetState should, and returns the code of
// its error. Deleting removes the user's stored edges of every kind.
func (m *model) setState(user followgraph.UserID, st followgraph.State) string {
	cur := m.state(user)
	switch {
	case cur == st:
		return ""
	case cur == followgraph.StateDeleted:
		return followgraph.ETargetInactive
	}
	if m.states == nil {
		m.states = make(map[followgraph.UserID]followgraph.State)
	}
	if st.Active() {
		delete(m.states, user)
	} else {
		m.states[user] = st
	}
	if st == followgraph.StateDeleted {
		of := func(k edge) bool { return k.user == user || k.target == user }
		maps.DeleteFunc(m.since, func(k edge, _ int64) bool { return of(k) })
		maps.DeleteFunc(m.blocks, func(k edge, _ int64) bool { return of(k) })
		maps.DeleteFunc(m.mutes, func(k edge, _ mute) bool { return of(k) })
		maps.DeleteFunc(m.requests, func(k edge, _ int64) bool { return of(k) })
	}
	return ""
}

// refuses returns the code of the error of a write by user with other
// that the states refuse (""): a write by a user who is not active, a
// follow or request (toFollow) of one, a block or mute (toLink) of a
// deleted one.
func (m *model) refuses(user, other followgraph.UserID, toFollow, toLink bool) string {
	switch {
	case !m.active(user):
		return followgraph.EUserInactive
	case toFollow && !m.active(other):
		return followgraph.ETargetInactive
	case toLink && m.state(other) == followgraph.StateDeleted:
		return followgraph.ETargetInactive
	}
	return ""
}

// testStateRandom makes random writes of every kind and changes of state
// among a few users, each checked against the model, waits for the job
// of each change of state, and every 50 operations compares every answer
// of the engine with the model's view.
func (s suite) testStateRandom(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { s.runStateRandom(t, seed) })
	}
}

func (s suite) runStateRandom(t *testing.T, seed uint64) {
	f := s.stateFixture(t, Options{})
	m := newModel(0)
	m.clock = f.now
	rng := rand.New(rand.NewPCG(seed, 16))
	var users []followgraph.UserID
	for id := followgraph.UserID(1); id <= 10; id++ {
		users = append(users, id)
	}
	const ops = 1500
	for i := range ops {
		a, b := pickPair(rng, users)
		now := f.now()
		refused := func(what string, err error, code string) {
			t.Helper()
			checkCode(t, fmt.Sprintf("%s by %s %d with %s %d", what, m.state(a), a, m.state(b), b), err, code)
		}
		switch r := rng.IntN(100); {
		case r < 30:
			if code := m.refuses(a, b, true, false); code != "" {
				refused("Follow", second(f.g.Follow(f.ctx, a, b)), code)
			} else {
				checkFollow(t, f.ctx, f.g, m, a, b, now)
			}
		case r < 42:
			if code := m.refuses(a, b, false, false); code != "" {
				refused("Unfollow", second(f.g.Unfollow(f.ctx, a, b)), code)
			} else {
				removed, err := f.g.Unfollow(f.ctx, a, b)
				checkRemoved(t, fmt.Sprintf("Unfollow(%d, %d)", a, b), removed, err, m.unfollow(a, b))
			}
		case r < 46:
			if code := m.refuses(a, b, false, true); code != "" {
				refused("Block", second(f.g.Block(f.ctx, a, b)), code)
			} else {
				checkBlock(t, f.ctx, f.g, m, a, b, now)
			}
		case r < 49:
			if code := m.refuses(a, b, false, false); code != "" {
				refused("Unblock", second(f.g.Unblock(f.ctx, a, b)), code)
			} else {
				removed, err := f.g.Unblock(f.ctx, a, b)
				checkRemoved(t, fmt.Sprintf("Unblock(%d, %d)", a, b), removed, err, m.unblock(a, b))
			}
		case r < 53:
			d := time.Duration(rng.IntN(3)*rng.IntN(6)) * time.Millisecond
			if code := m.refuses(a, b, false, true); code != "" {
				refused("Mute", second(f.g.Mute(f.ctx, a, b, d)), code)
			} else {
				checkMute(t, f.ctx, f.g, m, a, b, d, now)
			}
		case r < 55:
			if code := m.refuses(a, b, false, false); code != "" {
				refused("Unmute", second(f.g.Unmute(f.ctx, a, b)), code)
			} else {
				removed, err := f.g.Unmute(f.ctx, a, b)
				checkRemoved(t, fmt.Sprintf("Unmute(%d, %d)", a, b), removed, err, m.unmute(a, b, now))
			}
		case r < 61:
			if code := m.refuses(a, b, false, false); code != "" {
				refused("Approve", second(f.g.Approve(f.ctx, a, b)), code)
			} else {
				checkApprove(t, f.ctx, f.g, m, a, b, now)
			}
		case r < 64:
			if code := m.refuses(a, b, false, false); code != "" {
				refused("RemoveFollower", second(f.g.RemoveFollower(f.ctx, a, b)), code)
			} else {
				removed, err := f.g.RemoveFollower(f.ctx, a, b)
				checkRemoved(t, fmt.Sprintf("RemoveFollower(%d, %d)", a, b), removed, err, m.removeFollower(a, b))
			}
		case r < 69:
			private := rng.IntN(3) == 0
			if code := m.refuses(a, b, false, false); code != "" {
				refused("SetPrivate", second(f.g.SetPrivate(f.ctx, a, private)), code)
			} else {
				// Turning private off approves the requests that are
				// shown: those of hidden users stay, to come back with them.
				approved := m.view()
				approved.setPrivate(a, private, now)
				for k, ms := range approved.since {
					m.since[k] = ms
					delete(m.requests, k)
				}
				m.private[a] = private
				got, err := f.g.SetPrivate(f.ctx, a, private)
				if want := (followgraph.Settings{ID: a, Private: private}); err != nil || got != want {
					t.Errorf("SetPrivate(%d, %v) = %+v, %v; want %+v", a, private, got, err, want)
				}
			}
		case r < 77:
			st := []followgraph.State{followgraph.StateActive, followgraph.StateActive, followgraph.StateDeactivated,
				followgraph.StateSuspended, followgraph.StateActive, followgraph.StateDeactivated,
				followgraph.StateActive, followgraph.StateSuspended, followgraph.StateActive, followgraph.StateDeleted}[rng.IntN(10)]
			code := m.setState(a, st)
			got, err := f.g.SetState(f.ctx, a, st)
			if code != "" {
				refused("SetState("+st.String()+")", err, code)
				break
			}
			if err != nil || got.ID != a || got.State != st {
				t.Errorf("SetState(%d, %s) = %+v, %v", a, st, got, err)
			}
			f.waitJob(a)
		default:
			f.advance(rng.Int64N(4))
		}
		if i%50 == 49 || i == ops-1 {
			checkModel(t, f.ctx, f.g, m.view(), users, rng)
		}
		if t.Failed() {
			t.Fatalf("seed %d: the engine and the model differ after operation %d", seed, i)
		}
	}
}
