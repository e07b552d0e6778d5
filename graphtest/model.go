package graphtest

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/followgraph/followgraph"
)

// edge is user→target.
type edge struct{ user, target followgraph.UserID }

// model is the reference the suite compares engines with: the follows,
// blocks, mutes and pending requests, each with the millisecond it was
// made, and the private accounts, and every answer worked out the plain
// way from them.
type model struct {
	since        map[edge]int64 // the follows
	blocks       map[edge]int64
	mutes        map[edge]mute
	requests     map[edge]int64
	private      map[followgraph.UserID]bool
	states       map[followgraph.UserID]followgraph.State // those not active (statemodel.go); nil: none
	maxFollowing int                                      // 0: unlimited
	clock        func() int64                             // the engine's clock in ms, for mute expiry; nil: no mute expires
}

// mute is a mute's since and expiry in ms (expires 0: none).
type mute struct{ since, expires int64 }

func newModel(maxFollowing int) *model {
	return &model{
		since: make(map[edge]int64), blocks: make(map[edge]int64), mutes: make(map[edge]mute),
		requests: make(map[edge]int64), private: make(map[followgraph.UserID]bool), maxFollowing: maxFollowing,
	}
}

// merge adds the state of o to m (their users are disjoint).
func (m *model) merge(o *model) {
	maps.Copy(m.since, o.since)
	maps.Copy(m.blocks, o.blocks)
	maps.Copy(m.mutes, o.mutes)
	maps.Copy(m.requests, o.requests)
	maps.Copy(m.private, o.private)
}

// follow makes user follow target at ms (or ask to, when target is
// private), and returns what Follow should return: a result, or the code
// of the error. A block either way is checked before the following limit.
func (m *model) follow(user, target followgraph.UserID, ms int64) (followgraph.FollowResult, string) {
	if user == target {
		return followgraph.FollowResult{}, followgraph.ESelfFollow
	}
	if m.blocked(user, target) {
		return followgraph.FollowResult{}, followgraph.EBlocked
	}
	if since, ok := m.since[edge{user, target}]; ok {
		return followgraph.FollowResult{Created: false, Since: followgraph.Millis(since)}, ""
	}
	if since, ok := m.requests[edge{user, target}]; ok && m.private[target] {
		return followgraph.FollowResult{Since: followgraph.Millis(since), Requested: true}, ""
	}
	if m.maxFollowing > 0 && m.followingCount(user)+m.requestsOut(user) >= m.maxFollowing {
		if _, ok := m.requests[edge{user, target}]; !ok {
			return followgraph.FollowResult{}, followgraph.EFollowingLimit
		}
	}
	if m.private[target] {
		m.requests[edge{user, target}] = ms
		return followgraph.FollowResult{Created: true, Since: followgraph.Millis(ms), Requested: true}, ""
	}
	delete(m.requests, edge{user, target}) // a stale request of a now public account
	m.since[edge{user, target}] = ms
	return followgraph.FollowResult{Created: true, Since: followgraph.Millis(ms)}, ""
}

// unfollow makes user stop following target, or withdraws its request,
// and reports whether it did.
func (m *model) unfollow(user, target followgraph.UserID) bool {
	k := edge{user, target}
	_, followed := m.since[k]
	_, requested := m.requests[k]
	delete(m.since, k)
	delete(m.requests, k)
	return followed || requested
}

// blocked reports whether a or b blocks the other.
func (m *model) blocked(a, b followgraph.UserID) bool {
	_, ab := m.blocks[edge{a, b}]
	_, ba := m.blocks[edge{b, a}]
	return ab || ba
}

// block makes user block target at ms, as Block should.
func (m *model) block(user, target followgraph.UserID, ms int64) (followgraph.LinkResult, string) {
	if user == target {
		return followgraph.LinkResult{}, followgraph.ESelfFollow
	}
	if since, ok := m.blocks[edge{user, target}]; ok {
		return followgraph.LinkResult{Since: followgraph.Millis(since)}, ""
	}
	m.blocks[edge{user, target}] = ms
	for _, k := range []edge{{user, target}, {target, user}} {
		delete(m.since, k)
		delete(m.requests, k)
	}
	return followgraph.LinkResult{Created: true, Since: followgraph.Millis(ms)}, ""
}

