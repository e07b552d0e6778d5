package followgraph_test

import (
	"testing"
	"time"

	fg "github.com/followgraph/followgraph"
)

func TestOps(t *testing.T) {
	kinds := []fg.Kind{fg.KindFollow, fg.KindBlock, fg.KindMute, fg.KindRequest, fg.KindPrivate}
	seen := map[string]bool{}
	for _, k := range kinds {
		for _, on := range []bool{true, false} {
			op := fg.OpOf(k, on)
			if !op.Valid() || op.Kind() != k || op.On() != on {
				t.Errorf("OpOf(%s, %v) = %d: kind %s, on %v", k, on, op, op.Kind(), op.On())
			}
			w := op.String()
			if seen[w] {
				t.Errorf("op word %q twice", w)
			}
			seen[w] = true
			if back, ok := fg.ParseOp(w); !ok || back != op {
				t.Errorf("ParseOp(%q) = %d, %v; want %d", w, back, ok, op)
			}
		}
	}
	if fg.OpOf(fg.KindFollow, true) != fg.OpFollow || fg.OpOf(fg.KindFollow, false) != fg.OpUnfollow {
		t.Error("the follow ops changed value: the stores and the log hold them")
	}
	if _, ok := fg.ParseOp("op(12)"); ok || fg.Op(12).Valid() || fg.Op(0).Valid() {
		t.Error("an op beyond the list is valid")
	}
	if op := fg.OpOf(fg.KindState, false); op != fg.OpState || !op.Valid() || op.Kind() != fg.KindState {
		t.Errorf("OpOf(state, false) = %d: a state has one op", op)
	}
	if back, ok := fg.ParseOp("state"); !ok || back != fg.OpState {
		t.Errorf("ParseOp(state) = %d, %v", back, ok)
	}
}

func TestStates(t *testing.T) {
	for _, s := range []fg.State{fg.StateActive, fg.StateDeactivated, fg.StateSuspended, fg.StateDeleted} {
		if back, ok := fg.ParseState(s.String()); !ok || back != s || fg.CheckState(s) != nil {
			t.Errorf("ParseState(%q) = %d, %v", s, back, ok)
		}
	}
	if _, ok := fg.ParseState("banned"); ok || fg.CheckState(4) == nil {
		t.Error("a state beyond the list is valid")
	}
	a, d, x := fg.StateActive, fg.StateDeactivated, fg.StateDeleted
	for _, c := range []struct {
		owner, other fg.State
		want         bool
	}{{a, a, true}, {a, d, false}, {d, a, true}, {d, d, true}, {a, x, false}, {x, a, false}, {d, x, false}} {
		if got := fg.Shown(c.owner, c.other); got != c.want {
			t.Errorf("Shown(%s, %s) = %v, want %v", c.owner, c.other, got, c.want)
		}
	}
	v := fg.VersionAt(1_000)
	e := fg.NewStateEvent(1, fg.StateSuspended, v)
	if err := e.Validate(); err != nil || !e.PerUser() {
		t.Errorf("a state event: %v, per user %v", err, e.PerUser())
	}
	var effs []fg.Effect
	for x := range e.Effects {
		effs = append(effs, x)
	}
	if len(effs) != 1 || effs[0] != (fg.Effect{Kind: fg.KindState, User: 1, On: true}) {
		t.Errorf("effects of a state event: %v", effs)
	}
	bad := fg.NewEvent(1, 2, fg.OpFollow, v)
	bad.State = fg.StateDeleted
	if bad.Validate() == nil {
		t.Error("a follow with a state validated")
	}
	e.State = 9
	if e.Validate() == nil {
		t.Error("a state event with state 9 validated")
	}
}

func TestEffects(t *testing.T) {
	v := fg.VersionAt(1_000)
	effects := func(e fg.Event) (got []fg.Effect) {
		for x := range e.Effects {
			got = append(got, x)
		}
		return got
	}
	block := effects(fg.NewEvent(1, 2, fg.OpBlock, v))
	want := []fg.Effect{
		{fg.KindBlock, 1, 2, true},
		{fg.KindFollow, 1, 2, false}, {fg.KindFollow, 2, 1, false},
		{fg.KindRequest, 1, 2, false}, {fg.KindRequest, 2, 1, false},
	}
	if len(block) != len(want) {
		t.Fatalf("block effects %v, want %v", block, want)
	}
	for i := range want {
		if block[i] != want[i] {
			t.Errorf("block effect %d = %v, want %v", i, block[i], want[i])
		}
	}
	if got := effects(fg.NewEvent(1, 2, fg.OpFollow, v)); len(got) != 2 || got[1] != (fg.Effect{fg.KindRequest, 1, 2, false}) {
		t.Errorf("follow effects %v: a follow ends the request of its direction", got)
	}
	if got := effects(fg.NewEvent(1, 2, fg.OpUnmute, v)); len(got) != 1 || got[0] != (fg.Effect{fg.KindMute, 1, 2, false}) {
		t.Errorf("unmute effects %v", got)
	}
}

func TestValidateRelationshipEvents(t *testing.T) {
	v := fg.VersionAt(1_000_000)
	mute := fg.NewEvent(1, 2, fg.OpMute, v)
	mute.Since = v.Time().Add(-time.Second)
	mute.Expires = v.Time().Add(time.Hour)
	private := fg.NewEvent(1, 0, fg.OpPrivate, v)
	for _, ok := range []fg.Event{mute, private, fg.NewEvent(1, 2, fg.OpBlock, v), fg.NewEvent(1, 0, fg.OpPublic, v)} {
		if err := ok.Validate(); err != nil {
			t.Errorf("%s %s: %v", ok.Op, ok.ID(), err)
		}
	}
	noSince := mute
	noSince.Since = time.Time{}
	expiresFirst := mute
	expiresFirst.Expires = mute.Since
	followSince := fg.NewEvent(1, 2, fg.OpFollow, v)
	followSince.Since = v.Time()
	for name, bad := range map[string]fg.Event{
		"mute without since":     noSince,
		"mute expiring at since": expiresFirst,
		"follow with a since":    followSince,
		"private with a target":  fg.NewEvent(1, 2, fg.OpPrivate, v),
		"block without a target": fg.NewEvent(1, 0, fg.OpBlock, v),
		"self block":             fg.NewEvent(3, 3, fg.OpBlock, v),
		"unknown op":             fg.NewEvent(1, 2, fg.Op(11), v),
	} {
		if bad.Validate() == nil {
			t.Errorf("%s: valid", name)
		}
	}
	if a, b := fg.NewEvent(1, 2, fg.OpFollow, v).ID(), fg.NewEvent(1, 2, fg.OpBlock, v).ID(); a == b {
		t.Errorf("a follow and a block share the id %s", a)
	}
}
