package graphtest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/followgraph/followgraph"
)

// linkLists are the lists of Graph.Links.
var linkLists = []string{followgraph.ListBlocks, followgraph.ListMutes, followgraph.ListFollowRequests}

// linksList is the list named name (one of linkLists) of user.
func linksList(g followgraph.Graph, name string, user followgraph.UserID) list {
	return list{
		name: fmt.Sprintf("Links(%s, %d)", name, user),
		read: func(ctx context.Context, req followgraph.PageRequest) (followgraph.SetPage, error) {
			return asSetPage(g.Links(ctx, name, user, req))
		},
		want: func(m *model) []followgraph.Entry { return m.links(name, user, m.now()) },
	}
}

func (f *fixture) block(user, target followgraph.UserID) followgraph.LinkResult {
	f.tb.Helper()
	res, err := f.g.Block(f.ctx, user, target)
	if err != nil {
		f.tb.Fatalf("Block(%d, %d): %v", user, target, err)
	}
	return res
}

func (f *fixture) unblock(user, target followgraph.UserID) bool {
	f.tb.Helper()
	removed, err := f.g.Unblock(f.ctx, user, target)
	if err != nil {
		f.tb.Fatalf("Unblock(%d, %d): %v", user, target, err)
	}
	return removed
}

func (f *fixture) mute(user, target followgraph.UserID, d time.Duration) followgraph.LinkResult {
	f.tb.Helper()
	res, err := f.g.Mute(f.ctx, user, target, d)
	if err != nil {
		f.tb.Fatalf("Mute(%d, %d, %s): %v", user, target, d, err)
	}
	return res
}

func (f *fixture) unmute(user, target followgraph.UserID) bool {
	f.tb.Helper()
	removed, err := f.g.Unmute(f.ctx, user, target)
	if err != nil {
		f.tb.Fatalf("Unmute(%d, %d): %v", user, target, err)
	}
	return removed
}

func (f *fixture) link(kind followgraph.Kind, user, target followgraph.UserID) followgraph.Link {
	f.tb.Helper()
	l, err := f.g.Link(f.ctx, kind, user, target)
	if err != nil {
		f.tb.Fatalf("Link(%s, %d, %d): %v", kind, user, target, err)
	}
	return l
}

func (f *fixture) links(name string, user followgraph.UserID) []followgraph.Entry {
	f.tb.Helper()
	return f.read(linksList(f.g, name, user))
}

func (f *fixture) approve(user, requester followgraph.UserID) followgraph.FollowResult {
	f.tb.Helper()
	res, err := f.g.Approve(f.ctx, user, requester)
	if err != nil {
		f.tb.Fatalf("Approve(%d, %d): %v", user, requester, err)
	}
	return res
}

func (f *fixture) removeFollower(user, follower followgraph.UserID) bool {
	f.tb.Helper()
	removed, err := f.g.RemoveFollower(f.ctx, user, follower)
	if err != nil {
		f.tb.Fatalf("RemoveFollower(%d, %d): %v", user, follower, err)
	}
	return removed
}

func (f *fixture) setPrivate(user followgraph.UserID, private bool) {
	f.tb.Helper()
	st, err := f.g.SetPrivate(f.ctx, user, private)
	if err != nil {
		f.tb.Fatalf("SetPrivate(%d, %v): %v", user, private, err)
	}
	if st != (followgraph.Settings{ID: user, Private: private}) {
		f.tb.Errorf("SetPrivate(%d, %v) = %+v, want the settings it set", user, private, st)
	}
}

func (f *fixture) settings(user followgraph.UserID) followgraph.Settings {
	f.tb.Helper()
	st, err := f.g.Settings(f.ctx, user)
	if err != nil {
		f.tb.Fatalf("Settings(%d): %v", user, err)
	}
	return st
}

// checkFollowResult reports unless got is want.
func checkFollowResult(tb testing.TB, what string, got, want followgraph.FollowResult) {
	tb.Helper()
	if got.Created != want.Created || !got.Since.Equal(want.Since) || got.Requested != want.Requested {
		tb.Errorf("%s = {Created: %v, Since: %s, Requested: %v}, want {Created: %v, Since: %s, Requested: %v}", what,
			got.Created, formatTime(got.Since), got.Requested, want.Created, formatTime(want.Since), want.Requested)
	}
}

func on(ms int64) followgraph.Link { return followgraph.Link{On: true, Since: followgraph.Millis(ms)} }

// testBlockRemovesEdges: a block ends the follows both ways and the
// pending requests both ways, with the counts, and no other edge.
func (s suite) testBlockRemovesEdges(t *testing.T) {
	f := s.fixture(t, 0)
	t0 := f.now()
	f.follow(1, 2)
	f.follow(2, 1)
	f.followAll(1, 5)
	f.follow(5, 2)
	f.setPrivate(3, true)
	f.setPrivate(1, true)
	f.follow(1, 3) // a request
	f.follow(3, 1) // a request
	f.advance(1)

	res := f.block(1, 2)
	checkLinkResult(t, "Block(1, 2)", res, followgraph.LinkResult{Created: true, Since: followgraph.Millis(t0 + 1)})
	res = f.block(3, 1)
	checkLinkResult(t, "Block(3, 1)", res, followgraph.LinkResult{Created: true, Since: followgraph.Millis(t0 + 1)})
	checkEdge(t, "IsFollowing(1, 2) after 1 blocked 2", f.edge(1, 2), followgraph.Edge{})
	checkEdge(t, "IsFollowing(2, 1) after 1 blocked 2", f.edge(2, 1), followgraph.Edge{})
	checkLink(t, "Link(request, 1, 3) after 3 blocked 1", f.link(followgraph.KindRequest, 1, 3), followgraph.Link{})
	checkLink(t, "Link(request, 3, 1) after 3 blocked 1", f.link(followgraph.KindRequest, 3, 1), followgraph.Link{})
	checkCounts(t, "Counts(1, 2, 3, 5)", f.counts(1, 2, 3, 5), []followgraph.Counts{
		{ID: 1, FollowingCount: 1},
		{ID: 2, FollowerCount: 1},
		{ID: 3},
		{ID: 5, FollowingCount: 1, FollowerCount: 1},
	})
	checkEntries(t, "Following(1)", f.following(1), []followgraph.Entry{entry(5, t0)})
	checkEntries(t, "Followers(2)", f.followers(2), []followgraph.Entry{entry(5, t0)})
	checkEntries(t, "Links(follow-requests, 1)", f.links(followgraph.ListFollowRequests, 1), nil)
	checkEntries(t, "Links(follow-requests, 3)", f.links(followgraph.ListFollowRequests, 3), nil)
	checkEntries(t, "Links(blocks, 1)", f.links(followgraph.ListBlocks, 1), []followgraph.Entry{entry(2, t0+1)})
	checkEntries(t, "Links(blocks, 2), who blocks 1 is not listed", f.links(followgraph.ListBlocks, 2), nil)
	checkLink(t, "Link(block, 1, 2)", f.link(followgraph.KindBlock, 1, 2), on(t0+1))
	checkLink(t, "Link(block, 2, 1), the other way", f.link(followgraph.KindBlock, 2, 1), followgraph.Link{})
}