// unblock ends user's block of target, and reports whether there was one.
func (m *model) unblock(user, target followgraph.UserID) bool {
	_, ok := m.blocks[edge{user, target}]
	delete(m.blocks, edge{user, target})
	return ok
}

// now returns the clock's ms, or the smallest time when the model has no
// clock, so that no mute expires.
func (m *model) now() int64 {
	if m.clock == nil {
		return math.MinInt64
	}
	return m.clock()
}

// activeMute returns user's mute of target unless there is none or it
// has expired at ms.
func (m *model) activeMute(user, target followgraph.UserID, ms int64) (mute, bool) {
	mu, ok := m.mutes[edge{user, target}]
	if !ok || (mu.expires != 0 && ms >= mu.expires) {
		return mute{}, false
	}
	return mu, true
}

// mute makes user mute target for d at ms, as Mute should.
func (m *model) mute(user, target followgraph.UserID, d time.Duration, ms int64) (followgraph.LinkResult, string) {
	if user == target {
		return followgraph.LinkResult{}, followgraph.ESelfFollow
	}
	if followgraph.CheckMute(d) != nil {
		return followgraph.LinkResult{}, followgraph.EInvalidArgument
	}
	mu, existed := m.activeMute(user, target, ms)
	if !existed {
		mu.since = ms
	}
	mu.expires = 0
	if d > 0 {
		mu.expires = followgraph.Millis(ms).Add(d).UnixMilli()
	}
	m.mutes[edge{user, target}] = mu
	return followgraph.LinkResult{Created: !existed, Since: followgraph.Millis(mu.since), Expires: msTime(mu.expires)}, ""
}

// unmute ends user's mute of target, and reports whether there was one
// not expired at ms.
func (m *model) unmute(user, target followgraph.UserID, ms int64) bool {
	_, ok := m.activeMute(user, target, ms)
	delete(m.mutes, edge{user, target})
	return ok
}

// msTime returns the time of ms, or the zero time for 0.
func msTime(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return followgraph.Millis(ms)
}

// link returns the edge of kind from user to target, as Link should at ms.
func (m *model) link(kind followgraph.Kind, user, target followgraph.UserID, ms int64) followgraph.Link {
	var since int64
	var ok bool
	switch kind {
	case followgraph.KindBlock:
		since, ok = m.blocks[edge{user, target}]
	case followgraph.KindRequest:
		since, ok = m.requests[edge{user, target}]
	case followgraph.KindMute:
		mu, on := m.activeMute(user, target, ms)
		if !on {
			return followgraph.Link{}
		}
		return followgraph.Link{On: true, Since: followgraph.Millis(mu.since), Expires: msTime(mu.expires)}
	}
	if !ok {
		return followgraph.Link{}
	}
	return followgraph.Link{On: true, Since: followgraph.Millis(since)}
}

// approve approves requester's request to user at ms, as Approve should.
func (m *model) approve(user, requester followgraph.UserID, ms int64) (followgraph.FollowResult, string) {
	if user == requester {
		return followgraph.FollowResult{}, followgraph.ESelfFollow
	}
	k := edge{requester, user}
	if since, ok := m.since[k]; ok {
		return followgraph.FollowResult{Since: followgraph.Millis(since)}, ""
	}
	if _, ok := m.requests[k]; !ok {
		return followgraph.FollowResult{}, followgraph.ENoRequest
	}
	delete(m.requests, k)
	m.since[k] = ms
	return followgraph.FollowResult{Created: true, Since: followgraph.Millis(ms)}, ""
}

// removeFollower ends follower's follow of, or request to, user, and
// reports whether there was either.
func (m *model) removeFollower(user, follower followgraph.UserID) bool {
	return m.unfollow(follower, user)
}

// setPrivate sets user's setting at ms; turning it off approves every
// pending request to user.
func (m *model) setPrivate(user followgraph.UserID, private bool, ms int64) {
	if !private {
		for k := range m.requests {
			if k.target == user {
				m.approve(user, k.user, ms)
			}
		}
	}
	m.private[user] = private
}

