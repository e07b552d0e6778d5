package graphtest

import (
	"testing"

	"github.com/followgraph/followgraph"
)

// testSetOrderAndSince checks each set query, both ways round, on a graph
// where each result has ties and holds a user no other result holds, and
// where the times of the two sides differ, so that Since must come from
// the right one.
func (s suite) testSetOrderAndSince(t *testing.T) {
	f := s.fixture(t, 0)
	t0 := f.now()
	f.followAll(1, 6, 3, 14, 8, 7)
	f.advance(1)
	f.followAll(1, 4, 15, 9, 13, 5)
	f.advance(1)
	f.followAll(2, 5, 8, 3, 15, 9, 6, 4, 10)
	f.advance(1)
	f.followedBy(1, 9, 4, 14, 6)
	f.advance(1)
	f.followedBy(1, 3, 16, 8, 5, 11)
	f.advance(1)
	f.followedBy(2, 5, 3, 13, 8, 4, 16, 9, 6, 12)
	// 1 follows 3, 6, 7, 8, 14 at t0 and 4, 5, 9, 13, 15 at t0+1.
	// 2 follows 3, 4, 5, 6, 8, 9, 10, 15 at t0+2.
	// 4, 6, 9, 14 follow 1 at t0+3, and 3, 5, 8, 11, 16 at t0+4.
	// 3, 4, 5, 6, 8, 9, 12, 13, 16 follow 2 at t0+5.
	// So 14 is a mutual of 1 only, 15 in the common following only,
	// 16 in the common followers only, 13 a known follower only.

	for _, tt := range []struct {
		l    list
		want []followgraph.Entry
	}{
		{mutualsList(f.g, 1), []followgraph.Entry{
			entry(9, t0+1), entry(5, t0+1), entry(4, t0+1),
			entry(14, t0), entry(8, t0), entry(6, t0), entry(3, t0),
		}},
		{mutualsList(f.g, 2), []followgraph.Entry{
			entry(9, t0+2), entry(8, t0+2), entry(6, t0+2), entry(5, t0+2), entry(4, t0+2), entry(3, t0+2),
		}},
		{commonFollowingList(f.g, 1, 2), []followgraph.Entry{
			entry(15, t0+1), entry(9, t0+1), entry(5, t0+1), entry(4, t0+1),
			entry(8, t0), entry(6, t0), entry(3, t0),
		}},
		{commonFollowingList(f.g, 2, 1), []followgraph.Entry{
			entry(15, t0+2), entry(9, t0+2), entry(8, t0+2), entry(6, t0+2), entry(5, t0+2), entry(4, t0+2), entry(3, t0+2),
		}},
		{commonFollowersList(f.g, 1, 2), []followgraph.Entry{
			entry(16, t0+4), entry(8, t0+4), entry(5, t0+4), entry(3, t0+4),
			entry(9, t0+3), entry(6, t0+3), entry(4, t0+3),
		}},
		{commonFollowersList(f.g, 2, 1), []followgraph.Entry{
			entry(16, t0+5), entry(9, t0+5), entry(8, t0+5), entry(6, t0+5), entry(5, t0+5), entry(4, t0+5), entry(3, t0+5),
		}},
		{knownFollowersList(f.g, 1, 2), []followgraph.Entry{
			entry(13, t0+1), entry(9, t0+1), entry(5, t0+1), entry(4, t0+1),
			entry(8, t0), entry(6, t0), entry(3, t0),
		}},
		{knownFollowersList(f.g, 2, 1), []followgraph.Entry{
			entry(9, t0+2), entry(8, t0+2), entry(6, t0+2), entry(5, t0+2), entry(4, t0+2), entry(3, t0+2),
		}},
	} {
		checkListEveryLimit(t, f.ctx, tt.l, tt.want)
	}

	// A change shows at once: 9 stops following 2, and 1 unfollows 4.
	f.unfollow(9, 2)
	f.unfollow(1, 4)
	for _, tt := range []struct {
		l    list
		want []followgraph.Entry
	}{
		{mutualsList(f.g, 1), []followgraph.Entry{
			entry(9, t0+1), entry(5, t0+1), entry(14, t0), entry(8, t0), entry(6, t0), entry(3, t0),
		}},
		{commonFollowersList(f.g, 1, 2), []followgraph.Entry{
			entry(16, t0+4), entry(8, t0+4), entry(5, t0+4), entry(3, t0+4), entry(6, t0+3), entry(4, t0+3),
		}},
		{knownFollowersList(f.g, 1, 2), []followgraph.Entry{
			entry(13, t0+1), entry(5, t0+1), entry(8, t0), entry(6, t0), entry(3, t0),
		}},
	} {
		checkListEveryLimit(t, f.ctx, tt.l, tt.want)
	}
}

// testSetEmpty checks empty results: Count 0, no entries, no next cursor.
func (s suite) testSetEmpty(t *testing.T) {
	f := s.fixture(t, 0)
	f.follow(1, 2)
	f.follow(3, 1)
	f.follow(4, 5)
	for _, l := range []list{
		mutualsList(f.g, 1),            // 1 follows 2, who does not follow back; 3 follows 1 only
		mutualsList(f.g, 99),           // no edges
		commonFollowingList(f.g, 1, 3), // 3 follows 1 only
		commonFollowingList(f.g, 1, 4),
		commonFollowingList(f.g, 98, 99),
		commonFollowersList(f.g, 1, 2), // 3 follows 1, and 1 follows 2
		commonFollowersList(f.g, 1, 5),
		knownFollowersList(f.g, 1, 3), // 1 follows 2, who does not follow 3
		knownFollowersList(f.g, 2, 1), // 2 follows no one
	} {
		for _, limit := range []int{0, 1, followgraph.MaxLimit} {
			p, err := l.read(f.ctx, followgraph.PageRequest{Limit: limit})
			if err != nil {
				t.Errorf("%s with limit %d: %v", l.name, limit, err)
				continue
			}
			if p.Count != 0 || len(p.Entries) != 0 || p.Next != "" {
				t.Errorf("%s with limit %d = {Count: %d, Entries: %s, Next: %q}, want an empty result: Count 0, no entries, no next cursor",
					l.name, limit, p.Count, formatEntries(p.Entries), p.Next)
			}
		}
	}
}
