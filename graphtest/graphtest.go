// Package graphtest is the conformance suite of followgraph engines: a
// behaviour of followgraph.Graph (and of followgraph.Applier, for engines
// that implement it) is written here once and proven on every engine.
//
// An engine calls Run from its own test with a constructor:
//
//	func TestGraph(t *testing.T) {
//		graphtest.Run(t, func(tb testing.TB, opts graphtest.Options) followgraph.Graph {
//			return memgraph.New(memgraph.WithClock(opts.Now), memgraph.WithMaxFollowing(opts.MaxFollowing),
//				memgraph.WithHook(opts.Hook), memgraph.WithRefused(opts.Refused), memgraph.WithRegion(opts.Region))
//		})
//	}
//
// Every test builds its own engine with a fake clock that stands still
// until the test moves it and never goes backward, so follow times and
// ties are exact.
package graphtest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/followgraph/followgraph"
)

// Options configure an engine built for one test.
type Options struct {
	Now          func() time.Time // the engine's clock; never nil when passed by the suite
	MaxFollowing int              // 0 = unlimited; else Follow returns code following_limit when user already follows that many
	Hook         followgraph.Hook // the hook to install (see followgraph.Hook); nil = none. Only the Hook tests set one
	// Refused receives every change the engine's Apply refuses for being
	// older than its tombstone horizon (followgraph.Refusal); nil = none.
	// Only the Horizon tests set one.
	Refused func(followgraph.Refusal)
	// Region is the region whose versions the engine issues (see
	// followgraph.NextVersion); 0 = none. Only the Region tests set one.
	Region int
}

// NewGraph builds a fresh, empty engine for one test; it registers its own cleanup with tb.Cleanup.
type NewGraph func(tb testing.TB, opts Options) followgraph.Graph

// Run runs every conformance test against engines made by newGraph.
func Run(t *testing.T, newGraph NewGraph) {
	s := suite{newGraph: newGraph}
	groups := []struct {
		name  string
		tests []test
	}{
		{"Follow", []test{
			{"CreatedAndSince", s.testFollowCreated},
			{"Idempotent", s.testFollowIdempotent},
			{"Unfollow", s.testUnfollow},
			{"Refollow", s.testRefollow},
			{"SelfFollow", s.testSelfFollow},
			{"ExtremeIDs", s.testExtremeIDs},
			{"MaxFollowing", s.testMaxFollowing},
		}},
		{"Counts", []test{
			{"Maintained", s.testCounts},
		}},
		{"Validation", []test{
			{"InvalidID", s.testInvalidID},
			{"Limit", s.testLimit},
			{"TooManyIDs", s.testTooManyIDs},
			{"Cursor", s.testCursor},
			{"CursorOfAnotherList", s.testCursorOfAnotherList},
		}},
		{"Lists", []test{
			{"Order", s.testListOrder},
			{"Paging", s.testPaging},
			{"PagingLongTies", s.testPagingLongTies},
			{"CursorSurvivesChange", s.testCursorSurvivesChange},
			{"PagingUnderConcurrentChange", s.testPagingUnderConcurrentChange},
		}},
		{"Relations", []test{
			{"Kinds", s.testRelationKinds},
			{"Changes", s.testRelationChanges},
			{"Flags", s.testRelationFlags},
		}},
		{"SetQueries", []test{
			{"OrderAndSince", s.testSetOrderAndSince},
			{"Empty", s.testSetEmpty},
		}},
		{"Suggestions", []test{
			{"ScoreAndOrder", s.testSuggestions},
			{"Limit", s.testSuggestionsLimit},
			{"Exclude", s.testSuggestionsExclude},
		}},
		{"Block", []test{
			{"RemovesEdges", s.testBlockRemovesEdges},
			{"Refuses", s.testBlockRefuses},
			{"Unblock", s.testUnblock},
		}},
		{"Links", []test{
			{"Idempotent", s.testLinkIdempotent},
			{"Self", s.testLinkSelf},
			{"Invalid", s.testLinkInvalid},
			{"Paging", s.testLinksPaging},
			{"CursorOfAnotherList", s.testLinksCursorOfAnotherList},
		}},
		{"Mute", []test{
			{"Expiry", s.testMuteExpiry},
			{"ChangesNoFollow", s.testMuteChangesNoFollow},
		}},
		{"Private", []test{
			{"Request", s.testPrivateRequest},
			{"Approve", s.testApprove},
			{"RemoveFollower", s.testRemoveFollower},
			{"SetPublicApproves", s.testSetPublicApproves},
			{"RequestsCountTowardLimit", s.testRequestsCountTowardLimit},
		}},
		{"Model", []test{
			{"Random", s.testRandom},
			{"RandomWithMaxFollowing", s.testRandomMaxFollowing},
			{"Concurrent", s.testConcurrent},
		}},
		{"Hook", []test{
			{"EveryChange", s.testHookEveryChange},
			{"RefusedWrite", s.testHookRefusedWrite},
			{"Failure", s.testHookFailure},
			{"Concurrent", s.testHookConcurrent},
			{"LinkEvents", s.testHookLinkEvents},
			{"LinkFailure", s.testHookLinkFailure},
			{"ConcurrentReplay", s.testHookConcurrentReplay},
		}},
		{"Apply", []test{
			{"Converges", s.testApplyConverges},
			{"FollowThenUnfollow", s.testApplyFollowThenUnfollow},
			{"OlderIgnored", s.testApplyOlderIgnored},
			{"InvalidBatch", s.testApplyInvalidBatch},
			{"LiveFollowKeepsAppliedSince", s.testApplyThenLiveFollow},
			{"LiveVersionsGrow", s.testApplyLiveVersionsGrow},
			{"FutureVersion", s.testApplyFutureVersion},
			{"ShuffledBatch", s.testApplyShuffledBatch},
			{"Block", s.testApplyBlock},
			{"Replay", s.testApplyReplay},
		}},
		{"Horizon", []test{
			{"PurgeAndRefuse", s.testHorizonPurgeAndRefuse},
			{"HiddenKept", s.testHorizonHiddenKept},
		}},
		{"Region", []test{
			{"UniqueVersions", s.testRegionUniqueVersions},
			{"None", s.testRegionNone},
			{"Mend", s.testRegionMend},
			{"UnblockMeetsFollow", s.testRegionUnblockMeetsFollow},
			{"RequestMeetsUnfollow", s.testRegionRequestMeetsUnfollow},
		}},
	}
	for _, group := range groups {
		t.Run(group.name, func(t *testing.T) {
			for _, tt := range group.tests {
				t.Run(tt.name, tt.run)
			}
		})
	}
}

