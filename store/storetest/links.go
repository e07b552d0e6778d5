package storetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	fg "github.com/followgraph/followgraph"
)

// Block is the event of u blocking t at version ver.
func Block(u, t fg.UserID, ver fg.Version) fg.Event { return fg.NewEvent(u, t, fg.OpBlock, ver) }

// Unblock is the event of u unblocking t at version ver.
func Unblock(u, t fg.UserID, ver fg.Version) fg.Event { return fg.NewEvent(u, t, fg.OpUnblock, ver) }

// Request is the event of u asking to follow t at version ver.
func Request(u, t fg.UserID, ver fg.Version) fg.Event { return fg.NewEvent(u, t, fg.OpRequest, ver) }

// Unrequest is the event of u's request to follow t ended (withdrawn or
// rejected) at version ver.
func Unrequest(u, t fg.UserID, ver fg.Version) fg.Event {
	return fg.NewEvent(u, t, fg.OpUnrequest, ver)
}

// Unmute is the event of u unmuting t at version ver.
func Unmute(u, t fg.UserID, ver fg.Version) fg.Event { return fg.NewEvent(u, t, fg.OpUnmute, ver) }

// Private is the event of u's account made private at version ver.
func Private(u fg.UserID, ver fg.Version) fg.Event { return fg.NewEvent(u, 0, fg.OpPrivate, ver) }

// Public is the event of u's account made public at version ver.
func Public(u fg.UserID, ver fg.Version) fg.Event { return fg.NewEvent(u, 0, fg.OpPublic, ver) }

// testLinksBlock: a block is one event that ends the follows and the
// requests between the two, both ways, as tombstones a late older follow
// or request does not get past; an unblock restores nothing.
func (s suite) testLinksBlock(t *testing.T) {
	st := s.newStore(t)
	Apply(t, st, 1, Follow(1, 2, V(1)), Follow(2, 1, V(2)), Follow(1, 3, V(2)))
	if n := Apply(t, st, 2, Block(1, 2, V(3))); n != 5 {
		t.Errorf("a block changed %d rows, want 5: the block, two follows, two requests", n)
	}
	want := []fg.Event{
		Unfollow(1, 2, V(3)), Follow(1, 3, V(2)), Unfollow(2, 1, V(3)),
		Block(1, 2, V(3)), Unrequest(1, 2, V(3)), Unrequest(2, 1, V(3)),
	}
	CheckEvents(t, st, want)
	// Older events of the pair, arriving late, change nothing.
	for _, e := range []fg.Event{Follow(1, 2, V(2)), Follow(2, 1, V(1)), Request(2, 1, V(2)), Unblock(1, 2, V(2))} {
		if n := Apply(t, st, 3, e); n != 0 {
			t.Errorf("%v after the block changed %d rows", e, n)
		}
	}
	CheckEvents(t, st, want)
	Apply(t, st, 4, Unblock(1, 2, V(4)))
	want[3] = Unblock(1, 2, V(4))
	CheckEvents(t, st, want)
}

// testLinksConverge: a history of every kind, in random orders with
// duplicates, in one batch or one event per batch delivered twice, ends
// at the same state.
func (s suite) testLinksConverge(t *testing.T) {
	expires := V(1 << 30).Time()
	history := []fg.Event{
		Request(1, 2, V(1)), Follow(1, 2, V(2)), Unfollow(1, 2, V(3)),
		Block(2, 1, V(4)), Unblock(2, 1, V(5)),
		Mute(1, 3, V(6), V(6).Time(), time.Time{}), Mute(1, 3, V(7), V(6).Time(), expires),
		Private(2, V(8)), Public(2, V(9)), Request(3, 2, V(10)),
		State(1, fg.StateSuspended, V(11)), State(1, fg.StateActive, V(12)),
	}
	want := []fg.Event{
		Unfollow(1, 2, V(4)), Unfollow(2, 1, V(4)),
		Mute(1, 3, V(7), V(6).Time(), expires), Unrequest(1, 2, V(4)), State(1, fg.StateActive, V(12)),
		Unblock(2, 1, V(5)), Unrequest(2, 1, V(4)), Public(2, V(9)),
		Request(3, 2, V(10)),
	}
	rng := rand.New(rand.NewPCG(15, 4))
	for i := range 6 {
		perm := slices.Clone(history)
		rng.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			st := s.newStore(t)
			Apply(t, st, 1, slices.Concat(perm, perm)...)
			CheckEvents(t, st, want)

			st = s.newStore(t)
			for i, e := range perm {
				Apply(t, st, uint64(i+1), e)
				if n := Apply(t, st, uint64(i+1), e); n != 0 {
					t.Errorf("redelivery of %v changed %d rows", e, n)
				}
			}
			CheckEvents(t, st, want)
		})
	}
}

// testLinksRequestThenFollow: a follow (an approval) ends the request of
// its direction whichever of the two arrives first, and a request made
// after the follow ended is pending again.
func (s suite) testLinksRequestThenFollow(t *testing.T) {
	for _, order := range [][]fg.Event{
		{Request(1, 2, V(1)), Follow(1, 2, V(2))},
		{Follow(1, 2, V(2)), Request(1, 2, V(1))},
	} {
		st := s.newStore(t)
		for i, e := range order {
			Apply(t, st, uint64(i+1), e)
		}
		CheckEvents(t, st, []fg.Event{Follow(1, 2, V(2)), Unrequest(1, 2, V(2))})
		Apply(t, st, 3, Unfollow(1, 2, V(3)))
		CheckEvents(t, st, []fg.Event{Unfollow(1, 2, V(3)), Unrequest(1, 2, V(3))})
		Apply(t, st, 4, Request(1, 2, V(4)))
		CheckEvents(t, st, []fg.Event{Unfollow(1, 2, V(3)), Request(1, 2, V(4))})
	}
}

