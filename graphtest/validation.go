package graphtest

import (
	"encoding/base64"
	"fmt"
	"math"
	"testing"

	"github.com/followgraph/followgraph"
)

func (s suite) testInvalidID(t *testing.T) {
	for _, bad := range []followgraph.UserID{0, -1, math.MinInt64} {
		t.Run(fmt.Sprint(int64(bad)), func(t *testing.T) {
			f := s.fixture(t, 0)
			f.follow(1, 2)
			f.follow(2, 1)
			f.follow(1, 3)
			before := f.describe(1, 2, 3)

			ctx, g, page := f.ctx, f.g, followgraph.PageRequest{}
			calls := []struct {
				name string
				call func() error
			}{
				{"Follow(bad, 1)", func() error { _, err := g.Follow(ctx, bad, 1); return err }},
				{"Follow(1, bad)", func() error { _, err := g.Follow(ctx, 1, bad); return err }},
				{"Follow(bad, bad)", func() error { _, err := g.Follow(ctx, bad, bad); return err }},
				{"Unfollow(bad, 1)", func() error { _, err := g.Unfollow(ctx, bad, 1); return err }},
				{"Unfollow(1, bad)", func() error { _, err := g.Unfollow(ctx, 1, bad); return err }},
				{"IsFollowing(bad, 1)", func() error { _, err := g.IsFollowing(ctx, bad, 1); return err }},
				{"IsFollowing(1, bad)", func() error { _, err := g.IsFollowing(ctx, 1, bad); return err }},
				{"Counts([bad])", func() error { _, err := g.Counts(ctx, []followgraph.UserID{bad}); return err }},
				{"Counts([1, bad, 2])", func() error { _, err := g.Counts(ctx, []followgraph.UserID{1, bad, 2}); return err }},
				{"Following(bad)", func() error { _, err := g.Following(ctx, bad, page); return err }},
				{"Followers(bad)", func() error { _, err := g.Followers(ctx, bad, page); return err }},
				{"Relations(bad, [1])", func() error { _, err := g.Relations(ctx, bad, []followgraph.UserID{1}); return err }},
				{"Relations(1, [2, bad])", func() error { _, err := g.Relations(ctx, 1, []followgraph.UserID{2, bad}); return err }},
				{"Mutuals(bad)", func() error { _, err := g.Mutuals(ctx, bad, page); return err }},
				{"CommonFollowing(bad, 1)", func() error { _, err := g.CommonFollowing(ctx, bad, 1, page); return err }},
				{"CommonFollowing(1, bad)", func() error { _, err := g.CommonFollowing(ctx, 1, bad, page); return err }},
				{"CommonFollowers(bad, 1)", func() error { _, err := g.CommonFollowers(ctx, bad, 1, page); return err }},
				{"CommonFollowers(1, bad)", func() error { _, err := g.CommonFollowers(ctx, 1, bad, page); return err }},
				{"KnownFollowers(bad, 1)", func() error { _, err := g.KnownFollowers(ctx, bad, 1, page); return err }},
				{"KnownFollowers(1, bad)", func() error { _, err := g.KnownFollowers(ctx, 1, bad, page); return err }},
				{"Suggestions(bad)", func() error { _, err := g.Suggestions(ctx, bad, 0); return err }},
			}
			for _, c := range calls {
				checkCode(t, fmt.Sprintf("%s with bad = %d", c.name, bad), c.call(), followgraph.EInvalidID)
			}
			if after := f.describe(1, 2, 3); after != before {
				t.Errorf("calls with invalid ids changed the graph:\nbefore:%s\nafter:%s", before, after)
			}
		})
	}
}

func (s suite) testLimit(t *testing.T) {
	const n = followgraph.DefaultLimit + 5
	f := s.fixture(t, 0)
	f.crowd(n)
	// 300 follows 301, who follows n others: n suggestions for 300.
	f.follow(300, 301)
	for i := range n {
		f.follow(301, followgraph.UserID(400+i))
	}

	for _, l := range lists(f.g, 1, 2) {
		for _, tt := range []struct {
			limit    int
			size     int
			lastPage bool
		}{
			{0, followgraph.DefaultLimit, false},
			{1, 1, false},
			{followgraph.MaxLimit, n, true},
		} {
			what := fmt.Sprintf("%s with limit %d", l.name, tt.limit)
			p, err := l.read(f.ctx, followgraph.PageRequest{Limit: tt.limit})
			if err != nil {
				t.Errorf("%s: %v", what, err)
				continue
			}
			if len(p.Entries) != tt.size || (p.Next == "") != tt.lastPage {
				t.Errorf("%s: %d entries and next cursor %q, want %d entries and a next cursor: %v",
					what, len(p.Entries), p.Next, tt.size, !tt.lastPage)
			}
			if l.set && p.Count != n {
				t.Errorf("%s: Count %d, want %d", what, p.Count, n)
			}
		}
		for _, bad := range []int{-1, followgraph.MaxLimit + 1, math.MinInt, math.MaxInt} {
			_, err := l.read(f.ctx, followgraph.PageRequest{Limit: bad})
			checkCode(t, fmt.Sprintf("%s with limit %d", l.name, bad), err, followgraph.EInvalidArgument)
		}
	}

	for _, tt := range []struct{ limit, size int }{
		{0, followgraph.DefaultLimit},
		{1, 1},
		{followgraph.MaxSuggestLimit, n},
	} {
		if got := f.suggestions(300, tt.limit); len(got) != tt.size {
			t.Errorf("Suggestions(300, %d): %d suggestions, want %d", tt.limit, len(got), tt.size)
		}
	}
	for _, bad := range []int{-1, followgraph.MaxSuggestLimit + 1, math.MinInt, math.MaxInt} {
		_, err := f.g.Suggestions(f.ctx, 300, bad)
		checkCode(t, fmt.Sprintf("Suggestions(300, %d)", bad), err, followgraph.EInvalidArgument)
	}
}