// testBlockRefuses: while either blocks the other, a follow or a request
// between them, either way, is code blocked and changes nothing.
func (s suite) testBlockRefuses(t *testing.T) {
	f := s.fixture(t, 0)
	f.setPrivate(3, true)
	f.setPrivate(4, true)
	f.block(1, 2)
	f.block(3, 1)
	f.block(1, 4)
	before := f.describe(1, 2, 3, 4)
	for _, p := range [][2]followgraph.UserID{{1, 2}, {2, 1}, {1, 3}, {3, 1}, {1, 4}, {4, 1}} {
		_, err := f.g.Follow(f.ctx, p[0], p[1])
		checkCode(t, fmt.Sprintf("Follow(%d, %d) across a block", p[0], p[1]), err, followgraph.EBlocked)
	}
	if after := f.describe(1, 2, 3, 4); after != before {
		t.Errorf("refused follows changed the graph:\nbefore:%s\nafter:%s", before, after)
	}
	// Both ways blocked: one unblock is not enough.
	f.block(2, 1)
	f.unblock(1, 2)
	_, err := f.g.Follow(f.ctx, 1, 2)
	checkCode(t, "Follow(1, 2) while 2 still blocks 1", err, followgraph.EBlocked)
}

// testUnblock: an unblock restores nothing, reports whether there was a
// block, and lets follows be made again.
func (s suite) testUnblock(t *testing.T) {
	f := s.fixture(t, 0)
	f.follow(1, 2)
	f.follow(2, 1)
	f.block(1, 2)
	f.advance(1)
	if !f.unblock(1, 2) {
		t.Error("Unblock(1, 2) of a block = false, want true")
	}
	if f.unblock(1, 2) {
		t.Error("Unblock(1, 2) again = true, want false")
	}
	if f.unblock(2, 1) {
		t.Error("Unblock(2, 1), the other way of a block = true, want false")
	}
	checkLink(t, "Link(block, 1, 2) after the unblock", f.link(followgraph.KindBlock, 1, 2), followgraph.Link{})
	checkCounts(t, "Counts(1, 2) after the unblock", f.counts(1, 2), []followgraph.Counts{{ID: 1}, {ID: 2}})
	checkEntries(t, "Following(1) after the unblock", f.following(1), nil)
	checkEntries(t, "Links(blocks, 1) after the unblock", f.links(followgraph.ListBlocks, 1), nil)
	if res := f.follow(2, 1); !res.Created {
		t.Error("Follow(2, 1) after the unblock: Created = false, want true")
	}
}

// testLinkIdempotent: a repeated block or mute keeps its since.
func (s suite) testLinkIdempotent(t *testing.T) {
	f := s.fixture(t, 0)
	t0 := f.now()
	f.block(1, 2)
	f.mute(1, 3, 0)
	f.setPrivate(4, true)
	f.follow(1, 4)
	f.advance(5)
	checkLinkResult(t, "Block(1, 2) again", f.block(1, 2), followgraph.LinkResult{Since: followgraph.Millis(t0)})
	checkLinkResult(t, "Mute(1, 3, 0) again", f.mute(1, 3, 0), followgraph.LinkResult{Since: followgraph.Millis(t0)})
	res, err := f.g.Follow(f.ctx, 1, 4)
	if err != nil {
		t.Fatal(err)
	}
	checkFollowResult(t, "Follow(1, 4) of a private 4 again", res, followgraph.FollowResult{Since: followgraph.Millis(t0), Requested: true})
	checkLink(t, "Link(block, 1, 2)", f.link(followgraph.KindBlock, 1, 2), on(t0))
	checkLink(t, "Link(mute, 1, 3)", f.link(followgraph.KindMute, 1, 3), on(t0))
	checkLink(t, "Link(request, 1, 4)", f.link(followgraph.KindRequest, 1, 4), on(t0))
	checkCounts(t, "Counts(4)", f.counts(4), []followgraph.Counts{{ID: 4, FollowRequests: 1}})
}

// testLinkSelf: a block, mute or request of oneself is self_follow and
// changes nothing.
func (s suite) testLinkSelf(t *testing.T) {
	f := s.fixture(t, 0)
	f.setPrivate(1, true)
	before := f.describe(1)
	_, err := f.g.Block(f.ctx, 1, 1)
	checkCode(t, "Block(1, 1)", err, followgraph.ESelfFollow)
	_, err = f.g.Mute(f.ctx, 1, 1, 0)
	checkCode(t, "Mute(1, 1, 0)", err, followgraph.ESelfFollow)
	_, err = f.g.Follow(f.ctx, 1, 1)
	checkCode(t, "Follow(1, 1) of a private 1", err, followgraph.ESelfFollow)
	if after := f.describe(1); after != before {
		t.Errorf("refused self links changed the graph:\nbefore:%s\nafter:%s", before, after)
	}
}