// testLinksMute: a mute's since and expiry read back to the millisecond,
// a repeated mute keeps its since and changes its expiry, an expired mute
// is kept with its expiry (reads filter it), and an unmute is a tombstone.
func (s suite) testLinksMute(t *testing.T) {
	st := s.newStore(t)
	since := V(0).Time().Add(-time.Hour)
	expired := Mute(1, 4, V(2), V(1).Time(), V(1).Time().Add(time.Millisecond))
	Apply(t, st, 1, Mute(1, 2, V(1), since, time.Time{}), Mute(1, 3, V(1), V(1).Time(), V(1<<20).Time()), expired)
	CheckEvents(t, st, []fg.Event{
		Mute(1, 2, V(1), since, time.Time{}), Mute(1, 3, V(1), V(1).Time(), V(1<<20).Time()), expired,
	})
	later := V(1 << 21).Time()
	Apply(t, st, 2, Mute(1, 2, V(3), since, later), Unmute(1, 3, V(3)))
	CheckEvents(t, st, []fg.Event{Mute(1, 2, V(3), since, later), Unmute(1, 3, V(3)), expired})
	if n := Apply(t, st, 3, Mute(1, 3, V(2), V(2).Time(), time.Time{})); n != 0 {
		t.Errorf("an older mute after the unmute changed %d rows", n)
	}
}

// testLinksPrivate: the private setting is a row of its own kind with
// target 0, by the same rule.
func (s suite) testLinksPrivate(t *testing.T) {
	st := s.newStore(t)
	Apply(t, st, 1, Private(5, V(1)), Private(6, V(1)))
	Apply(t, st, 2, Public(5, V(2)))
	if n := Apply(t, st, 3, Private(5, V(1)), Public(6, V(0))); n != 0 {
		t.Errorf("older settings changed %d rows", n)
	}
	CheckEvents(t, st, []fg.Event{Public(5, V(2)), Private(6, V(1))})
}

// testLinksList: a store that answers lists pages a user's blocks, mutes
// (expired ones left out) and pending follow requests to a user (ended
// ones left out, by an approval too) newest first, ties by the larger id,
// without repeats across pages, and rejects bad arguments.
func (s suite) testLinksList(t *testing.T) {
	st := s.newStore(t)
	l, ok := st.(LinkLister)
	if !ok {
		t.Log("this store answers no lists: the engine does")
		return
	}
	now := time.Now()
	Apply(t, st, 1,
		Block(1, 2, V(1)), Block(1, 3, V(2)), Block(1, 4, V(2)), Block(1, 5, V(3)), Unblock(1, 5, V(4)), Block(2, 1, V(5)),
		Mute(1, 6, V(1), V(1).Time(), time.Time{}), Mute(1, 7, V(2), V(2).Time(), now.Add(-time.Second)),
		Mute(1, 8, V(3), V(3).Time(), now.Add(time.Hour)),
		Request(11, 1, V(1)), Request(12, 1, V(2)), Request(13, 1, V(3)), Request(14, 1, V(4)), Request(15, 9, V(4)),
	)
	Apply(t, st, 2, Follow(12, 1, V(5)), Unrequest(13, 1, V(5))) // an approval and a rejection
	Apply(t, st, 3, Follow(14, 1, V(6)), Request(14, 1, V(5)))   // an approval arriving before its request
	ctx := context.Background()
	for _, c := range []struct {
		list string
		want []fg.Entry
	}{
		{fg.ListBlocks, []fg.Entry{{ID: 4, Since: V(2).Time()}, {ID: 3, Since: V(2).Time()}, {ID: 2, Since: V(1).Time()}}},
		{fg.ListMutes, []fg.Entry{{ID: 8, Since: V(3).Time()}, {ID: 6, Since: V(1).Time()}}},
		{fg.ListFollowRequests, []fg.Entry{{ID: 11, Since: V(1).Time()}}},
	} {
		var got []fg.Entry
		var after *fg.Key
		for range 10 {
			page, err := l.Links(ctx, c.list, 1, after, 2)
			if err != nil {
				t.Fatalf("%s: %v", c.list, err)
			}
			got = append(got, page...)
			if len(page) < 2 {
				break
			}
			k := fg.Key{Millis: page[1].Since.UnixMilli(), ID: page[1].ID}
			after = &k
		}
		if !slices.EqualFunc(got, c.want, func(a, b fg.Entry) bool { return a.ID == b.ID && a.Since.Equal(b.Since) }) {
			t.Errorf("%s of 1: %v, want %v", c.list, got, c.want)
		}
	}
	for _, bad := range []struct {
		list  string
		user  fg.UserID
		limit int
		code  string
	}{
		{"following", 1, 10, fg.EInvalidArgument},
		{fg.ListBlocks, 0, 10, fg.EInvalidID},
		{fg.ListBlocks, 1, 0, fg.EInvalidArgument},
		{fg.ListMutes, 1, fg.MaxLimit + 1, fg.EInvalidArgument},
	} {
		if _, err := l.Links(ctx, bad.list, bad.user, nil, bad.limit); fg.ErrorCode(err) != bad.code {
			t.Errorf("Links(%q, %d, limit %d): %v, want %s", bad.list, bad.user, bad.limit, err, bad.code)
		}
	}
}
