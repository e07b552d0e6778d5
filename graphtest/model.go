package graphtest

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/followgraph/followgraph"
)

// edge is user→target.
type edge struct{ user, target followgraph.UserID }

// model is the reference the suite compares engines with: the set of
// edges, each with the millisecond of its follow, and every answer worked
// out the plain way from it.
type model struct {
	since        map[edge]int64
	maxFollowing int // 0: unlimited
}

func newModel(maxFollowing int) *model {
	return &model{since: make(map[edge]int64), maxFollowing: maxFollowing}
}

// follow makes user follow target at ms, and returns what Follow should
// return: a result, or the code of the error.
func (m *model) follow(user, target followgraph.UserID, ms int64) (followgraph.FollowResult, string) {
	if user == target {
		return followgraph.FollowResult{}, followgraph.ESelfFollow
	}
	if since, ok := m.since[edge{user, target}]; ok {
		return followgraph.FollowResult{Created: false, Since: followgraph.Millis(since)}, ""
	}
	if m.maxFollowing > 0 && m.followingCount(user) >= m.maxFollowing {
		return followgraph.FollowResult{}, followgraph.EFollowingLimit
	}
	m.since[edge{user, target}] = ms
	return followgraph.FollowResult{Created: true, Since: followgraph.Millis(ms)}, ""
}

// unfollow makes user stop following target, and reports whether it did.
func (m *model) unfollow(user, target followgraph.UserID) bool {
	_, ok := m.since[edge{user, target}]
	delete(m.since, edge{user, target})
	return ok
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
		out[i] = followgraph.Counts{ID: id}
		for e := range m.since {
			if e.user == id {
				out[i].FollowingCount++
			}
			if e.target == id {
				out[i].FollowerCount++
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
	return followgraph.RelationInfo{
		ID:              id,
		Relation:        followgraph.RelationOf(out.Following, in.Following),
		FollowingSince:  out.Since,
		FollowedBySince: in.Since,
	}
}

// suggestions returns every suggestion for user, in order. Via holds all
// of the people user follows that follow the candidate, for
// checkSuggestions.
func (m *model) suggestions(user followgraph.UserID) []followgraph.Suggestion {
	via := make(map[followgraph.UserID][]followgraph.UserID)
	for _, f := range m.following(user) {
		for _, c := range m.following(f.ID) {
			if c.ID != user && !m.follows(user, c.ID) {
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
	if got.Created != want.Created || !got.Since.Equal(want.Since) {
		tb.Errorf("%s = {Created: %v, Since: %s}, want {Created: %v, Since: %s}",
			what, got.Created, formatTime(got.Since), want.Created, formatTime(want.Since))
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
	}
	for range 8 {
		a, b := pickPair(rng, users)
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