// testLinkInvalid: bad ids, kinds, lists and durations are refused with
// their codes.
func (s suite) testLinkInvalid(t *testing.T) {
	f := s.fixture(t, 0)
	f.mute(1, 2, time.Minute)
	before := f.describe(1, 2)
	for _, tt := range []struct {
		what string
		err  error
		code string
	}{
		{"Link(follow, 1, 2)", second(f.g.Link(f.ctx, followgraph.KindFollow, 1, 2)), followgraph.EInvalidArgument},
		{"Link(private, 1, 2)", second(f.g.Link(f.ctx, followgraph.KindPrivate, 1, 2)), followgraph.EInvalidArgument},
		{"Link(kind 99, 1, 2)", second(f.g.Link(f.ctx, followgraph.Kind(99), 1, 2)), followgraph.EInvalidArgument},
		{"Link(block, 0, 2)", second(f.g.Link(f.ctx, followgraph.KindBlock, 0, 2)), followgraph.EInvalidID},
		{"Links(nope, 1)", second(f.g.Links(f.ctx, "nope", 1, followgraph.PageRequest{})), followgraph.EInvalidArgument},
		{"Links(following, 1)", second(f.g.Links(f.ctx, followgraph.ListFollowing, 1, followgraph.PageRequest{})), followgraph.EInvalidArgument},
		{"Links(blocks, 0)", second(f.g.Links(f.ctx, followgraph.ListBlocks, 0, followgraph.PageRequest{})), followgraph.EInvalidID},
		{"Links(blocks, 1) of limit -1", second(f.g.Links(f.ctx, followgraph.ListBlocks, 1, followgraph.PageRequest{Limit: -1})), followgraph.EInvalidArgument},
		{"Links(mutes, 1) of a bad cursor", second(f.g.Links(f.ctx, followgraph.ListMutes, 1, followgraph.PageRequest{Cursor: "x"})), followgraph.EInvalidCursor},
		{"Mute(1, 2, -1s)", second(f.g.Mute(f.ctx, 1, 2, -time.Second)), followgraph.EInvalidArgument},
		{"Mute(1, 2, MaxMute+1ms)", second(f.g.Mute(f.ctx, 1, 2, followgraph.MaxMute+time.Millisecond)), followgraph.EInvalidArgument},
		{"Mute(1, 3, -1s)", second(f.g.Mute(f.ctx, 1, 3, -time.Second)), followgraph.EInvalidArgument},
		{"Block(0, 2)", second(f.g.Block(f.ctx, 0, 2)), followgraph.EInvalidID},
		{"Unblock(1, -2)", second(f.g.Unblock(f.ctx, 1, -2)), followgraph.EInvalidID},
		{"Mute(0, 2, 0)", second(f.g.Mute(f.ctx, 0, 2, 0)), followgraph.EInvalidID},
		{"Unmute(1, 0)", second(f.g.Unmute(f.ctx, 1, 0)), followgraph.EInvalidID},
		{"Approve(0, 2)", second(f.g.Approve(f.ctx, 0, 2)), followgraph.EInvalidID},
		{"Approve(1, 1)", second(f.g.Approve(f.ctx, 1, 1)), followgraph.ESelfFollow},
		{"RemoveFollower(1, 0)", second(f.g.RemoveFollower(f.ctx, 1, 0)), followgraph.EInvalidID},
		{"Settings(0)", second(f.g.Settings(f.ctx, 0)), followgraph.EInvalidID},
		{"SetPrivate(-1, true)", second(f.g.SetPrivate(f.ctx, -1, true)), followgraph.EInvalidID},
	} {
		checkCode(t, tt.what, tt.err, tt.code)
	}
	if after := f.describe(1, 2); after != before {
		t.Errorf("refused calls changed the graph:\nbefore:%s\nafter:%s", before, after)
	}
	checkLink(t, "Link(mute, 1, 2) after refused mutes", f.link(followgraph.KindMute, 1, 2),
		followgraph.Link{On: true, Since: followgraph.Millis(f.now()), Expires: followgraph.Millis(f.now()).Add(time.Minute)})
}

// second returns the error of a call that returns a value and an error.
func second[T any](_ T, err error) error { return err }