type test struct {
	name string
	run  func(t *testing.T)
}

type suite struct{ newGraph NewGraph }

// start is where every test's clock starts. It is not on a millisecond, so
// the suite sees that follow times are the clock's time truncated to ms.
var start = time.Date(2026, time.November, 30, 15, 4, 5, 123_456_789, time.UTC)

// fakeClock is a clock that stands still until it is moved, and only ever
// moves forward. It is safe for concurrent use.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d, which must not be negative.
func (c *fakeClock) Advance(d time.Duration) {
	if d < 0 {
		panic(fmt.Sprintf("graphtest: clock moved backward by %v", -d))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Set moves the clock to t, which must not be before its time.
func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.Before(c.now) {
		panic(fmt.Sprintf("graphtest: clock set back from %v to %v", c.now, t))
	}
	c.now = t
}

// fixture is one test's engine with its clock. Its methods fail the test
// at once on an error, so they are for the test's own goroutine only.
type fixture struct {
	tb    testing.TB
	ctx   context.Context
	g     followgraph.Graph
	clock *fakeClock
}

// fixture builds a fresh engine whose clock stands at start.
func (s suite) fixture(tb testing.TB, maxFollowing int) *fixture {
	tb.Helper()
	return s.fixtureWith(tb, Options{MaxFollowing: maxFollowing})
}

// fixtureWith builds a fresh engine with opts and a clock that stands at
// start (opts.Now is that clock's).
func (s suite) fixtureWith(tb testing.TB, opts Options) *fixture {
	tb.Helper()
	clock := &fakeClock{now: start}
	opts.Now = clock.Now
	g := s.newGraph(tb, opts)
	if g == nil {
		tb.Fatal("NewGraph returned a nil Graph")
	}
	return &fixture{tb: tb, ctx: tb.Context(), g: g, clock: clock}
}

// now returns the clock's time in milliseconds.
func (f *fixture) now() int64 { return f.clock.Now().UnixMilli() }

// advance moves the clock forward by ms milliseconds.
func (f *fixture) advance(ms int64) { f.clock.Advance(time.Duration(ms) * time.Millisecond) }

func (f *fixture) follow(user, target followgraph.UserID) followgraph.FollowResult {
	f.tb.Helper()
	res, err := f.g.Follow(f.ctx, user, target)
	if err != nil {
		f.tb.Fatalf("Follow(%d, %d): %v", user, target, err)
	}
	return res
}

// followAll makes user follow each of targets, in that order.
func (f *fixture) followAll(user followgraph.UserID, targets ...followgraph.UserID) {
	f.tb.Helper()
	for _, target := range targets {
		f.follow(user, target)
	}
}

// followedBy makes each of users follow target, in that order.
func (f *fixture) followedBy(target followgraph.UserID, users ...followgraph.UserID) {
	f.tb.Helper()
	for _, user := range users {
		f.follow(user, target)
	}
}

func (f *fixture) unfollow(user, target followgraph.UserID) bool {
	f.tb.Helper()
	removed, err := f.g.Unfollow(f.ctx, user, target)
	if err != nil {
		f.tb.Fatalf("Unfollow(%d, %d): %v", user, target, err)
	}
	return removed
}

func (f *fixture) edge(user, target followgraph.UserID) followgraph.Edge {
	f.tb.Helper()
	e, err := f.g.IsFollowing(f.ctx, user, target)
	if err != nil {
		f.tb.Fatalf("IsFollowing(%d, %d): %v", user, target, err)
	}
	return e
}

func (f *fixture) counts(ids ...followgraph.UserID) []followgraph.Counts {
	f.tb.Helper()
	c, err := f.g.Counts(f.ctx, ids)
	if err != nil {
		f.tb.Fatalf("Counts(%v): %v", ids, err)
	}
	return c
}

func (f *fixture) relations(viewer followgraph.UserID, ids ...followgraph.UserID) []followgraph.RelationInfo {
	f.tb.Helper()
	r, err := f.g.Relations(f.ctx, viewer, ids)
	if err != nil {
		f.tb.Fatalf("Relations(%d, %v): %v", viewer, ids, err)
	}
	return r
}

func (f *fixture) suggestions(user followgraph.UserID, limit int) []followgraph.Suggestion {
	f.tb.Helper()
	s, err := f.g.Suggestions(f.ctx, user, limit)
	if err != nil {
		f.tb.Fatalf("Suggestions(%d, %d): %v", user, limit, err)
	}
	return s
}

// read returns all of list l, read in pages of the largest size.
func (f *fixture) read(l list) []followgraph.Entry {
	f.tb.Helper()
	entries, err := readStatic(f.ctx, l, followgraph.MaxLimit)
	if err != nil {
		f.tb.Fatal(err)
	}
	return entries
}

func (f *fixture) following(user followgraph.UserID) []followgraph.Entry {
	f.tb.Helper()
	return f.read(followingList(f.g, user))
}

func (f *fixture) followers(user followgraph.UserID) []followgraph.Entry {
	f.tb.Helper()
	return f.read(followersList(f.g, user))
}

// describe returns the counts and lists of ids, one to a line, to compare
// the state of the graph before and after something that must not change it.
func (f *fixture) describe(ids ...followgraph.UserID) string {
	f.tb.Helper()
	var b strings.Builder
	for _, c := range f.counts(ids...) {
		fmt.Fprintf(&b, "\n\t%d follows %d and has %d followers and %d follow requests",
			c.ID, c.FollowingCount, c.FollowerCount, c.FollowRequests)
	}
	for _, id := range ids {
		fmt.Fprintf(&b, "\n\tFollowing(%d) = %s, Followers(%d) = %s",
			id, formatEntries(f.following(id)), id, formatEntries(f.followers(id)))
		for _, name := range linkLists {
			l := linksList(f.g, name, id)
			fmt.Fprintf(&b, ", %s = %s", l.name, formatEntries(f.read(l)))
		}
		fmt.Fprintf(&b, ", private %v", f.settings(id).Private)
	}
	return b.String()
}

// crowd makes users 1 and 2 each follow, and be followed by, n members
// (ids 101 to 100+n), one member a millisecond, so that each of the six
// lists about 1 and 2, either way round, holds n entries.
func (f *fixture) crowd(n int) {
	f.tb.Helper()
	for i := range n {
		member := followgraph.UserID(101 + i)
		f.advance(1)
		f.follow(1, member)
		f.follow(2, member)
		f.follow(member, 1)
		f.follow(member, 2)
	}
}
