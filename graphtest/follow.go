package graphtest

import (
	"testing"

	"github.com/followgraph/followgraph"
)

func (s suite) testFollowCreated(t *testing.T) {
	f := s.fixture(t, 0)
	now := f.now()

	res := f.follow(1, 2)
	if !res.Created {
		t.Error("Follow(1, 2).Created = false for a new edge, want true")
	}
	checkTime(t, "Follow(1, 2).Since, the clock's time truncated to the millisecond", res.Since, now)
	checkEdge(t, "IsFollowing(1, 2)", f.edge(1, 2), followgraph.Edge{Following: true, Since: followgraph.Millis(now)})
	checkEdge(t, "IsFollowing(2, 1), the other way", f.edge(2, 1), followgraph.Edge{})
	checkCounts(t, "Counts(1, 2)", f.counts(1, 2), []followgraph.Counts{
		{ID: 1, FollowingCount: 1, FollowerCount: 0},
		{ID: 2, FollowingCount: 0, FollowerCount: 1},
	})
	checkEntries(t, "Following(1)", f.following(1), []followgraph.Entry{entry(2, now)})
	checkEntries(t, "Followers(2)", f.followers(2), []followgraph.Entry{entry(1, now)})
	checkEntries(t, "Following(2)", f.following(2), nil)
	checkEntries(t, "Followers(1)", f.followers(1), nil)
}

func (s suite) testFollowIdempotent(t *testing.T) {
	f := s.fixture(t, 0)
	first := f.now()
	f.follow(1, 2)
	f.advance(5)

	res := f.follow(1, 2)
	if res.Created {
		t.Error("Follow(1, 2).Created = true when 1 already followed 2, want false")
	}
	checkTime(t, "Follow(1, 2).Since when 1 already followed 2", res.Since, first)
	checkEdge(t, "IsFollowing(1, 2)", f.edge(1, 2), followgraph.Edge{Following: true, Since: followgraph.Millis(first)})
	checkCounts(t, "Counts(1, 2)", f.counts(1, 2), []followgraph.Counts{
		{ID: 1, FollowingCount: 1, FollowerCount: 0},
		{ID: 2, FollowingCount: 0, FollowerCount: 1},
	})
	checkEntries(t, "Following(1)", f.following(1), []followgraph.Entry{entry(2, first)})
	checkEntries(t, "Followers(2)", f.followers(2), []followgraph.Entry{entry(1, first)})
}

func (s suite) testUnfollow(t *testing.T) {
	f := s.fixture(t, 0)
	now := f.now()
	f.followAll(1, 2, 3)
	f.advance(1)

	if !f.unfollow(1, 2) {
		t.Error("Unfollow(1, 2) = false when 1 followed 2, want true")
	}
	checkEdge(t, "IsFollowing(1, 2) after the unfollow", f.edge(1, 2), followgraph.Edge{})
	for _, tt := range []struct {
		name         string
		user, target followgraph.UserID
	}{
		{"an edge already removed", 1, 2},
		{"the other way of an edge", 3, 1},
		{"users with no edges", 98, 99},
	} {
		if f.unfollow(tt.user, tt.target) {
			t.Errorf("Unfollow(%d, %d) of %s = true, want false", tt.user, tt.target, tt.name)
		}
	}
	checkCounts(t, "Counts(1, 2, 3)", f.counts(1, 2, 3), []followgraph.Counts{
		{ID: 1, FollowingCount: 1, FollowerCount: 0},
		{ID: 2, FollowingCount: 0, FollowerCount: 0},
		{ID: 3, FollowingCount: 0, FollowerCount: 1},
	})
	checkEntries(t, "Following(1)", f.following(1), []followgraph.Entry{entry(3, now)})
	checkEntries(t, "Followers(2)", f.followers(2), nil)
	checkEdge(t, "IsFollowing(1, 3), not unfollowed", f.edge(1, 3), followgraph.Edge{Following: true, Since: followgraph.Millis(now)})
}

func (s suite) testRefollow(t *testing.T) {
	f := s.fixture(t, 0)
	f.follow(1, 2)
	f.advance(1)
	f.unfollow(1, 2)
	f.advance(3)

	now := f.now()
	res := f.follow(1, 2)
	if !res.Created {
		t.Error("Follow(1, 2).Created = false after 1 unfollowed 2, want true")
	}
	checkTime(t, "Follow(1, 2).Since after a refollow", res.Since, now)
	checkEdge(t, "IsFollowing(1, 2) after a refollow", f.edge(1, 2), followgraph.Edge{Following: true, Since: followgraph.Millis(now)})
	checkCounts(t, "Counts(1, 2)", f.counts(1, 2), []followgraph.Counts{
		{ID: 1, FollowingCount: 1, FollowerCount: 0},
		{ID: 2, FollowingCount: 0, FollowerCount: 1},
	})
	checkEntries(t, "Following(1)", f.following(1), []followgraph.Entry{entry(2, now)})

	// Unfollow and refollow within one millisecond.
	if !f.unfollow(1, 2) {
		t.Error("Unfollow(1, 2) = false, want true")
	}
	if res := f.follow(1, 2); !res.Created {
		t.Error("Follow(1, 2).Created = false after an unfollow in the same millisecond, want true")
	}
	checkEdge(t, "IsFollowing(1, 2) after a refollow in the same millisecond", f.edge(1, 2),
		followgraph.Edge{Following: true, Since: followgraph.Millis(now)})
	checkCounts(t, "Counts(1, 2)", f.counts(1, 2), []followgraph.Counts{
		{ID: 1, FollowingCount: 1, FollowerCount: 0},
		{ID: 2, FollowingCount: 0, FollowerCount: 1},
	})
}