// testMuteExpiry: a mute with a duration shows in Link, Links and
// Relations until its expiry and in none of them from then on; a repeated
// mute sets the new expiry and keeps its since.
func (s suite) testMuteExpiry(t *testing.T) {
	f := s.fixture(t, 0)
	t0 := f.now()
	res := f.mute(1, 2, 10*time.Second)
	until := followgraph.Millis(t0).Add(10 * time.Second)
	checkLinkResult(t, "Mute(1, 2, 10s)", res, followgraph.LinkResult{Created: true, Since: followgraph.Millis(t0), Expires: until})
	f.mute(1, 3, 0)
	checkLink(t, "Link(mute, 1, 2)", f.link(followgraph.KindMute, 1, 2), followgraph.Link{On: true, Since: followgraph.Millis(t0), Expires: until})
	checkEntries(t, "Links(mutes, 1)", f.links(followgraph.ListMutes, 1), []followgraph.Entry{entry(3, t0), entry(2, t0)})
	if r := f.relations(1, 2); !r[0].Muting {
		t.Errorf("Relations(1, [2]) = %s, want muting", formatRelation(r[0]))
	}

	f.advance(9_999)
	checkLink(t, "Link(mute, 1, 2) a millisecond before its expiry", f.link(followgraph.KindMute, 1, 2),
		followgraph.Link{On: true, Since: followgraph.Millis(t0), Expires: until})
	f.advance(1)
	checkLink(t, "Link(mute, 1, 2) at its expiry", f.link(followgraph.KindMute, 1, 2), followgraph.Link{})
	checkEntries(t, "Links(mutes, 1) at 2's expiry", f.links(followgraph.ListMutes, 1), []followgraph.Entry{entry(3, t0)})
	checkRelations(t, "Relations(1, [2]) at the mute's expiry", f.relations(1, 2), []followgraph.RelationInfo{{ID: 2, Relation: followgraph.RelationNone}})
	if f.unmute(1, 2) {
		t.Error("Unmute(1, 2) of an expired mute = true, want false")
	}

	// A repeated mute sets the new expiry and keeps its since.
	t1 := f.now()
	res = f.mute(1, 3, time.Minute)
	checkLinkResult(t, "Mute(1, 3, 1m) of a mute with no expiry", res,
		followgraph.LinkResult{Since: followgraph.Millis(t0), Expires: followgraph.Millis(t1).Add(time.Minute)})
	f.advance(1)
	res = f.mute(1, 3, 0)
	checkLinkResult(t, "Mute(1, 3, 0) again", res, followgraph.LinkResult{Since: followgraph.Millis(t0)})
	checkLink(t, "Link(mute, 1, 3)", f.link(followgraph.KindMute, 1, 3), on(t0))

	// A mute after an expired one is new.
	t2 := f.now()
	res = f.mute(1, 2, time.Second)
	checkLinkResult(t, "Mute(1, 2, 1s) after the mute expired", res,
		followgraph.LinkResult{Created: true, Since: followgraph.Millis(t2), Expires: followgraph.Millis(t2).Add(time.Second)})
	if !f.unmute(1, 2) {
		t.Error("Unmute(1, 2) = false, want true")
	}
	checkEntries(t, "Links(mutes, 1) after the unmute", f.links(followgraph.ListMutes, 1), []followgraph.Entry{entry(3, t0)})
}

// testMuteChangesNoFollow: muting and unmuting changes no follow, no
// count and no list.
func (s suite) testMuteChangesNoFollow(t *testing.T) {
	f := s.fixture(t, 0)
	f.follow(1, 2)
	f.follow(2, 1)
	f.follow(3, 2)
	before := f.describe(1, 2, 3)
	f.mute(1, 2, 0)
	f.mute(2, 1, time.Hour)
	f.unmute(2, 1)
	f.unmute(1, 2)
	if after := f.describe(1, 2, 3); after != before {
		t.Errorf("mutes changed the graph:\nbefore:%s\nafter:%s", before, after)
	}
	checkRelations(t, "Relations(1, [2])", f.relations(1, 2), []followgraph.RelationInfo{{
		ID: 2, Relation: followgraph.RelationMutual, FollowingSince: followgraph.Millis(f.now()), FollowedBySince: followgraph.Millis(f.now()),
	}})
}

// testPrivateRequest: a follow of a private account is a request: not a
// follow, in no follow list or count, counted in FollowRequests, listed in
// Links(follow-requests); Unfollow withdraws it.
func (s suite) testPrivateRequest(t *testing.T) {
	f := s.fixture(t, 0)
	if st := f.settings(2); st != (followgraph.Settings{ID: 2}) {
		t.Errorf("Settings(2) of a user never set = %+v, want public", st)
	}
	f.setPrivate(2, true)
	if st := f.settings(2); st != (followgraph.Settings{ID: 2, Private: true}) {
		t.Errorf("Settings(2) = %+v, want private", st)
	}
	t0 := f.now()
	res := f.follow(1, 2)
	checkFollowResult(t, "Follow(1, 2) of a private 2", res, followgraph.FollowResult{Created: true, Since: followgraph.Millis(t0), Requested: true})
	f.advance(3)
	f.follow(3, 2)
	res = f.follow(1, 2)
	checkFollowResult(t, "Follow(1, 2) again", res, followgraph.FollowResult{Since: followgraph.Millis(t0), Requested: true})
	checkEdge(t, "IsFollowing(1, 2) while requested", f.edge(1, 2), followgraph.Edge{})
	checkCounts(t, "Counts(1, 2)", f.counts(1, 2), []followgraph.Counts{{ID: 1}, {ID: 2, FollowRequests: 2}})
	checkEntries(t, "Following(1)", f.following(1), nil)
	checkEntries(t, "Followers(2)", f.followers(2), nil)
	checkListEveryLimit(t, f.ctx, linksList(f.g, followgraph.ListFollowRequests, 2), []followgraph.Entry{entry(3, t0+3), entry(1, t0)})
	checkLink(t, "Link(request, 1, 2)", f.link(followgraph.KindRequest, 1, 2), on(t0))
	checkRelations(t, "Relations(1, [2])", f.relations(1, 2), []followgraph.RelationInfo{{ID: 2, Relation: followgraph.RelationNone, Requested: true}})
	checkRelations(t, "Relations(2, [1])", f.relations(2, 1), []followgraph.RelationInfo{{ID: 1, Relation: followgraph.RelationNone, RequestedBy: true}})

	if !f.unfollow(1, 2) {
		t.Error("Unfollow(1, 2) of a pending request = false, want true")
	}
	if f.unfollow(1, 2) {
		t.Error("Unfollow(1, 2) of a withdrawn request = true, want false")
	}
	checkLink(t, "Link(request, 1, 2) after the withdrawal", f.link(followgraph.KindRequest, 1, 2), followgraph.Link{})
	checkCounts(t, "Counts(2)", f.counts(2), []followgraph.Counts{{ID: 2, FollowRequests: 1}})

	// A follower from before the account was private stays a follower.
	f.setPrivate(2, false)
	f.follow(4, 2)
	f.setPrivate(2, true)
	t4 := f.now()
	f.advance(1)
	checkFollowResult(t, "Follow(4, 2) by a follower of the now private 2", f.follow(4, 2), followgraph.FollowResult{Since: followgraph.Millis(t4)})
}

