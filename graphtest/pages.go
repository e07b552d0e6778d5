package graphtest

import (
	"context"
	"fmt"

	"github.com/followgraph/followgraph"
)

// list is one paged list of a graph, such as the followers of a user,
// with what the reference model says it holds.
type list struct {
	name string // such as "Followers(7)"
	set  bool   // a set query: its pages carry the Count of the whole result
	read func(ctx context.Context, req followgraph.PageRequest) (followgraph.SetPage, error)
	want func(m *model) []followgraph.Entry
}

// lists returns the six lists of g about a and b: the following, the
// followers and the mutuals of a, and the common following, the common
// followers and the known followers of a with b.
func lists(g followgraph.Graph, a, b followgraph.UserID) []list {
	return []list{
		followingList(g, a),
		followersList(g, a),
		mutualsList(g, a),
		commonFollowingList(g, a, b),
		commonFollowersList(g, a, b),
		knownFollowersList(g, a, b),
	}
}

// setLists returns the four set queries among lists(g, a, b).
func setLists(g followgraph.Graph, a, b followgraph.UserID) []list {
	return lists(g, a, b)[2:]
}

func followingList(g followgraph.Graph, user followgraph.UserID) list {
	return list{
		name: fmt.Sprintf("Following(%d)", user),
		read: func(ctx context.Context, req followgraph.PageRequest) (followgraph.SetPage, error) {
			return asSetPage(g.Following(ctx, user, req))
		},
		want: func(m *model) []followgraph.Entry { return m.following(user) },
	}
}

func followersList(g followgraph.Graph, user followgraph.UserID) list {
	return list{
		name: fmt.Sprintf("Followers(%d)", user),
		read: func(ctx context.Context, req followgraph.PageRequest) (followgraph.SetPage, error) {
			return asSetPage(g.Followers(ctx, user, req))
		},
		want: func(m *model) []followgraph.Entry { return m.followers(user) },
	}
}

func mutualsList(g followgraph.Graph, user followgraph.UserID) list {
	return list{
		name: fmt.Sprintf("Mutuals(%d)", user),
		set:  true,
		read: func(ctx context.Context, req followgraph.PageRequest) (followgraph.SetPage, error) {
			return g.Mutuals(ctx, user, req)
		},
		want: func(m *model) []followgraph.Entry { return m.mutuals(user) },
	}
}

func commonFollowingList(g followgraph.Graph, user, other followgraph.UserID) list {
	return list{
		name: fmt.Sprintf("CommonFollowing(%d, %d)", user, other),
		set:  true,
		read: func(ctx context.Context, req followgraph.PageRequest) (followgraph.SetPage, error) {
			return g.CommonFollowing(ctx, user, other, req)
		},
		want: func(m *model) []followgraph.Entry { return m.commonFollowing(user, other) },
	}
}

func commonFollowersList(g followgraph.Graph, user, other followgraph.UserID) list {
	return list{
		name: fmt.Sprintf("CommonFollowers(%d, %d)", user, other),
		set:  true,
		read: func(ctx context.Context, req followgraph.PageRequest) (followgraph.SetPage, error) {
			return g.CommonFollowers(ctx, user, other, req)
		},
		want: func(m *model) []followgraph.Entry { return m.commonFollowers(user, other) },
	}
}

func knownFollowersList(g followgraph.Graph, user, target followgraph.UserID) list {
	return list{
		name: fmt.Sprintf("KnownFollowers(%d, %d)", user, target),
		set:  true,
		read: func(ctx context.Context, req followgraph.PageRequest) (followgraph.SetPage, error) {
			return g.KnownFollowers(ctx, user, target, req)
		},
		want: func(m *model) []followgraph.Entry { return m.knownFollowers(user, target) },
	}
}

func asSetPage(p followgraph.Page, err error) (followgraph.SetPage, error) {
	return followgraph.SetPage{Entries: p.Entries, Next: p.Next}, err
}

// readAll reads list l page by page, limit entries a page, until Next is
// "", and returns the pages. It fails on what no change to the graph
// meanwhile can excuse: an error, a page longer than asked, a page shorter
// than asked that is not the last, an entry that does not come strictly
// after the one before it in newest-first order, or an id seen twice.
func readAll(ctx context.Context, l list, limit int) ([]followgraph.SetPage, error) {
	size := limit
	if size == 0 {
		size = followgraph.DefaultLimit
	}
	var (
		pages  []followgraph.SetPage
		last   followgraph.Entry
		seen   = make(map[followgraph.UserID]bool)
		cursor string
	)
	for n := 1; ; n++ {
		p, err := l.read(ctx, followgraph.PageRequest{Limit: limit, Cursor: cursor})
		if err != nil {
			return pages, fmt.Errorf("%s, page %d of %d entries: %w", l.name, n, limit, err)
		}
		if len(p.Entries) > size {
			return pages, fmt.Errorf("%s, page %d: %d entries, more than the limit %d", l.name, n, len(p.Entries), limit)
		}
		if p.Next != "" && len(p.Entries) < size {
			return pages, fmt.Errorf("%s, page %d: %d entries of %d and a next cursor: only the last page may be short",
				l.name, n, len(p.Entries), size)
		}
		for _, e := range p.Entries {
			if seen[e.ID] {
				return pages, fmt.Errorf("%s, page %d: %s listed twice", l.name, n, formatEntry(e))
			}
			if len(seen) > 0 && !last.Key().Before(e.Key()) {
				return pages, fmt.Errorf("%s, page %d: %s comes after %s; want newest first, ties by larger id first",
					l.name, n, formatEntry(e), formatEntry(last))
			}
			seen[e.ID] = true
			last = e
		}
		pages = append(pages, p)
		if p.Next == "" {
			return pages, nil
		}
		cursor = p.Next
	}
}

// readStatic reads list l like readAll, while the graph does not change,
// and returns its entries. So it also fails unless a set's Count is the
// same on every page and equal to the number of entries, and when a page
// other than the first is empty (the page before it was the last and
// should have had no next cursor).
func readStatic(ctx context.Context, l list, limit int) ([]followgraph.Entry, error) {
	pages, err := readAll(ctx, l, limit)
	if err != nil {
		return nil, err
	}
	var entries []followgraph.Entry
	for _, p := range pages {
		entries = append(entries, p.Entries...)
	}
	if n := len(pages); n > 1 && len(pages[n-1].Entries) == 0 {
		return nil, fmt.Errorf("%s, %d entries a page: page %d is empty, so page %d should have had no next cursor",
			l.name, limit, n, n-1)
	}
	if l.set {
		for i, p := range pages {
			if p.Count != int64(len(entries)) {
				return nil, fmt.Errorf("%s, %d entries a page: page %d has Count %d, but the pages hold %d entries",
					l.name, limit, i+1, p.Count, len(entries))
			}
		}
	}
	return entries, nil
}

// pageLimits are the page sizes the suite reads lists with: 0 is the
// default size.
var pageLimits = []int{1, 2, 3, 7, 50, 0, followgraph.MaxLimit}
