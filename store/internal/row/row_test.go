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