// testApprove: Approve makes the follow with the approval's time; with
// neither a request nor a follow it is no_request.
func (s suite) testApprove(t *testing.T) {
	f := s.fixture(t, 0)
	f.setPrivate(2, true)
	f.follow(1, 2)
	f.advance(7)
	t1 := f.now()
	checkFollowResult(t, "Approve(2, 1)", f.approve(2, 1), followgraph.FollowResult{Created: true, Since: followgraph.Millis(t1)})
	checkEdge(t, "IsFollowing(1, 2) after the approval", f.edge(1, 2), followgraph.Edge{Following: true, Since: followgraph.Millis(t1)})
	checkLink(t, "Link(request, 1, 2) after the approval", f.link(followgraph.KindRequest, 1, 2), followgraph.Link{})
	checkCounts(t, "Counts(1, 2)", f.counts(1, 2), []followgraph.Counts{{ID: 1, FollowingCount: 1}, {ID: 2, FollowerCount: 1}})
	checkEntries(t, "Followers(2)", f.followers(2), []followgraph.Entry{entry(1, t1)})
	f.advance(1)
	checkFollowResult(t, "Approve(2, 1) again", f.approve(2, 1), followgraph.FollowResult{Since: followgraph.Millis(t1)})
	checkFollowResult(t, "Follow(1, 2) once approved", f.follow(1, 2), followgraph.FollowResult{Since: followgraph.Millis(t1)})

	before := f.describe(1, 2, 3)
	_, err := f.g.Approve(f.ctx, 2, 3)
	checkCode(t, "Approve(2, 3) with no request", err, followgraph.ENoRequest)
	_, err = f.g.Approve(f.ctx, 1, 2)
	checkCode(t, "Approve(1, 2), the other way of a follow", err, followgraph.ENoRequest)
	if after := f.describe(1, 2, 3); after != before {
		t.Errorf("refused approvals changed the graph:\nbefore:%s\nafter:%s", before, after)
	}
}

// testRemoveFollower: RemoveFollower ends a follow or rejects a request,
// on public and private accounts.
func (s suite) testRemoveFollower(t *testing.T) {
	f := s.fixture(t, 0)
	f.follow(1, 2)
	f.follow(2, 1)
	f.follow(3, 4)
	f.setPrivate(4, true)
	f.follow(5, 4)
	if !f.removeFollower(2, 1) {
		t.Error("RemoveFollower(2, 1) of a follower of a public 2 = false, want true")
	}
	if f.removeFollower(2, 1) {
		t.Error("RemoveFollower(2, 1) again = true, want false")
	}
	if !f.removeFollower(4, 3) {
		t.Error("RemoveFollower(4, 3) of a follower of a private 4 = false, want true")
	}
	if !f.removeFollower(4, 5) {
		t.Error("RemoveFollower(4, 5) of a request = false, want true")
	}
	if f.removeFollower(4, 5) {
		t.Error("RemoveFollower(4, 5) of a rejected request = true, want false")
	}
	checkEdge(t, "IsFollowing(2, 1), the other way, kept", f.edge(2, 1), followgraph.Edge{Following: true, Since: followgraph.Millis(f.now())})
	checkCounts(t, "Counts(1, 2, 3, 4, 5)", f.counts(1, 2, 3, 4, 5), []followgraph.Counts{
		{ID: 1, FollowerCount: 1}, {ID: 2, FollowingCount: 1}, {ID: 3}, {ID: 4}, {ID: 5},
	})
	checkEntries(t, "Links(follow-requests, 4)", f.links(followgraph.ListFollowRequests, 4), nil)
}

// testSetPublicApproves: turning private off approves the pending
// requests: they are follows since then; no request is left.
func (s suite) testSetPublicApproves(t *testing.T) {
	f := s.fixture(t, 0)
	f.setPrivate(1, true)
	f.setPrivate(1, true) // no change
	const n = 250         // more than a chunk of most engines
	for id := followgraph.UserID(2); id < 2+n; id++ {
		f.follow(id, 1)
	}
	f.advance(10)
	t1 := f.now()
	f.setPrivate(1, false)
	if st := f.settings(1); st.Private {
		t.Errorf("Settings(1) = %+v, want public", st)
	}
	checkEntries(t, "Links(follow-requests, 1)", f.links(followgraph.ListFollowRequests, 1), nil)
	checkCounts(t, "Counts(1)", f.counts(1), []followgraph.Counts{{ID: 1, FollowerCount: n}})
	followers := f.followers(1)
	if len(followers) != n {
		t.Fatalf("Followers(1) holds %d, want %d", len(followers), n)
	}
	for _, e := range followers {
		checkTime(t, fmt.Sprintf("Followers(1): %d since", e.ID), e.Since, t1)
	}
}

// testRequestsCountTowardLimit: pending requests count toward the
// following limit.
func (s suite) testRequestsCountTowardLimit(t *testing.T) {
	f := s.fixture(t, 2)
	f.setPrivate(2, true)
	f.setPrivate(3, true)
	f.follow(1, 2)
	f.follow(1, 3)
	_, err := f.g.Follow(f.ctx, 1, 4)
	checkCode(t, "Follow(1, 4) with 2 requests pending and a limit of 2", err, followgraph.EFollowingLimit)
	if res := f.follow(1, 2); res.Created || !res.Requested {
		t.Errorf("Follow(1, 2) of a pending request at the limit = %+v, want Requested, not Created", res)
	}
	f.unfollow(1, 2)
	if res := f.follow(1, 4); !res.Created {
		t.Error("Follow(1, 4) after a withdrawal made room: Created = false, want true")
	}
	// An approval turns a request into a follow: no room made, none needed.
	f.approve(3, 1)
	_, err = f.g.Follow(f.ctx, 1, 5)
	checkCode(t, "Follow(1, 5) following 2 after an approval", err, followgraph.EFollowingLimit)
}

