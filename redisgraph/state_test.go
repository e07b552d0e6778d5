package redisgraph

import (
	"context"
	"testing"

	fg "github.com/followgraph/followgraph"
)

// TestApply_RefusesStates: until Redis has account states, replaying a
// state other than active fails the batch before anything of it is
// written; active, every user's state here, passes.
func TestApply_RefusesStates(t *testing.T) {
	ctx := context.Background()
	g := newTestGraph(t, modes[0].client(t))
	v := fg.VersionAt(1_700_000_000_000)
	err := g.Apply(ctx, []fg.Event{fg.NewEvent(2, 1, fg.OpFollow, v+1), fg.NewStateEvent(1, fg.StateDeactivated, v+2)})
	if fg.ErrorCode(err) != fg.EUnavailable {
		t.Fatalf("Apply of a deactivated state = %v, want unavailable", err)
	}
	if c, _ := g.Counts(ctx, []fg.UserID{1}); c[0].FollowerCount != 0 {
		t.Errorf("Counts(1) = %+v: the refused batch wrote its follow", c)
	}
	if err := g.Apply(ctx, []fg.Event{fg.NewEvent(2, 1, fg.OpFollow, v+1), fg.NewEvent(1, 0, fg.OpState, v+3)}); err != nil {
		t.Fatalf("Apply of an active state: %v", err)
	}
	if c, _ := g.Counts(ctx, []fg.UserID{1}); c[0].FollowerCount != 1 {
		t.Errorf("Counts(1) = %+v after the follow", c)
	}
}