func (s suite) testSelfFollow(t *testing.T) {
	f := s.fixture(t, 0)
	_, err := f.g.Follow(f.ctx, 1, 1)
	checkCode(t, "Follow(1, 1)", err, followgraph.ESelfFollow)
	checkCounts(t, "Counts(1)", f.counts(1), []followgraph.Counts{{ID: 1}})
	checkEntries(t, "Following(1)", f.following(1), nil)
	checkEntries(t, "Followers(1)", f.followers(1), nil)

	// Nor does it change a user with edges.
	f.follow(1, 2)
	f.follow(2, 1)
	before := f.describe(1, 2)
	_, err = f.g.Follow(f.ctx, 1, 1)
	checkCode(t, "Follow(1, 1)", err, followgraph.ESelfFollow)
	if after := f.describe(1, 2); after != before {
		t.Errorf("Follow(1, 1) changed the graph:\nbefore:%s\nafter:%s", before, after)
	}
}

func (s suite) testExtremeIDs(t *testing.T) {
	f := s.fixture(t, 0)
	const top = followgraph.MaxUserID
	now := f.now()
	f.followedBy(1, 2, top, top-1) // all in one millisecond
	f.follow(1, top)

	checkEdge(t, "IsFollowing(MaxUserID, 1)", f.edge(top, 1), followgraph.Edge{Following: true, Since: followgraph.Millis(now)})
	checkCounts(t, "Counts(MaxUserID)", f.counts(top), []followgraph.Counts{{ID: top, FollowingCount: 1, FollowerCount: 1}})
	checkListEveryLimit(t, f.ctx, followersList(f.g, 1), []followgraph.Entry{entry(top, now), entry(top-1, now), entry(2, now)})
	checkListEveryLimit(t, f.ctx, mutualsList(f.g, 1), []followgraph.Entry{entry(top, now)})
	checkListEveryLimit(t, f.ctx, followingList(f.g, top), []followgraph.Entry{entry(1, now)})
}

func (s suite) testMaxFollowing(t *testing.T) {
	f := s.fixture(t, 3)
	first := f.now()
	f.followAll(1, 2, 3, 4)
	f.advance(1)

	_, err := f.g.Follow(f.ctx, 1, 5)
	checkCode(t, "Follow(1, 5) when 1 follows the maximum of 3", err, followgraph.EFollowingLimit)
	checkEdge(t, "IsFollowing(1, 5) after a refused follow", f.edge(1, 5), followgraph.Edge{})
	checkCounts(t, "Counts(1, 5)", f.counts(1, 5), []followgraph.Counts{
		{ID: 1, FollowingCount: 3, FollowerCount: 0},
		{ID: 5, FollowingCount: 0, FollowerCount: 0},
	})

	// Following someone already followed is no new follow: not an error.
	res, err := f.g.Follow(f.ctx, 1, 3)
	if err != nil || res.Created || !res.Since.Equal(followgraph.Millis(first)) {
		t.Errorf("Follow(1, 3) at the limit when 1 already follows 3 = %+v, %v; want Created false, Since %s, no error",
			res, err, formatTime(followgraph.Millis(first)))
	}

	// Unfollowing makes room again.
	f.unfollow(1, 3)
	if res := f.follow(1, 5); !res.Created {
		t.Error("Follow(1, 5) after an unfollow made room: Created = false, want true")
	}
	_, err = f.g.Follow(f.ctx, 1, 3)
	checkCode(t, "Follow(1, 3) when 1 follows the maximum again", err, followgraph.EFollowingLimit)

	// The limit is per user, and bounds following only, not followers.
	f.followAll(2, 3, 4, 5)
	f.followedBy(4, 10, 11, 12, 13, 14)
	checkCounts(t, "Counts(1, 2, 4)", f.counts(1, 2, 4), []followgraph.Counts{
		{ID: 1, FollowingCount: 3, FollowerCount: 0},
		{ID: 2, FollowingCount: 3, FollowerCount: 1},
		{ID: 4, FollowingCount: 0, FollowerCount: 7}, // 1, 2, and 10 to 14
	})
}

func (s suite) testCounts(t *testing.T) {
	f := s.fixture(t, 0)
	f.followAll(1, 2, 3)
	f.follow(2, 3)
	f.follow(4, 3)
	f.follow(3, 1)

	checkCounts(t, "Counts(3)", f.counts(3), []followgraph.Counts{{ID: 3, FollowingCount: 1, FollowerCount: 3}})
	checkCounts(t, "Counts(1, 3, 1, 99, 2), in request order with repeats and a user with no edges",
		f.counts(1, 3, 1, 99, 2), []followgraph.Counts{
			{ID: 1, FollowingCount: 2, FollowerCount: 1},
			{ID: 3, FollowingCount: 1, FollowerCount: 3},
			{ID: 1, FollowingCount: 2, FollowerCount: 1},
			{ID: 99, FollowingCount: 0, FollowerCount: 0},
			{ID: 2, FollowingCount: 1, FollowerCount: 1},
		})

	f.unfollow(4, 3)
	f.follow(1, 2)   // already followed: no change
	f.unfollow(5, 3) // never followed: no change
	f.unfollow(4, 3) // already unfollowed: no change
	checkCounts(t, "Counts(1, 3, 4) after changes", f.counts(1, 3, 4), []followgraph.Counts{
		{ID: 1, FollowingCount: 2, FollowerCount: 1},
		{ID: 3, FollowingCount: 1, FollowerCount: 2},
		{ID: 4, FollowingCount: 0, FollowerCount: 0},
	})
}