// testRelationFlags: the flags of blocks, mutes and requests both ways,
// beside relations that do not change.
func (s suite) testRelationFlags(t *testing.T) {
	f := s.fixture(t, 0)
	t0 := f.now()
	f.follow(1, 4)
	f.follow(6, 1)
	f.setPrivate(5, true)
	f.setPrivate(1, true)
	f.block(1, 2)
	f.block(3, 1)
	f.mute(1, 4, 0)
	f.follow(1, 5)
	f.follow(7, 1)
	f.mute(6, 1, 0)
	f.block(1, 8)
	f.block(8, 1)
	r0 := followgraph.Millis(t0)
	checkRelations(t, "Relations(1, [2 3 4 5 6 7 8 1 9])", f.relations(1, 2, 3, 4, 5, 6, 7, 8, 1, 9), []followgraph.RelationInfo{
		{ID: 2, Relation: followgraph.RelationNone, Blocking: true},
		{ID: 3, Relation: followgraph.RelationNone, BlockedBy: true},
		{ID: 4, Relation: followgraph.RelationFollowing, FollowingSince: r0, Muting: true},
		{ID: 5, Relation: followgraph.RelationNone, Requested: true},
		{ID: 6, Relation: followgraph.RelationFollower, FollowedBySince: r0},
		{ID: 7, Relation: followgraph.RelationNone, RequestedBy: true},
		{ID: 8, Relation: followgraph.RelationNone, Blocking: true, BlockedBy: true},
		{ID: 1, Relation: followgraph.RelationSelf},
		{ID: 9, Relation: followgraph.RelationNone},
	})
	checkRelations(t, "Relations(2, [1]), the other side of a block", f.relations(2, 1),
		[]followgraph.RelationInfo{{ID: 1, Relation: followgraph.RelationNone, BlockedBy: true}})
	checkRelations(t, "Relations(4, [1]), muted by 1: no flag", f.relations(4, 1),
		[]followgraph.RelationInfo{{ID: 1, Relation: followgraph.RelationFollower, FollowedBySince: r0}})
}

// testLinksPaging: the lists of Links are newest first, ties by larger id
// first, paged without loss at every page size.
func (s suite) testLinksPaging(t *testing.T) {
	f := s.fixture(t, 0)
	f.setPrivate(1, true)
	var blocks, mutes, requests []followgraph.Entry
	for i := range 9 {
		id := followgraph.UserID(10 + i)
		if i%3 == 0 {
			f.advance(1)
		}
		ms := f.now()
		f.block(1, id)
		f.mute(1, id+100, 0)
		f.follow(id+200, 1)
		blocks = append([]followgraph.Entry{entry(id, ms)}, blocks...)
		mutes = append([]followgraph.Entry{entry(id+100, ms)}, mutes...)
		requests = append([]followgraph.Entry{entry(id+200, ms)}, requests...)
	}
	checkListEveryLimit(t, f.ctx, linksList(f.g, followgraph.ListBlocks, 1), blocks)
	checkListEveryLimit(t, f.ctx, linksList(f.g, followgraph.ListMutes, 1), mutes)
	checkListEveryLimit(t, f.ctx, linksList(f.g, followgraph.ListFollowRequests, 1), requests)
	checkListEveryLimit(t, f.ctx, linksList(f.g, followgraph.ListBlocks, 2), nil)
}

// testLinksCursorOfAnotherList: a cursor of one list, of links or of
// follows, is invalid_cursor on any other.
func (s suite) testLinksCursorOfAnotherList(t *testing.T) {
	f := s.fixture(t, 0)
	f.setPrivate(1, true)
	f.setPrivate(2, true)
	for _, u := range []followgraph.UserID{1, 2} {
		for _, x := range []followgraph.UserID{10, 11} {
			f.block(u, x)
			f.mute(u, x+10, 0)
			f.follow(x+20, u)
			f.follow(u, x+30)
			f.follow(x+40, u+100)
		}
	}
	var all []list
	for _, u := range []followgraph.UserID{1, 2} {
		for _, name := range linkLists {
			all = append(all, linksList(f.g, name, u))
		}
		all = append(all, followingList(f.g, u))
	}
	cursors := make([]string, len(all))
	for i, l := range all {
		p, err := l.read(f.ctx, followgraph.PageRequest{Limit: 1})
		if err != nil || p.Next == "" {
			t.Fatalf("%s, first page of 1: next cursor %q, %v; want a cursor", l.name, p.Next, err)
		}
		cursors[i] = p.Next
	}
	for i, from := range all {
		for j, to := range all {
			if i != j {
				_, err := to.read(f.ctx, followgraph.PageRequest{Limit: 1, Cursor: cursors[i]})
				checkCode(t, fmt.Sprintf("%s with a cursor of %s", to.name, from.name), err, followgraph.EInvalidCursor)
			}
		}
	}
}

// testSuggestionsExclude: suggestions leave out users the user blocks, is
// blocked by, mutes or has asked to follow.
func (s suite) testSuggestionsExclude(t *testing.T) {
	f := s.fixture(t, 0)
	f.followAll(1, 2, 3)
	for _, c := range []followgraph.UserID{4, 5, 6, 7, 8, 9} {
		f.followedBy(c, 2, 3)
	}
	f.setPrivate(7, true)
	f.block(1, 4)
	f.block(5, 1)
	f.mute(1, 6, 0)
	f.follow(1, 7) // a request
	f.mute(1, 9, time.Second)
	checkSuggestions(t, "Suggestions(1, 10)", f.suggestions(1, 10), []followgraph.Suggestion{
		{ID: 8, Score: 2, Via: []followgraph.UserID{2, 3}},
	})
	f.advance(1000) // 9's mute expires
	checkSuggestions(t, "Suggestions(1, 10) once 9's mute expired", f.suggestions(1, 10), []followgraph.Suggestion{
		{ID: 8, Score: 2, Via: []followgraph.UserID{2, 3}},
		{ID: 9, Score: 2, Via: []followgraph.UserID{2, 3}},
	})
}

