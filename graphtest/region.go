package graphtest

import (
	"testing"

	"github.com/followgraph/followgraph"
)

// regionStep is one write of the Region tests, by actor, which makes one
// change.
type regionStep struct {
	what  string
	actor followgraph.UserID
	write func()
}

// regionSteps returns writes of every kind of change among users 1 to 4,
// which, made in order, each make one change, and can be made again in
// the same order.
func (f *fixture) regionSteps() []regionStep {
	return []regionStep{
		{"Follow(1, 2)", 1, func() { f.follow(1, 2) }},
		{"Unfollow(1, 2)", 1, func() { f.unfollow(1, 2) }},
		{"Follow(1, 2) again", 1, func() { f.follow(1, 2) }},
		{"Mute(1, 3)", 1, func() { f.mute(1, 3, 0) }},
		{"SetPrivate(3, true)", 3, func() { f.setPrivate(3, true) }},
		{"Follow(2, 3), a request", 2, func() { f.follow(2, 3) }},
		{"Block(2, 1)", 2, func() { f.block(2, 1) }},
		{"SetState(4, deactivated)", 4, func() { f.changeState(4, followgraph.StateDeactivated) }},
		{"Unblock(2, 1)", 2, func() { f.unblock(2, 1) }},
		{"Unmute(1, 3)", 1, func() { f.unmute(1, 3) }},
		{"Unfollow(2, 3), withdrawing the request", 2, func() { f.unfollow(2, 3) }},
		{"SetPrivate(3, false)", 3, func() { f.setPrivate(3, false) }},
		{"SetState(4, active)", 4, func() { f.changeState(4, followgraph.StateActive) }},
	}
}

// changeState sets user's state, and does not wait for its job, which the
// suite of Run does not run.
func (f *fixture) changeState(user followgraph.UserID, st followgraph.State) {
	f.tb.Helper()
	if _, err := f.g.SetState(f.ctx, user, st); err != nil {
		f.tb.Fatalf("SetState(%d, %s): %v", user, st, err)
	}
}

// testRegionUniqueVersions: an engine of region 5 issues only versions of
// region 5 (followgraph.Version.Region), for changes of every kind made
// in one millisecond, each user's at growing versions; and so it does
// once it applied a version of another region in that millisecond, above
// which its next change goes. Regions that each take writes so never
// issue the same version, and the highest version of an edge is the same
// change in every region.
func (s suite) testRegionUniqueVersions(t *testing.T) {
	const region = 5
	r := &recorder{}
	f := s.fixtureWith(t, Options{Hook: r.hook, Region: region})
	last := map[followgraph.UserID]followgraph.Version{} // of each user's last change
	for round := range 3 {
		for _, st := range f.regionSteps() {
			st.write()
			es := r.take()
			if len(es) != 1 {
				t.Fatalf("%s, round %d: the hook saw %s, want one event", st.what, round, formatEvents(es))
			}
			v := es[0].Version
			if v.Region() != region {
				t.Errorf("%s, round %d: the hook saw %s, of region %d, want %d", st.what, round, formatEvents(es), v.Region(), region)
			}
			if v <= last[st.actor] {
				t.Errorf("%s, round %d: version %d is not above %d, of user %d's previous change", st.what, round, v, last[st.actor], st.actor)
			}
			last[st.actor] = v
		}
	}

	if _, ok := f.g.(followgraph.Applier); !ok {
		t.Skip("engine does not implement followgraph.Applier: the rest applies a version")
	}
	// Region 6's, in the clock's millisecond, above every version issued.
	applied := followEvent(1, 5, followgraph.VersionAt(f.now())+1<<16+6)
	f.apply(applied)
	r.take()
	f.follow(1, 2)
	e := checkOneEvent(t, "Follow(1, 2) after Apply of a version of region 6", r.take(), followgraph.OpFollow, 1, 2, f.now())
	if e.Version.Region() != region || e.Version <= applied.Version {
		t.Errorf("Follow(1, 2) after Apply of %s: version %s, want one of region %d above the version applied",
			formatEvents([]followgraph.Event{applied}), formatEvents([]followgraph.Event{e}), region)
	}
}

// testRegionNone: an engine without a region (the default) gives a
// user's changes in one millisecond consecutive counters, from 0,
// whatever their kind, as every engine did before regions.
func (s suite) testRegionNone(t *testing.T) {
	f, r := s.hooked(t, 0)
	at := followgraph.VersionAt(f.now())
	for i, st := range []regionStep{
		{"Follow(1, 2)", 1, func() { f.follow(1, 2) }},
		{"Follow(1, 3)", 1, func() { f.follow(1, 3) }},
		{"Unfollow(1, 2)", 1, func() { f.unfollow(1, 2) }},
		{"Block(1, 4)", 1, func() { f.block(1, 4) }},
		{"Mute(1, 5)", 1, func() { f.mute(1, 5, 0) }},
		{"SetPrivate(1, true)", 1, func() { f.setPrivate(1, true) }},
		{"SetState(1, deactivated)", 1, func() { f.changeState(1, followgraph.StateDeactivated) }},
	} {
		st.write()
		if es := r.take(); len(es) != 1 || es[0].Version != at+followgraph.Version(i) {
			t.Errorf("%s: the hook saw %s, want one event at counter %d", st.what, formatEvents(es), i)
		}
	}
}