func (m *model) requestsOut(user followgraph.UserID) int {
	n := 0
	for k := range m.requests {
		if k.user == user {
			n++
		}
	}
	return n
}

// links returns the list named list of user, as Links should at ms.
func (m *model) links(list string, user followgraph.UserID, ms int64) []followgraph.Entry {
	var out []followgraph.Entry
	switch list {
	case followgraph.ListBlocks:
		for k, since := range m.blocks {
			if k.user == user {
				out = append(out, entry(k.target, since))
			}
		}
	case followgraph.ListMutes:
		for k := range m.mutes {
			if mu, ok := m.activeMute(k.user, k.target, ms); ok && k.user == user {
				out = append(out, entry(k.target, mu.since))
			}
		}
	case followgraph.ListFollowRequests:
		for k, since := range m.requests {
			if k.target == user {
				out = append(out, entry(k.user, since))
			}
		}
	}
	return newestFirst(out)
}

func (m *model) follows(user, target followgraph.UserID) bool {
	_, ok := m.since[edge{user, target}]
	return ok
}

func (m *model) edge(user, target followgraph.UserID) followgraph.Edge {
	since, ok := m.since[edge{user, target}]
	if !ok {
		return followgraph.Edge{}
	}
	return followgraph.Edge{Following: true, Since: followgraph.Millis(since)}
}

func (m *model) followingCount(user followgraph.UserID) int {
	n := 0
	for e := range m.since {
		if e.user == user {
			n++
		}
	}
	return n
}

func (m *model) counts(ids []followgraph.UserID) []followgraph.Counts {
	out := make([]followgraph.Counts, len(ids))
	for i, id := range ids {
		out[i] = followgraph.Counts{ID: id, State: m.states[id]}
		if !out[i].State.Active() {
			continue // as for a user with no edges
		}
		for e := range m.since {
			if e.user == id {
				out[i].FollowingCount++
			}
			if e.target == id {
				out[i].FollowerCount++
			}
		}
		for e := range m.requests {
			if e.target == id {
				out[i].FollowRequests++
			}
		}
	}
	return out
}

// newestFirst sorts entries by follow time, newest first, ties by id,
// larger first.
func newestFirst(entries []followgraph.Entry) []followgraph.Entry {
	slices.SortFunc(entries, func(a, b followgraph.Entry) int { return a.Key().Compare(b.Key()) })
	return entries
}

func (m *model) following(user followgraph.UserID) []followgraph.Entry {
	var out []followgraph.Entry
	for e, ms := range m.since {
		if e.user == user {
			out = append(out, entry(e.target, ms))
		}
	}
	return newestFirst(out)
}

func (m *model) followers(user followgraph.UserID) []followgraph.Entry {
	var out []followgraph.Entry
	for e, ms := range m.since {
		if e.target == user {
			out = append(out, entry(e.user, ms))
		}
	}
	return newestFirst(out)
}

// mutuals: the users that user follows and that follow user; since user
// followed them.
func (m *model) mutuals(user followgraph.UserID) []followgraph.Entry {
	return slices.DeleteFunc(m.following(user), func(e followgraph.Entry) bool { return !m.follows(e.ID, user) })
}

// commonFollowing: the users that both user and other follow; since user
// followed them.
func (m *model) commonFollowing(user, other followgraph.UserID) []followgraph.Entry {
	return slices.DeleteFunc(m.following(user), func(e followgraph.Entry) bool { return !m.follows(other, e.ID) })
}

// commonFollowers: the users that follow both user and other; since they
// followed user.
func (m *model) commonFollowers(user, other followgraph.UserID) []followgraph.Entry {
	return slices.DeleteFunc(m.followers(user), func(e followgraph.Entry) bool { return !m.follows(e.ID, other) })
}

// knownFollowers: the users that user follows and that follow target;
// since user followed them.
func (m *model) knownFollowers(user, target followgraph.UserID) []followgraph.Entry {
	return slices.DeleteFunc(m.following(user), func(e followgraph.Entry) bool { return !m.follows(e.ID, target) })
}

