package graphtest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/followgraph/followgraph"
)

// RandomWrite makes a random write of a with b: a follow (three times in
// ten), an unfollow, a block, an unblock, a mute (for an hour or for
// ever), an approval, a removal, or a change of a's private setting. A
// refusal for a block or for no request is no error.
func RandomWrite(ctx context.Context, g followgraph.Graph, rng *rand.Rand, a, b followgraph.UserID) error {
	var err error
	switch rng.IntN(10) {
	case 0, 1, 2:
		_, err = g.Follow(ctx, a, b)
	case 3:
		_, err = g.Unfollow(ctx, a, b)
	case 4:
		_, err = g.Block(ctx, a, b)
	case 5:
		_, err = g.Unblock(ctx, a, b)
	case 6:
		_, err = g.Mute(ctx, a, b, time.Duration(rng.IntN(2))*time.Hour)
	case 7:
		_, err = g.Approve(ctx, a, b)
	case 8:
		_, err = g.RemoveFollower(ctx, a, b)
	case 9:
		_, err = g.SetPrivate(ctx, a, rng.IntN(2) == 0)
	}
	if code := followgraph.ErrorCode(err); code == followgraph.EBlocked || code == followgraph.ENoRequest {
		return nil
	}
	return err
}

// mendRegion is one region of testRegionMend's model: an engine of its
// own, every event its writes made, in order, and how many of the other
// region's it has taken.
type mendRegion struct {
	f    *fixture
	r    *recorder
	out  []followgraph.Event
	took int
}

// write makes one random write (RandomWrite) among users 1 to n, moving
// the clock on by 0 to 2 ms first.
func (x *mendRegion) write(rng *rand.Rand, n int) {
	f := x.f
	f.advance(int64(rng.IntN(3)))
	u := followgraph.UserID(rng.IntN(n) + 1)
	v := followgraph.UserID(rng.IntN(n-1) + 1)
	if v >= u {
		v++
	}
	if err := RandomWrite(f.ctx, f.g, rng, u, v); err != nil {
		f.tb.Fatal(err)
	}
	x.out = append(x.out, x.r.take()...)
}

// take applies the next k events of from's (all: k < 0), in the order
// they were made, as a persister does with what its log sources from the
// other region, and mends after them (followgraph.Mend).
func (x *mendRegion) take(from *mendRegion, k int) {
	f := x.f
	end := len(from.out)
	if k >= 0 {
		end = min(end, x.took+k)
	}
	batch := from.out[x.took:end]
	x.took = end
	if len(batch) == 0 {
		return
	}
	if err := f.g.(followgraph.Applier).Apply(f.ctx, batch); err != nil {
		f.tb.Fatalf("Apply(%s): %v", formatEvents(batch), err)
	}
	if _, err := followgraph.Mend(f.ctx, f.g, batch); err != nil {
		f.tb.Fatalf("Mend(%s): %v", formatEvents(batch), err)
	}
	x.out = append(x.out, x.r.take()...)
}

// testRegionMend is the model of two regions taking writes at once
// (docs/design/regions.md): random follows, unfollows, blocks, unblocks,
// privacy changes, approvals and removals in both, among a few users so
// that they conflict on purpose, each region taking the other's events
// in order at random moments, as their link comes and goes, and mending
// after them. Once both have taken everything, both answer every read
// alike, the counts equal the lists, and no follow or request stands
// across a block, nor a request to a public account or of a follower.
func (s suite) testRegionMend(t *testing.T) {
	const users, writes = 6, 200
	if _, ok := s.mendRegion(t, 1).f.g.(followgraph.Applier); !ok {
		t.Skip("engine does not implement followgraph.Applier")
	}
	ids := make([]followgraph.UserID, users)
	for i := range ids {
		ids[i] = followgraph.UserID(i + 1)
	}
	for seed := range uint64(12) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 41))
			a, b := s.mendRegion(t, 1), s.mendRegion(t, 2)
			for range writes {
				x, y := a, b
				if rng.IntN(2) == 1 {
					x, y = b, a
				}
				if rng.IntN(8) == 0 {
					x.take(y, rng.IntN(6))
				} else {
					x.write(rng, users)
				}
			}
			for a.took < len(b.out) || b.took < len(a.out) {
				a.take(b, -1)
				b.take(a, -1)
			}
			if da, db := a.f.describe(ids...), b.f.describe(ids...); da != db {
				t.Fatalf("the regions differ:\na:%s\nb:%s", da, db)
			}
			checkConsistent(t, a.f, ids)
			for _, u := range ids {
				rel := a.f.relations(u, ids...)
				checkRelations(t, fmt.Sprintf("Relations(%d, %v) in region 2", u, ids), b.f.relations(u, ids...), rel)
				for _, r := range rel {
					if (r.Blocking || r.BlockedBy) && (!r.FollowingSince.IsZero() || !r.FollowedBySince.IsZero() || r.Requested || r.RequestedBy) {
						t.Errorf("%d and %d: a follow or request across a block: %+v", u, r.ID, r)
					}
					if r.Requested && (!a.f.settings(r.ID).Private || !r.FollowingSince.IsZero()) {
						t.Errorf("%d asks to follow %d, which is public or which it follows: %+v", u, r.ID, r)
					}
				}
			}
		})
	}
}