func (s suite) testTooManyIDs(t *testing.T) {
	f := s.fixture(t, 0)
	now := f.now()
	f.follow(1, 2)
	ids := make([]followgraph.UserID, followgraph.MaxRelationIDs+1)
	for i := range ids {
		ids[i] = followgraph.UserID(i + 1)
	}

	counts, err := f.g.Counts(f.ctx, ids[:followgraph.MaxCountIDs])
	if err != nil || len(counts) != followgraph.MaxCountIDs {
		t.Errorf("Counts of %d ids: %d counts, %v; want %d counts", followgraph.MaxCountIDs, len(counts), err, followgraph.MaxCountIDs)
	} else {
		checkCounts(t, "the first two of Counts(1, 2, …)", counts[:2], []followgraph.Counts{
			{ID: 1, FollowingCount: 1, FollowerCount: 0},
			{ID: 2, FollowingCount: 0, FollowerCount: 1},
		})
	}
	_, err = f.g.Counts(f.ctx, ids[:followgraph.MaxCountIDs+1])
	checkCode(t, fmt.Sprintf("Counts of %d ids", followgraph.MaxCountIDs+1), err, followgraph.EInvalidArgument)

	rels, err := f.g.Relations(f.ctx, 2, ids[:followgraph.MaxRelationIDs])
	if err != nil || len(rels) != followgraph.MaxRelationIDs {
		t.Errorf("Relations of %d ids: %d relations, %v; want %d relations", followgraph.MaxRelationIDs, len(rels), err, followgraph.MaxRelationIDs)
	} else {
		checkRelations(t, "the first three of Relations(2, [1, 2, 3, …])", rels[:3], []followgraph.RelationInfo{
			{ID: 1, Relation: followgraph.RelationFollower, FollowedBySince: followgraph.Millis(now)},
			{ID: 2, Relation: followgraph.RelationSelf},
			{ID: 3, Relation: followgraph.RelationNone},
		})
	}
	_, err = f.g.Relations(f.ctx, 2, ids)
	checkCode(t, fmt.Sprintf("Relations of %d ids", len(ids)), err, followgraph.EInvalidArgument)
}

func (s suite) testCursor(t *testing.T) {
	f := s.fixture(t, 0)
	f.crowd(3)
	for _, l := range lists(f.g, 1, 2) {
		want, err := readStatic(f.ctx, l, followgraph.MaxLimit)
		if err != nil {
			t.Fatal(err)
		}
		first, err := l.read(f.ctx, followgraph.PageRequest{Limit: 1})
		if err != nil || first.Next == "" {
			t.Fatalf("%s, first page of 1: next cursor %q, %v; want a cursor", l.name, first.Next, err)
		}
		c := first.Next

		// A cursor can be used again, with another limit.
		for range 2 {
			p, err := l.read(f.ctx, followgraph.PageRequest{Limit: 2, Cursor: c})
			if err != nil {
				t.Errorf("%s after the first entry: %v", l.name, err)
				continue
			}
			checkEntries(t, l.name+" after the first entry", p.Entries, want[1:])
		}

		edited := []byte(c) // still base64, but another position or MAC
		if k := len(c) / 2; edited[k] == 'A' {
			edited[k] = 'B'
		} else {
			edited[k] = 'A'
		}
		random := make([]byte, 25)
		for i := range random {
			random[i] = byte(i*37 + 1)
		}
		for _, tt := range []struct{ name, cursor string }{
			{"not base64", "not a cursor!"},
			{"random base64", "aGVsbG8"},
			{"random bytes of a cursor's length", base64.RawURLEncoding.EncodeToString(random)},
			{"truncated", c[:len(c)-1]},
			{"half", c[:len(c)/2]},
			{"extended", c + "A"},
			{"edited", string(edited)},
			{"padded", c + "=="},
			{"of a scope no engine uses", followgraph.EncodeCursor("no such list", want[0].Key())},
		} {
			_, err := l.read(f.ctx, followgraph.PageRequest{Limit: 1, Cursor: tt.cursor})
			checkCode(t, fmt.Sprintf("%s with a cursor %s (%q)", l.name, tt.name, tt.cursor), err, followgraph.EInvalidCursor)
		}
	}
}

func (s suite) testCursorOfAnotherList(t *testing.T) {
	f := s.fixture(t, 0)
	f.crowd(3)
	all := append(lists(f.g, 1, 2), lists(f.g, 2, 1)...)
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
			if i == j {
				continue
			}
			_, err := to.read(f.ctx, followgraph.PageRequest{Limit: 1, Cursor: cursors[i]})
			checkCode(t, fmt.Sprintf("%s with a cursor of %s", to.name, from.name), err, followgraph.EInvalidCursor)
		}
	}
}
