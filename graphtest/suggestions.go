package graphtest

import (
	"fmt"
	"testing"

	"github.com/followgraph/followgraph"
)

// suggestionGraph makes a graph where 1 follows 2, 3, 4 and 5, and returns
// the suggestions for 1. Each suggestion's Via holds all of the people 1
// follows that follow it.
func suggestionGraph(f *fixture) []followgraph.Suggestion {
	f.tb.Helper()
	f.followAll(1, 2, 3, 4, 5)
	f.followAll(2, 10, 11, 12, 20, 1, 3) // 1 is the user, and 1 already follows 3
	f.followAll(3, 10, 11, 9)
	f.followAll(4, 10, 12, 13)
	f.followAll(5, 10, 13, 8)
	f.followAll(30, 40, 1) // 30 follows 1, but 1 does not follow 30
	f.follow(10, 50)       // two steps away from 1
	return []followgraph.Suggestion{
		{ID: 10, Score: 4, Via: []followgraph.UserID{2, 3, 4, 5}},
		{ID: 11, Score: 2, Via: []followgraph.UserID{2, 3}},
		{ID: 12, Score: 2, Via: []followgraph.UserID{2, 4}},
		{ID: 13, Score: 2, Via: []followgraph.UserID{4, 5}},
		{ID: 8, Score: 1, Via: []followgraph.UserID{5}},
		{ID: 9, Score: 1, Via: []followgraph.UserID{3}},
		{ID: 20, Score: 1, Via: []followgraph.UserID{2}},
	}
}

func (s suite) testSuggestions(t *testing.T) {
	f := s.fixture(t, 0)
	want := suggestionGraph(f)
	checkSuggestions(t, "Suggestions(1, 0)", f.suggestions(1, 0), want)

	// 3 is no longer followed, so it is a suggestion, and no longer a via.
	f.unfollow(1, 3)
	checkSuggestions(t, "Suggestions(1, 0) after 1 unfollowed 3", f.suggestions(1, 0), []followgraph.Suggestion{
		{ID: 10, Score: 3, Via: []followgraph.UserID{2, 4, 5}},
		{ID: 12, Score: 2, Via: []followgraph.UserID{2, 4}},
		{ID: 13, Score: 2, Via: []followgraph.UserID{4, 5}},
		{ID: 3, Score: 1, Via: []followgraph.UserID{2}},
		{ID: 8, Score: 1, Via: []followgraph.UserID{5}},
		{ID: 11, Score: 1, Via: []followgraph.UserID{2}},
		{ID: 20, Score: 1, Via: []followgraph.UserID{2}},
	})

	// 10 is followed now, so it is no suggestion, and whom it follows are.
	f.follow(1, 10)
	checkSuggestions(t, "Suggestions(1, 0) after 1 followed 10", f.suggestions(1, 0), []followgraph.Suggestion{
		{ID: 12, Score: 2, Via: []followgraph.UserID{2, 4}},
		{ID: 13, Score: 2, Via: []followgraph.UserID{4, 5}},
		{ID: 3, Score: 1, Via: []followgraph.UserID{2}},
		{ID: 8, Score: 1, Via: []followgraph.UserID{5}},
		{ID: 11, Score: 1, Via: []followgraph.UserID{2}},
		{ID: 20, Score: 1, Via: []followgraph.UserID{2}},
		{ID: 50, Score: 1, Via: []followgraph.UserID{10}},
	})

	checkSuggestions(t, "Suggestions(30, 0)", f.suggestions(30, 0), []followgraph.Suggestion{
		{ID: 2, Score: 1, Via: []followgraph.UserID{1}},
		{ID: 4, Score: 1, Via: []followgraph.UserID{1}},
		{ID: 5, Score: 1, Via: []followgraph.UserID{1}},
		{ID: 10, Score: 1, Via: []followgraph.UserID{1}},
	})
	checkSuggestions(t, "Suggestions(50, 0) of a user who follows no one", f.suggestions(50, 0), nil)
	checkSuggestions(t, "Suggestions(99, 0) of a user with no edges", f.suggestions(99, 0), nil)
}

func (s suite) testSuggestionsLimit(t *testing.T) {
	f := s.fixture(t, 0)
	all := suggestionGraph(f)
	for limit := 1; limit <= len(all)+1; limit++ {
		checkSuggestions(t, fmt.Sprintf("Suggestions(1, %d)", limit), f.suggestions(1, limit), all[:min(limit, len(all))])
	}
}
