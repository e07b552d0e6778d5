package memgraph

import (
	"container/heap"
	"context"
	"slices"
	"sync"

	fg "github.com/followgraph/followgraph"
)

// Suggestions bound their work: they consider the suggestFollowees people
// a user followed most recently, and of each the suggestPerFollowee people
// they followed most recently: at most a million candidates, a few
// milliseconds. Below those bounds the scores are exact.
const (
	suggestFollowees   = 1000
	suggestPerFollowee = 1000
)

// Suggestions returns people user may want to follow, leaving out those
// user blocks, is blocked by, mutes or asked to follow; see
// followgraph.Graph and the bounds above. Each followee's list is read under its own lock,
// so the scores are of follows that existed during the call.
func (g *Graph) Suggestions(_ context.Context, user fg.UserID, limit int) ([]fg.Suggestion, error) {
	if err := fg.CheckIDs(user); err != nil {
		return nil, err
	}
	size, err := fg.CheckSuggestLimit(limit)
	if err != nil {
		return nil, err
	}
	u, ok := g.internal(user)
	if !ok {
		return []fg.Suggestion{}, nil
	}
	var via []uint32 // the followees considered, newest first
	g.rlock(u, u)
	if !g.active(u) {
		g.runlock(u, u)
		return []fg.Suggestion{}, nil
	}
	un := g.node(u)
	un.outT.descend(un.outT.end(), func(f uint32) bool {
		via = append(via, f)
		return len(via) < suggestFollowees
	})
	g.runlock(u, u)
	hint := 0 // the candidates to expect, so cands grows once
	for _, f := range via {
		hint += min(g.followingCount(f), suggestPerFollowee)
	}
	now := g.now().UnixMilli()
	sc := scratchPool.Get().(*scratch)
	defer scratchPool.Put(sc)
	cands := slices.Grow(sc.cands[:0], hint)
	for _, f := range via {
		n, fn := 0, g.node(f)
		g.rlock(f, f)
		fn.outT.descend(fn.outT.end(), func(c uint32) bool {
			cands = append(cands, c)
			n++
			return n < suggestPerFollowee
		})
		g.runlock(f, f)
	}
	sc.buf = slices.Grow(sc.buf[:0], len(cands))[:len(cands)]
	radixSort(cands, sc.buf)
	sc.cands = cands

	// The best size candidates: a min-heap whose root is the worst kept.
	best := &scoreHeap{g: g}
	for i := 0; i < len(cands); {
		c, j := cands[i], i
		for j < len(cands) && cands[j] == c {
			j++
		}
		s := scored{id: c, score: j - i}
		i = j
		if best.Len() == size && !best.better(s, best.s[0]) {
			continue
		}
		if c == u {
			continue
		}
		if g.followsOrExcludes(u, c, now) {
			continue
		}
		if best.Len() == size {
			best.s[0] = s
			heap.Fix(best, 0)
		} else {
			heap.Push(best, s)
		}
	}
	slices.SortFunc(best.s, func(a, b scored) int {
		if best.better(a, b) {
			return -1
		}
		return 1
	})
	out := make([]fg.Suggestion, len(best.s))
	for i, s := range best.s {
		out[i] = fg.Suggestion{ID: g.ext(s.id), Score: int64(s.score)}
		for _, f := range via {
			if g.follows(f, s.id) {
				out[i].Via = append(out[i].Via, g.ext(f))
				if len(out[i].Via) == 3 {
					break
				}
			}
		}
	}
	return out, nil
}

// followsOrExcludes reports whether u follows c or leaves c out of its
// suggestions at ms (see rels.excludes), under u's stripe lock.
func (g *Graph) followsOrExcludes(u, c uint32, ms int64) bool {
	g.rlock(u, u)
	defer g.runlock(u, u)
	_, ok := g.lookup(u, c)
	return ok || g.stripe(u).relsOf(u).excludes(c, ms)
}

// followingCount returns how many users u follows.
func (g *Graph) followingCount(u uint32) int {
	g.rlock(u, u)
	defer g.runlock(u, u)
	return g.node(u).out.len()
}

// follows reports whether u follows t, under u's stripe lock.
func (g *Graph) follows(u, t uint32) bool {
	g.rlock(u, u)
	_, ok := g.lookup(u, t)
	g.runlock(u, u)
	return ok
}

type scored struct {
	id    uint32
	score int
}

// scoreHeap keeps the best candidates, the worst at the root.
type scoreHeap struct {
	g *Graph
	s []scored
}

// better orders by score, highest first, then by user id, smallest first.
func (h *scoreHeap) better(a, b scored) bool {
	if a.score != b.score {
		return a.score > b.score
	}
	return h.g.ext(a.id) < h.g.ext(b.id)
}

func (h *scoreHeap) Len() int           { return len(h.s) }
func (h *scoreHeap) Less(i, j int) bool { return h.better(h.s[j], h.s[i]) }
func (h *scoreHeap) Swap(i, j int)      { h.s[i], h.s[j] = h.s[j], h.s[i] }
func (h *scoreHeap) Push(x any)         { h.s = append(h.s, x.(scored)) }
func (h *scoreHeap) Pop() any {
	x := h.s[len(h.s)-1]
	h.s = h.s[:len(h.s)-1]
	return x
}

// scratch holds a suggestion's candidates and the radix sort's buffer
// between calls: a megabyte or two each, not worth giving to the collector
// on every request.
type scratch struct{ cands, buf []uint32 }

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// radixSort sorts a in place using buf (as long as a), three passes of 11
// bits: linear time, a few nanoseconds per element, where a comparison sort
// of a million ids takes tens of milliseconds.
func radixSort(a, buf []uint32) {
	if len(a) < 256 {
		slices.Sort(a)
		return
	}
	src, dst := a, buf
	for shift := 0; shift < 33; shift += 11 {
		var count [1 << 11]int
		for _, x := range src {
			count[x>>shift&(1<<11-1)]++
		}
		sum := 0
		for i, c := range count {
			count[i] = sum
			sum += c
		}
		for _, x := range src {
			b := x >> shift & (1<<11 - 1)
			dst[count[b]] = x
			count[b]++
		}
		src, dst = dst, src
	}
	if &src[0] != &a[0] {
		copy(a, src)
	}
}
