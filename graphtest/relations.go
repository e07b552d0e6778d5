package graphtest

import (
	"testing"

	"github.com/followgraph/followgraph"
)

func (s suite) testRelationKinds(t *testing.T) {
	f := s.fixture(t, 0)
	t0 := f.now()
	f.follow(1, 2)
	f.advance(1)
	f.follow(3, 1)
	f.advance(1)
	f.follow(1, 4)
	f.advance(1)
	f.follow(4, 1)
	f.follow(5, 6) // 5 has edges, none with 1

	var (
		following = followgraph.RelationInfo{ID: 2, Relation: followgraph.RelationFollowing, FollowingSince: followgraph.Millis(t0)}
		follower  = followgraph.RelationInfo{ID: 3, Relation: followgraph.RelationFollower, FollowedBySince: followgraph.Millis(t0 + 1)}
		mutual    = followgraph.RelationInfo{ID: 4, Relation: followgraph.RelationMutual,
			FollowingSince: followgraph.Millis(t0 + 2), FollowedBySince: followgraph.Millis(t0 + 3)}
		none    = followgraph.RelationInfo{ID: 5, Relation: followgraph.RelationNone}
		self    = followgraph.RelationInfo{ID: 1, Relation: followgraph.RelationSelf}
		unknown = followgraph.RelationInfo{ID: 99, Relation: followgraph.RelationNone}
	)
	checkRelations(t, "Relations(1, [2 3 4 5 1 99 2 4])", f.relations(1, 2, 3, 4, 5, 1, 99, 2, 4),
		[]followgraph.RelationInfo{following, follower, mutual, none, self, unknown, following, mutual})

	// The same edges seen from the other side.
	checkRelations(t, "Relations(4, [1])", f.relations(4, 1), []followgraph.RelationInfo{{
		ID: 1, Relation: followgraph.RelationMutual,
		FollowingSince: followgraph.Millis(t0 + 3), FollowedBySince: followgraph.Millis(t0 + 2),
	}})
	checkRelations(t, "Relations(3, [1])", f.relations(3, 1), []followgraph.RelationInfo{{
		ID: 1, Relation: followgraph.RelationFollowing, FollowingSince: followgraph.Millis(t0 + 1),
	}})
	checkRelations(t, "Relations(2, [1])", f.relations(2, 1), []followgraph.RelationInfo{{
		ID: 1, Relation: followgraph.RelationFollower, FollowedBySince: followgraph.Millis(t0),
	}})

	// A viewer with no edges.
	checkRelations(t, "Relations(77, [1 77 5])", f.relations(77, 1, 77, 5), []followgraph.RelationInfo{
		{ID: 1, Relation: followgraph.RelationNone},
		{ID: 77, Relation: followgraph.RelationSelf},
		{ID: 5, Relation: followgraph.RelationNone},
	})
}

func (s suite) testRelationChanges(t *testing.T) {
	f := s.fixture(t, 0)
	t0 := f.now()
	f.follow(1, 2)
	f.follow(2, 1)
	f.advance(1)

	f.unfollow(1, 2)
	checkRelations(t, "Relations(1, [2]) after 1 unfollowed 2", f.relations(1, 2), []followgraph.RelationInfo{{
		ID: 2, Relation: followgraph.RelationFollower, FollowedBySince: followgraph.Millis(t0),
	}})
	f.unfollow(2, 1)
	checkRelations(t, "Relations(1, [2]) after both unfollowed", f.relations(1, 2), []followgraph.RelationInfo{{
		ID: 2, Relation: followgraph.RelationNone,
	}})
	f.advance(1)
	f.follow(1, 2)
	checkRelations(t, "Relations(1, [2]) after 1 refollowed 2", f.relations(1, 2), []followgraph.RelationInfo{{
		ID: 2, Relation: followgraph.RelationFollowing, FollowingSince: followgraph.Millis(t0 + 2),
	}})
}