// testHookLinkEvents: a block, with the follows and requests it ends,
// is exactly one event; every other new write is one event of its op,
// and turning private off is its event and one follow per request.
func (s suite) testHookLinkEvents(t *testing.T) {
	f, r := s.hooked(t, 0)
	f.follow(1, 2)
	f.follow(2, 1)
	f.setPrivate(3, true)
	r.take()
	r.slow(2 * time.Millisecond)
	f.follow(1, 3)
	checkOneEvent(t, "Follow(1, 3) of a private 3", r.take(), followgraph.OpRequest, 1, 3, f.now())
	f.advance(1)
	f.block(1, 2)
	checkOneEvent(t, "Block(1, 2) of a mutual follow", r.take(), followgraph.OpBlock, 1, 2, f.now())
	f.block(1, 2)
	checkNoEvent(t, "Block(1, 2) again", r.take())
	f.block(3, 1)
	checkOneEvent(t, "Block(3, 1) with a request pending", r.take(), followgraph.OpBlock, 3, 1, f.now())
	f.unblock(1, 2)
	checkOneEvent(t, "Unblock(1, 2)", r.take(), followgraph.OpUnblock, 1, 2, f.now())
	f.unblock(1, 2)
	checkNoEvent(t, "Unblock(1, 2) again", r.take())

	f.mute(1, 4, time.Minute)
	e := checkOneEvent(t, "Mute(1, 4, 1m)", r.take(), followgraph.OpMute, 1, 4, f.now())
	if !e.Since.Equal(followgraph.Millis(f.now())) || !e.Expires.Equal(followgraph.Millis(f.now()).Add(time.Minute)) {
		t.Errorf("Mute(1, 4, 1m): event since %s, expires %s; want the mute's", formatTime(e.Since), formatTime(e.Expires))
	}
	t0 := f.now()
	f.advance(1)
	f.mute(1, 4, 0)
	e = checkOneEvent(t, "Mute(1, 4, 0) again", r.take(), followgraph.OpMute, 1, 4, f.now())
	if !e.Since.Equal(followgraph.Millis(t0)) || !e.Expires.IsZero() {
		t.Errorf("Mute(1, 4, 0) again: event since %s, expires %s; want since %s, no expiry", formatTime(e.Since), formatTime(e.Expires), formatTime(followgraph.Millis(t0)))
	}
	f.unmute(1, 4)
	checkOneEvent(t, "Unmute(1, 4)", r.take(), followgraph.OpUnmute, 1, 4, f.now())

	f.setPrivate(5, true)
	checkOneEvent(t, "SetPrivate(5, true)", r.take(), followgraph.OpPrivate, 5, 0, f.now())
	f.setPrivate(5, true)
	checkNoEvent(t, "SetPrivate(5, true) again", r.take())
	f.follow(6, 5)
	f.follow(7, 5)
	f.follow(8, 5)
	r.take()
	f.unfollow(6, 5)
	checkOneEvent(t, "Unfollow(6, 5) of a request", r.take(), followgraph.OpUnrequest, 6, 5, f.now())
	f.removeFollower(5, 7)
	checkOneEvent(t, "RemoveFollower(5, 7) of a request", r.take(), followgraph.OpUnrequest, 7, 5, f.now())
	f.approve(5, 8)
	checkOneEvent(t, "Approve(5, 8)", r.take(), followgraph.OpFollow, 8, 5, f.now())
	f.removeFollower(5, 8)
	checkOneEvent(t, "RemoveFollower(5, 8) of a follower", r.take(), followgraph.OpUnfollow, 8, 5, f.now())
	f.follow(9, 5)
	r.take()
	f.setPrivate(5, false)
	es := r.take()
	ops := make(map[followgraph.Op]int)
	for _, e := range es {
		ops[e.Op]++
		if e.Op == followgraph.OpFollow && (e.User != 9 || e.Target != 5) || e.Op == followgraph.OpPublic && e.User != 5 {
			t.Errorf("SetPrivate(5, false): the hook saw %s, want the public event of 5 and the follow 9→5", formatEvents([]followgraph.Event{e}))
		}
	}
	if len(es) != 2 || ops[followgraph.OpPublic] != 1 || ops[followgraph.OpFollow] != 1 {
		t.Errorf("SetPrivate(5, false) with one request pending: the hook saw %s, want one public and one follow event", formatEvents(es))
	}
}

// testHookLinkFailure: a block whose hook fails changes nothing visible
// until retried: the write fails with unavailable.
func (s suite) testHookLinkFailure(t *testing.T) {
	f, r := s.hooked(t, 0)
	f.follow(1, 2)
	r.take()
	r.failWith(&followgraph.Error{Code: followgraph.EUnavailable, Message: "graphtest: the hook refuses the change"})
	_, err := f.g.Block(f.ctx, 1, 2)
	checkCode(t, "Block(1, 2) whose hook failed", err, followgraph.EUnavailable)
	checkOneEvent(t, "Block(1, 2) whose hook failed", r.take(), followgraph.OpBlock, 1, 2, f.now())
	r.failWith(nil)
	f.advance(1)
	res := f.block(1, 2)
	if es := r.take(); res.Created {
		checkOneEvent(t, "Block(1, 2) retried, Created", es, followgraph.OpBlock, 1, 2, f.now())
	} else {
		checkNoEvent(t, "Block(1, 2) retried, not Created", es)
	}
	checkEdge(t, "IsFollowing(1, 2) after the retried block", f.edge(1, 2), followgraph.Edge{})
	checkCounts(t, "Counts(1, 2) after the retried block", f.counts(1, 2), []followgraph.Counts{{ID: 1}, {ID: 2}})
}

