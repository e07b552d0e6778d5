package row

import (
	"iter"
	"slices"
	"testing"

	fg "github.com/followgraph/followgraph"
)

func TestChunks(t *testing.T) {
	ev := func(u fg.UserID) fg.Event { return fg.NewEvent(u, 100, fg.OpFollow, fg.VersionAt(1_700_000_000_000)) }
	followers := func(chunks iter.Seq2[[]Edge, error]) [][]int64 {
		var got [][]int64
		for c, err := range chunks {
			if err != nil {
				got = append(got, []int64{-1})
				continue
			}
			var ids []int64
			for _, e := range c {
				ids = append(ids, e.Follower)
			}
			got = append(got, ids)
		}
		return got
	}
	for _, c := range []struct {
		name   string
		events []fg.Event
		want   [][]int64 // -1: the error
	}{
		{"empty", nil, nil},
		{"exact", []fg.Event{ev(1), ev(2), ev(3), ev(4)}, [][]int64{{1, 2}, {3, 4}}},
		{"tail", []fg.Event{ev(1), ev(2), ev(3)}, [][]int64{{1, 2}, {3}}},
		{"invalid", []fg.Event{ev(1), ev(2), ev(3), fg.NewEvent(5, 5, fg.OpFollow, 1), ev(6)}, [][]int64{{1, 2}, {-1}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := followers(Chunks(slices.Values(c.events), 2)); !slices.EqualFunc(got, c.want, slices.Equal) {
				t.Errorf("chunks %v, want %v", got, c.want)
			}
		})
	}
	// A consumer that stops early is not called again.
	n := 0
	for range Chunks(slices.Values([]fg.Event{ev(1), ev(2), ev(3)}), 1) {
		if n++; n == 2 {
			break
		}
	}
	if n != 2 {
		t.Errorf("%d chunks after a break at the second, want 2", n)
	}
}

func TestEdge_Event(t *testing.T) {
	for _, e := range []fg.Event{
		fg.NewEvent(1, 2, fg.OpFollow, fg.VersionAt(1_700_000_000_000)+3),
		fg.NewEvent(fg.MaxUserID, 1, fg.OpUnfollow, MaxVersion),
	} {
		r, err := FromEvent(e)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Event(); got.User != e.User || got.Target != e.Target || got.Op != e.Op ||
			got.Version != e.Version || !got.Time.Equal(e.Time) {
			t.Errorf("FromEvent(%v).Event() = %v", e, got)
		}
	}
}

func TestBatch_Effects(t *testing.T) {
	v := fg.VersionAt(1_700_000_000_000)
	mute := fg.NewEvent(1, 3, fg.OpMute, v+2)
	mute.Since, mute.Expires = fg.Millis(1_699_999_999_000), fg.Millis(1_700_000_360_000)
	rows, err := Batch([]fg.Event{
		fg.NewEvent(2, 1, fg.OpFollow, v),
		fg.NewEvent(1, 2, fg.OpRequest, v),
		fg.NewEvent(1, 2, fg.OpBlock, v+1),
		fg.NewEvent(1, 2, fg.OpBlock, v+1), // a duplicate
		mute,
		fg.NewEvent(1, 0, fg.OpPrivate, v+3),
		fg.NewStateEvent(1, fg.StateSuspended, v+4),
		fg.NewStateEvent(3, fg.StateSuspended, v+4),
		fg.NewStateEvent(3, fg.StateActive, v+5), // the newer of two
	}, 9)
	if err != nil {
		t.Fatal(err)
	}
	ms := v.Millis()
	wantEdges := []Edge{{1, 2, false, ms, int64(v + 1)}, {2, 1, false, ms, int64(v + 1)}}
	wantLinks := []Link{
		{1, fg.KindBlock, 2, true, ms, 0, int64(v + 1), 0},
		{1, fg.KindMute, 3, true, 1_699_999_999_000, 1_700_000_360_000, int64(v + 2), 0},
		{1, fg.KindRequest, 2, false, ms, 0, int64(v + 1), 0},
		{1, fg.KindPrivate, 0, true, ms, 0, int64(v + 3), 0},
		{1, fg.KindState, 0, true, ms, 0, int64(v + 4), fg.StateSuspended},
		{2, fg.KindRequest, 1, false, ms, 0, int64(v + 1), 0},
		{3, fg.KindState, 0, false, ms, 0, int64(v + 5), fg.StateActive},
	}
	if !slices.Equal(rows.Edges, wantEdges) || !slices.Equal(rows.Links, wantLinks) {
		t.Errorf("Batch =\n %v\n %v\nwant\n %v\n %v", rows.Edges, rows.Links, wantEdges, wantLinks)
	}
	for _, l := range rows.Links {
		if got := l.Event(); got.Op != fg.OpOf(l.Kind, l.On) || int64(got.User) != l.User || int64(got.Target) != l.Target ||
			got.State != l.State {
			t.Errorf("%v.Event() = %v", l, got)
		} else if err := got.Validate(); err != nil {
			t.Errorf("%v.Event(): %v", l, err)
		}
	}
	if got := wantLinks[1].Event(); !got.Since.Equal(mute.Since) || !got.Expires.Equal(mute.Expires) {
		t.Errorf("the mute's row gives back since %v, expires %v; want %v, %v", got.Since, got.Expires, mute.Since, mute.Expires)
	}
	// A batch of follows writes no link.
	rows, err = Batch([]fg.Event{fg.NewEvent(1, 2, fg.OpFollow, v), fg.NewEvent(1, 2, fg.OpUnfollow, v+1)}, 1)
	if err != nil || len(rows.Links) != 0 || len(rows.Edges) != 1 {
		t.Errorf("a batch of follows = %v, %v", rows, err)
	}
	// Import takes follows only.
	if _, err := FromEvent(fg.NewEvent(1, 2, fg.OpBlock, v)); fg.ErrorCode(err) != fg.EInvalidArgument {
		t.Errorf("FromEvent of a block: %v, want %s", err, fg.EInvalidArgument)
	}
}

func TestLink_Settle(t *testing.T) {
	req := Link{User: 1, Kind: fg.KindRequest, Target: 2, On: true, SinceMs: 5, Version: 5 << 20}
	if got := req.Settle(0); got != req {
		t.Errorf("with no follow: %v", got)
	}
	if got := req.Settle(4 << 20); got != req {
		t.Errorf("after an older follow: %v", got)
	}
	if got := req.Settle(6 << 20); got.On || got.Version != 6<<20 || got.SinceMs != 6 {
		t.Errorf("after a newer follow: %v, want off at the follow's version", got)
	}
	block := Link{User: 1, Kind: fg.KindBlock, Target: 2, On: true, SinceMs: 5, Version: 5 << 20}
	if got := block.Settle(6 << 20); got != block {
		t.Errorf("a block beside a newer follow row: %v", got)
	}
}

func TestRefused(t *testing.T) {
	refusals := []fg.Refusal{{Version: 1}, {Version: 2}}
	var r Refused
	r.Report(refusals) // the default calls nothing
	var got []fg.Refusal
	r.Set(func(x fg.Refusal) { got = append(got, x) })
	r.Set(nil) // keeps what was set
	r.Report(refusals)
	if !slices.Equal(got, refusals) {
		t.Errorf("reported %v, want %v", got, refusals)
	}
}
