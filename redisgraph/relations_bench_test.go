package redisgraph_test

import (
	"context"
	"testing"

	fg "github.com/followgraph/followgraph"
)

// BenchmarkRelations100 is the relations of a viewer who follows 2000
// users and is followed by 2000 (500 mutual) to 100 ids. Plain is a viewer
// with follows only; WithFlags the same viewer who also blocks 50 users,
// is blocked by 50, mutes 50 and has 50 requests out and 50 in, so every
// set of the other kinds is probed too (skipped by an engine without
// them). The file also builds on the engine from before blocks, mutes and
// requests, so that Plain runs on both side by side.
func BenchmarkRelations100(b *testing.B) {
	c, ctx := benchRedis(b), context.Background()
	const viewer = fg.UserID(1)
	var events []fg.Event
	for i := range 2000 {
		events = append(events,
			benchFollowEvent(viewer, fg.UserID(1001+i), benchEpoch+int64(i)),
			benchFollowEvent(fg.UserID(2501+i), viewer, benchEpoch+int64(i)))
	}
	ids := make([]fg.UserID, 100)
	for i := range ids {
		ids[i] = fg.UserID(1001 + i*41)
	}
	var flags []fg.Event
	v := fg.VersionAt(benchEpoch + 10_000)
	for i := range 50 {
		for j, e := range []struct {
			u, t fg.UserID
			op   fg.Op
		}{
			{viewer, fg.UserID(10_001 + i), 3}, // OpBlock, OpMute, OpRequest by value: the old engine has no names for them
			{fg.UserID(20_001 + i), viewer, 3},
			{viewer, fg.UserID(30_001 + i), 5},
			{viewer, fg.UserID(40_001 + i), 7},
			{fg.UserID(50_001 + i), viewer, 7},
		} {
			ev := fg.NewEvent(e.u, e.t, e.op, v+fg.Version(5*i+j))
			if e.op == 5 {
				ev.Since = ev.Time
			}
			flags = append(flags, ev)
		}
	}
	for _, x := range []struct {
		name  string
		extra []fg.Event
	}{{"Plain", nil}, {"WithFlags", flags}} {
		b.Run(x.name, func(b *testing.B) {
			g := benchGraph(b, c, benchPrefix(b, c))
			if err := benchApply(ctx, g, events); err != nil {
				b.Fatal(err)
			}
			if len(x.extra) > 0 {
				if err := g.Apply(ctx, x.extra); err != nil {
					b.Skipf("the engine takes no blocks, mutes or requests: %v", err)
				}
			}
			if _, err := g.Relations(ctx, viewer, ids); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if _, err := g.Relations(ctx, viewer, ids); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