// testApplyBlock: a block event ends the follows and requests it names,
// whatever the order it arrives in with them: an older follow applied
// after it does not come back.
func (s suite) testApplyBlock(t *testing.T) {
	base := start.UnixMilli() - 10_000
	f12 := followEvent(1, 2, followgraph.VersionAt(base))
	r21 := followgraph.NewEvent(2, 1, followgraph.OpRequest, followgraph.VersionAt(base+1))
	b := followgraph.NewEvent(1, 2, followgraph.OpBlock, followgraph.VersionAt(base+2))
	f13 := followEvent(1, 3, followgraph.VersionAt(base+1))
	s.applyInEveryOrder(t, []followgraph.Event{f12, r21, b, f13}, func(f *fixture, what string) {
		checkEdge(t, "IsFollowing(1, 2) "+what, f.edge(1, 2), followgraph.Edge{})
		checkLink(t, "Link(block, 1, 2) "+what, f.link(followgraph.KindBlock, 1, 2), on(base+2))
		checkLink(t, "Link(request, 2, 1) "+what, f.link(followgraph.KindRequest, 2, 1), followgraph.Link{})
		checkCounts(t, "Counts(1, 2, 3) "+what, f.counts(1, 2, 3), []followgraph.Counts{{ID: 1, FollowingCount: 1}, {ID: 2}, {ID: 3, FollowerCount: 1}})
		checkEntries(t, "Links(blocks, 1) "+what, f.links(followgraph.ListBlocks, 1), []followgraph.Entry{entry(2, base+2)})
		checkEntries(t, "Links(follow-requests, 1) "+what, f.links(followgraph.ListFollowRequests, 1), nil)
	})
}

// testApplyReplay: every event of every new op, recorded by the hook of
// one engine and applied to a fresh one (in order, and shuffled), gives
// the same state: lists, counts, relations and their flags, settings.
func (s suite) testApplyReplay(t *testing.T) {
	src, r := s.hooked(t, 0)
	users := []followgraph.UserID{1, 2, 3, 4, 5, 6, 7, 8}
	src.follow(1, 2)
	src.follow(2, 1)
	src.follow(3, 1)
	src.setPrivate(4, true)
	src.follow(1, 4)
	src.follow(2, 4)
	src.follow(3, 4)
	src.advance(1)
	src.block(1, 2)
	src.approve(4, 3)
	src.removeFollower(4, 2)
	src.mute(5, 1, time.Hour)
	src.mute(6, 1, 0)
	src.mute(7, 1, 0)
	src.advance(1)
	src.mute(5, 1, 2*time.Hour)
	src.unmute(7, 1)
	src.block(6, 7)
	src.unblock(6, 7)
	src.setPrivate(8, true)
	src.follow(5, 8)
	src.follow(6, 8)
	src.unfollow(6, 8)
	src.setPrivate(4, false)
	src.follow(7, 3)
	src.follow(7, 4)
	events := r.take()
	want := src.describe(users...)
	wantRel := make([][]followgraph.RelationInfo, len(users))
	for i, u := range users {
		wantRel[i] = src.relations(u, users...)
	}

	rng := rand.New(rand.NewPCG(7, 7))
	for _, shuffled := range []bool{false, true} {
		f := s.applierFixture(t)
		f.clock.Set(src.clock.Now())
		batch := append([]followgraph.Event(nil), events...)
		if shuffled {
			rng.Shuffle(len(batch), func(i, j int) { batch[i], batch[j] = batch[j], batch[i] })
		}
		f.apply(batch...)
		what := fmt.Sprintf("after Apply of the hook's events (shuffled %v)", shuffled)
		if got := f.describe(users...); got != want {
			t.Errorf("%s:%s\nwant%s", what, got, want)
		}
		for i, u := range users {
			checkRelations(t, fmt.Sprintf("Relations(%d, %v) %s", u, users, what), f.relations(u, users...), wantRel[i])
		}
		checkLink(t, "Link(mute, 5, 1) "+what, f.link(followgraph.KindMute, 5, 1), src.link(followgraph.KindMute, 5, 1))
	}
}

// testHookConcurrentReplay: goroutines make writes of every kind among a
// few users at once, through a hook. The events the hook saw, applied to
// a fresh engine, give the state the engine ended in: each event's
// version orders it as the engine did.
func (s suite) testHookConcurrentReplay(t *testing.T) {
	const (
		workers = 6
		ops     = 150 // of each worker
		users   = 4
	)
	src, r := s.hooked(t, 0)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 53))
			for i := range ops {
				a := followgraph.UserID(1 + rng.IntN(users))
				b := 1 + (a-1+followgraph.UserID(1+rng.IntN(users-1)))%users
				if err := RandomWrite(src.ctx, src.g, rng, a, b); err != nil {
					t.Errorf("worker %d, write %d on %d, %d: %v", w, i, a, b, err)
					return
				}
				if rng.IntN(4) == 0 {
					src.clock.Advance(time.Millisecond)
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	ids := []followgraph.UserID{1, 2, 3, 4}
	want := src.describe(ids...)
	f := s.applierFixture(t)
	f.clock.Set(src.clock.Now())
	f.apply(r.take()...)
	if got := f.describe(ids...); got != want {
		t.Errorf("Apply of the hook's events of concurrent writes:%s\nwant%s", got, want)
	}
	for _, u := range ids {
		checkRelations(t, fmt.Sprintf("Relations(%d, %v) after Apply of the hook's events", u, ids), f.relations(u, ids...), src.relations(u, ids...))
	}
}