func (m *model) relation(viewer, id followgraph.UserID) followgraph.RelationInfo {
	if id == viewer {
		return followgraph.RelationInfo{ID: id, Relation: followgraph.RelationSelf}
	}
	out, in := m.edge(viewer, id), m.edge(id, viewer)
	_, blocking := m.blocks[edge{viewer, id}]
	_, blockedBy := m.blocks[edge{id, viewer}]
	_, muting := m.activeMute(viewer, id, m.now())
	_, requested := m.requests[edge{viewer, id}]
	_, requestedBy := m.requests[edge{id, viewer}]
	return followgraph.RelationInfo{
		ID:              id,
		Relation:        followgraph.RelationOf(out.Following, in.Following),
		FollowingSince:  out.Since,
		FollowedBySince: in.Since,
		Blocking:        blocking,
		BlockedBy:       blockedBy,
		Muting:          muting,
		Requested:       requested,
		RequestedBy:     requestedBy,
	}
}

// suggestions returns every suggestion for user, in order. Via holds all
// of the people user follows that follow the candidate, for
// checkSuggestions.
func (m *model) suggestions(user followgraph.UserID) []followgraph.Suggestion {
	via := make(map[followgraph.UserID][]followgraph.UserID)
	for _, f := range m.following(user) {
		for _, c := range m.following(f.ID) {
			if c.ID != user && !m.follows(user, c.ID) && !m.excluded(user, c.ID) {
				via[c.ID] = append(via[c.ID], f.ID)
			}
		}
	}
	var out []followgraph.Suggestion
	for id, v := range via {
		out = append(out, followgraph.Suggestion{ID: id, Score: int64(len(v)), Via: v})
	}
	slices.SortFunc(out, func(a, b followgraph.Suggestion) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return out
}

// excluded reports whether suggestions for user leave out c: a block
// either way, a mute of c, or a pending request to c.
func (m *model) excluded(user, c followgraph.UserID) bool {
	_, muting := m.activeMute(user, c, m.now())
	_, requested := m.requests[edge{user, c}]
	return m.blocked(user, c) || muting || requested
}

// modelOfEvents returns the state that events converge to: for each edge,
// that of its event of the highest version.
func modelOfEvents(events []followgraph.Event) *model {
	latest := make(map[edge]followgraph.Event)
	for _, e := range events {
		k := edge{e.User, e.Target}
		if l, ok := latest[k]; !ok || e.Version > l.Version {
			latest[k] = e
		}
	}
	m := newModel(0)
	for k, e := range latest {
		if e.Op == followgraph.OpFollow {
			m.since[k] = e.Version.Millis()
		}
	}
	return m
}

// The checks below compare a graph with a model. Like those in check.go
// they only report, so any goroutine may call them.

// checkFollow makes user follow target at ms in g and in m, and reports
// unless they agree. It returns false when they did not.
func checkFollow(tb testing.TB, ctx context.Context, g followgraph.Graph, m *model, user, target followgraph.UserID, ms int64) bool {
	tb.Helper()
	got, err := g.Follow(ctx, user, target)
	want, code := m.follow(user, target, ms)
	return compareFollow(tb, user, target, got, err, want, code)
}

func compareFollow(tb testing.TB, user, target followgraph.UserID, got followgraph.FollowResult, err error,
	want followgraph.FollowResult, code string) bool {
	tb.Helper()
	what := fmt.Sprintf("Follow(%d, %d)", user, target)
	if code != "" || err != nil {
		checkCode(tb, what, err, code)
		return followgraph.ErrorCode(err) == code
	}
	if got.Created != want.Created || !got.Since.Equal(want.Since) || got.Requested != want.Requested {
		tb.Errorf("%s = {Created: %v, Since: %s, Requested: %v}, want {Created: %v, Since: %s, Requested: %v}",
			what, got.Created, formatTime(got.Since), got.Requested, want.Created, formatTime(want.Since), want.Requested)
		return false
	}
	return true
}

// checkUnfollow makes user stop following target in g and in m, and
// reports unless they agree. It returns false when they did not.
func checkUnfollow(tb testing.TB, ctx context.Context, g followgraph.Graph, m *model, user, target followgraph.UserID) bool {
	tb.Helper()
	got, err := g.Unfollow(ctx, user, target)
	want := m.unfollow(user, target)
	if err != nil || got != want {
		tb.Errorf("Unfollow(%d, %d) = %v, %v; want %v, nil", user, target, got, err, want)
		return false
	}
	return true
}

// checkModel compares every answer of g about users with m: every edge,
// the counts, the following and followers of every user, the relations of
// every user to all, every set query for some pairs, and the suggestions
// of some users. rng picks the page sizes, the pairs and the users.
func checkModel(tb testing.TB, ctx context.Context, g followgraph.Graph, m *model, users []followgraph.UserID, rng *rand.Rand) {
	tb.Helper()
	for _, u := range users {
		for _, t := range users {
			checkModelEdge(tb, ctx, g, m, u, t)
		}
	}
	// Counts and Relations of all users shuffled, with a repeat and a user
	// that never had an edge.
	ids := append(slices.Clone(users), users[0], 999_999_999)
	rng.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	checkModelCounts(tb, ctx, g, m, ids)
	for _, u := range users {
		checkList(tb, ctx, followingList(g, u), randomLimit(rng), m.following(u))
		checkList(tb, ctx, followersList(g, u), randomLimit(rng), m.followers(u))
		checkModelRelations(tb, ctx, g, m, u, ids)
		checkModelLinks(tb, ctx, g, m, u, randomLimit(rng))
	}
	for range 8 {
		a, b := pickPair(rng, users)
		checkModelLink(tb, ctx, g, m, a, b)
		for _, l := range setLists(g, a, b) {
			checkList(tb, ctx, l, randomLimit(rng), l.want(m))
		}
	}
	for range 4 {
		u := users[rng.IntN(len(users))]
		checkModelSuggestions(tb, ctx, g, m, u, followgraph.MaxSuggestLimit)
		checkModelSuggestions(tb, ctx, g, m, u, 1+rng.IntN(5))
	}
}

func checkModelEdge(tb testing.TB, ctx context.Context, g followgraph.Graph, m *model, user, target followgraph.UserID) {
	tb.Helper()
	what := fmt.Sprintf("IsFollowing(%d, %d)", user, target)
	got, err := g.IsFollowing(ctx, user, target)
	if err != nil {
		tb.Errorf("%s: %v", what, err)
		return
	}
	checkEdge(tb, what, got, m.edge(user, target))
}

func checkModelCounts(tb testing.TB, ctx context.Context, g followgraph.Graph, m *model, ids []followgraph.UserID) {
	tb.Helper()
	what := fmt.Sprintf("Counts(%v)", ids)
	got, err := g.Counts(ctx, ids)
	if err != nil {
		tb.Errorf("%s: %v", what, err)
		return
	}
	checkCounts(tb, what, got, m.counts(ids))
}

func checkModelRelations(tb testing.TB, ctx context.Context, g followgraph.Graph, m *model, viewer followgraph.UserID, ids []followgraph.UserID) {
	tb.Helper()
	what := fmt.Sprintf("Relations(%d, %v)", viewer, ids)
	got, err := g.Relations(ctx, viewer, ids)
	if err != nil {
		tb.Errorf("%s: %v", what, err)
		return
	}
	want := make([]followgraph.RelationInfo, len(ids))
	for i, id := range ids {
		want[i] = m.relation(viewer, id)
	}
	checkRelations(tb, what, got, want)
}

func checkModelSuggestions(tb testing.TB, ctx context.Context, g followgraph.Graph, m *model, user followgraph.UserID, limit int) {
	tb.Helper()
	what := fmt.Sprintf("Suggestions(%d, %d)", user, limit)
	got, err := g.Suggestions(ctx, user, limit)
	if err != nil {
		tb.Errorf("%s: %v", what, err)
		return
	}
	want := m.suggestions(user)
	checkSuggestions(tb, what, got, want[:min(len(want), limit)])
}

// randomLimit returns one of pageLimits.
func randomLimit(rng *rand.Rand) int { return pageLimits[rng.IntN(len(pageLimits))] }

// pickPair returns two different users.
func pickPair(rng *rand.Rand, users []followgraph.UserID) (a, b followgraph.UserID) {
	i := rng.IntN(len(users))
	j := rng.IntN(len(users) - 1)
	if j >= i {
		j++
	}
	return users[i], users[j]
}

// checkBlock makes user block target at ms in g and in m, and reports
// unless they agree.
func checkBlock(tb testing.TB, ctx context.Context, g followgraph.Graph, m *model, user, target followgraph.UserID, ms int64) bool {
	tb.Helper()
	got, err := g.Block(ctx, user, target)
	want, code := m.block(user, target, ms)
	return compareLinkResult(tb, fmt.Sprintf("Block(%d, %d)", user, target), got, err, want, code)
}

// checkMute makes user mute target for d at ms in g and in m, and reports
// unless they agree.
func checkMute(tb testing.TB, ctx context.Context, g followgraph.Graph, m *model, user, target followgraph.UserID, d time.Duration, ms int64) bool {
	tb.Helper()
	got, err := g.Mute(ctx, user, target, d)
	want, code := m.mute(user, target, d, ms)
	return compareLinkResult(tb, fmt.Sprintf("Mute(%d, %d, %s)", user, target, d), got, err, want, code)
}

func compareLinkResult(tb testing.TB, what string, got followgraph.LinkResult, err error, want followgraph.LinkResult, code string) bool {
	tb.Helper()
	if code != "" || err != nil {
		checkCode(tb, what, err, code)
		return followgraph.ErrorCode(err) == code
	}
	checkLinkResult(tb, what, got, want)
	return got.Created == want.Created && got.Since.Equal(want.Since) && got.Expires.Equal(want.Expires)
}

// checkApprove makes user approve requester at ms in g and in m, and
// reports unless they agree.
func checkApprove(tb testing.TB, ctx context.Context, g followgraph.Graph, m *model, user, requester followgraph.UserID, ms int64) bool {
	tb.Helper()
	got, err := g.Approve(ctx, user, requester)
	want, code := m.approve(user, requester, ms)
	return compareFollow(tb, requester, user, got, err, want, code)
}

// checkRemoved compares the outcome of a write that reports whether it
// removed something with the model's.
func checkRemoved(tb testing.TB, what string, got bool, err error, want bool) bool {
	tb.Helper()
	if err != nil || got != want {
		tb.Errorf("%s = %v, %v; want %v, nil", what, got, err, want)
		return false
	}
	return true
}

// checkSetPrivate sets user's setting at ms in g and in m, and reports
// unless g answers the setting.
func checkSetPrivate(tb testing.TB, ctx context.Context, g followgraph.Graph, m *model, user followgraph.UserID, private bool, ms int64) bool {
	tb.Helper()
	got, err := g.SetPrivate(ctx, user, private)
	m.setPrivate(user, private, ms)
	if want := (followgraph.Settings{ID: user, Private: private}); err != nil || got != want {
		tb.Errorf("SetPrivate(%d, %v) = %+v, %v; want %+v, nil", user, private, got, err, want)
		return false
	}
	return true
}

// checkModelLinks compares the lists of Links and the settings of user
// with m, reading pages of limit entries.
func checkModelLinks(tb testing.TB, ctx context.Context, g followgraph.Graph, m *model, user followgraph.UserID, limit int) {
	tb.Helper()
	for _, name := range linkLists {
		l := linksList(g, name, user)
		checkList(tb, ctx, l, limit, l.want(m))
	}
	st, err := g.Settings(ctx, user)
	if want := (followgraph.Settings{ID: user, Private: m.private[user]}); err != nil || st != want {
		tb.Errorf("Settings(%d) = %+v, %v; want %+v", user, st, err, want)
	}
}

// checkModelLink compares the edges of every kind but follow from user to
// target with m.
func checkModelLink(tb testing.TB, ctx context.Context, g followgraph.Graph, m *model, user, target followgraph.UserID) {
	tb.Helper()
	for _, k := range followgraph.LinkKinds() {
		what := fmt.Sprintf("Link(%s, %d, %d)", k, user, target)
		got, err := g.Link(ctx, k, user, target)
		if err != nil {
			tb.Errorf("%s: %v", what, err)
			continue
		}
		checkLink(tb, what, got, m.link(k, user, target, m.now()))
	}
}
