package pipeline_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/memgraph"
	"github.com/followgraph/followgraph/pipeline"
)

// TestPersister_Import: the other regions' events reach the engine, its
// own region's only with Own, and a batch with an event of another region
// too far ahead of the clock is held back, applied to neither the engine
// nor the store, until the clock catches up.
func TestPersister_Import(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	for _, own := range []bool{false, true} {
		engine := memgraph.New()
		store := openStore(t)
		reg := prometheus.NewRegistry()
		p := pipeline.New(store, reg, pipeline.WithImport(pipeline.Importer{Apply: engine.Apply, Own: own, Now: clock}))
		ms := now.UnixMilli()
		mine := pipeline.Message{Seq: 1, Event: fg.NewEvent(1, 2, fg.OpFollow, fg.VersionAt(ms-10)+1)}
		theirs := pipeline.Message{Seq: 2, Event: fg.NewEvent(3, 4, fg.OpFollow, fg.VersionAt(ms-5)+2), Foreign: true}
		if err := p.Handle(ctx, []pipeline.Message{mine, theirs}, 0); err != nil {
			t.Fatal(err)
		}
		if e, _ := engine.IsFollowing(ctx, 3, 4); !e.Following {
			t.Errorf("Own %v: the other region's follow 3→4 is not in the engine", own)
		}
		if e, _ := engine.IsFollowing(ctx, 1, 2); e.Following != own {
			t.Errorf("Own %v: the region's own follow 1→2 in the engine = %v, want %v", own, e.Following, own)
		}

		ahead := pipeline.Message{Seq: 3, Event: fg.NewEvent(5, 6, fg.OpFollow, fg.VersionAt(ms+600)+2), Foreign: true}
		err := p.Handle(ctx, []pipeline.Message{ahead}, 0)
		if !errors.Is(err, pipeline.ErrAhead) {
			t.Fatalf("Handle of an event 600 ms ahead = %v, want ErrAhead", err)
		}
		if e, _ := engine.IsFollowing(ctx, 5, 6); e.Following {
			t.Error("an event held back reached the engine")
		}
		if got := metric(t, reg, "followgraph_region_ahead_total"); got != 1 {
			t.Errorf("followgraph_region_ahead_total = %v, want 1", got)
		}
		now = now.Add(100 * time.Millisecond) // 500 ms ahead: within the max offset
		if err := p.Handle(ctx, []pipeline.Message{ahead}, 0); err != nil {
			t.Fatalf("Handle once the clock is within the max offset: %v", err)
		}
		if e, _ := engine.IsFollowing(ctx, 5, 6); !e.Following {
			t.Error("the event held back is not in the engine once applied")
		}
		now = now.Add(-100 * time.Millisecond)
	}
}

// TestPersister_Mend: another region's follow made while this region's
// block of the pair was on its way there outlives the block in both
// (highest version wins per edge); the persister mends it here, by an
// unfollow of this region's, and counts it.
func TestPersister_Mend(t *testing.T) {
	ctx := context.Background()
	var mine []fg.Event
	engine := memgraph.New(memgraph.WithRegion(1), memgraph.WithHook(func(_ context.Context, e fg.Event) error {
		mine = append(mine, e)
		return nil
	}))
	reg := prometheus.NewRegistry()
	mend := func(ctx context.Context, events []fg.Event) (int, error) { return fg.Mend(ctx, engine, events) }
	p := pipeline.New(openStore(t), reg, pipeline.WithImport(pipeline.Importer{Apply: engine.Apply, Mend: mend}))
	if _, err := engine.Block(ctx, 1, 2); err != nil {
		t.Fatal(err)
	}
	follow := fg.NewEvent(2, 1, fg.OpFollow, mine[0].Version+1) // region 2's, made before it saw the block
	if err := p.Handle(ctx, []pipeline.Message{{Seq: 2, Event: follow, Foreign: true}}, 0); err != nil {
		t.Fatal(err)
	}
	if e, _ := engine.IsFollowing(ctx, 2, 1); e.Following {
		t.Error("2 follows 1, who blocks it, after the persister took the other region's follow")
	}
	if len(mine) != 2 || mine[1].Op != fg.OpUnfollow || mine[1].Version <= follow.Version {
		t.Errorf("this region's events: %+v, want the block and an unfollow 2→1 above the follow's version", mine)
	}
	if got := metric(t, reg, "followgraph_region_mended_total"); got != 1 {
		t.Errorf("followgraph_region_mended_total = %v, want 1", got)
	}
}