func (s suite) mendRegion(t *testing.T, region int) *mendRegion {
	r := &recorder{}
	return &mendRegion{f: s.fixtureWith(t, Options{Hook: r.hook, Region: region}), r: r}
}

// testRegionUnblockMeetsFollow: region 1's follow 1→2 made between region
// 2's block of 1 by 2 and its unblock, both of which region 1 takes in
// one batch, after region 2 took the follow. The follow is newer than the
// block that would have ended it, and no block stands: in both regions 1
// follows 2. And a follow older than the block that region 2 takes after
// the unblock stays ended in both, as the block ended it.
func (s suite) testRegionUnblockMeetsFollow(t *testing.T) {
	a, b := s.mendRegion(t, 1), s.mendRegion(t, 2)
	if _, ok := a.f.g.(followgraph.Applier); !ok {
		t.Skip("engine does not implement followgraph.Applier")
	}
	ctx := a.f.ctx
	follow := func(u, t followgraph.UserID) func(followgraph.Graph) error {
		return func(g followgraph.Graph) error { _, err := g.Follow(ctx, u, t); return err }
	}
	block := func(u, t followgraph.UserID) func(followgraph.Graph) error {
		return func(g followgraph.Graph) error { _, err := g.Block(ctx, u, t); return err }
	}
	unblock := func(u, t followgraph.UserID) func(followgraph.Graph) error {
		return func(g followgraph.Graph) error { _, err := g.Unblock(ctx, u, t); return err }
	}
	a.do(b, follow(3, 2)) // older than the block
	b.do(a, block(2, 1))
	b.do(a, block(2, 3))
	a.do(b, follow(1, 2)) // newer than the block
	b.do(a, unblock(2, 1))
	b.do(a, unblock(2, 3))
	b.take(a, -1)
	a.take(b, -1)
	for a.took < len(b.out) || b.took < len(a.out) {
		a.take(b, -1)
		b.take(a, -1)
	}
	for i, x := range []*mendRegion{a, b} {
		if e, err := x.f.g.IsFollowing(ctx, 1, 2); err != nil || !e.Following {
			t.Errorf("region %d: 1 follows 2 = %v, %v; want true: the follow is newer than the block, and no block stands", i+1, e.Following, err)
		}
		if e, err := x.f.g.IsFollowing(ctx, 3, 2); err != nil || e.Following {
			t.Errorf("region %d: 3 follows 2 = %v, %v; want false: the block ended the follow", i+1, e.Following, err)
		}
	}
}

// testRegionRequestMeetsUnfollow: region 1's follow 2→3 and its unfollow,
// and between them region 2's request 2→3, made once 3 was private there.
// The unfollow is newer than the request and ends it, as the stores count
// it: in both regions, whatever order each takes the changes in, 2 has
// no request to 3, and both answer alike.
func (s suite) testRegionRequestMeetsUnfollow(t *testing.T) {
	a, b := s.mendRegion(t, 1), s.mendRegion(t, 2)
	if _, ok := a.f.g.(followgraph.Applier); !ok {
		t.Skip("engine does not implement followgraph.Applier")
	}
	a.do(b, func(g followgraph.Graph) error { _, err := g.Follow(a.f.ctx, 2, 3); return err })
	b.do(a, func(g followgraph.Graph) error { _, err := g.SetPrivate(b.f.ctx, 3, true); return err })
	b.do(a, func(g followgraph.Graph) error { _, err := g.Follow(b.f.ctx, 2, 3); return err }) // a request
	a.do(b, func(g followgraph.Graph) error { _, err := g.Unfollow(a.f.ctx, 2, 3); return err })
	a.take(b, -1)
	b.take(a, -1)
	for i, x := range []*mendRegion{a, b} {
		if l, err := x.f.g.Link(x.f.ctx, followgraph.KindRequest, 2, 3); err != nil || l.On {
			t.Errorf("region %d: 2's request to 3 = %+v, %v; want none: the unfollow is newer", i+1, l, err)
		}
	}
	if da, db := a.f.describe(2, 3), b.f.describe(2, 3); da != db {
		t.Errorf("the regions differ:\na:%s\nb:%s", da, db)
	}
}

// do makes write on x's engine, records its events, and moves both
// regions' clocks on by 1 ms.
func (x *mendRegion) do(other *mendRegion, write func(followgraph.Graph) error) {
	x.f.tb.Helper()
	if err := write(x.f.g); err != nil {
		x.f.tb.Fatal(err)
	}
	x.out = append(x.out, x.r.take()...)
	x.f.advance(1)
	other.f.advance(1)
}
