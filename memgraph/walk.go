package memgraph

import (
	"iter"

	fg "github.com/followgraph/followgraph"
)

// Walking the graph: every user, and each side of each user's edges with
// their versions, tombstones included. The API's reads show live edges
// and follow times only; an operator command that writes the graph into
// another engine, or compares one with it (redisgraph's Rebuild and
// Reconcile), needs the versions and the tombstones too, since those are
// what make later changes of an edge converge.
//
// A walk takes each lock for one chunk at a time and yields with no lock
// held, so the caller may do anything meanwhile, this graph's writes
// included. On a graph that does not change, as one loaded to be the
// expected copy, it yields every edge exactly once. On one that changes
// meanwhile, each edge present throughout is yielded once, in a state it
// had at some time during the walk; an edge changed meanwhile may be
// missed or yielded again.
//
// Tombstones live in a map per lock stripe keyed by edge, which nothing
// else needs to iterate. A walk therefore collects their keys once into a
// tombstone index (tombIndex: 8 bytes a tombstone plus 8 a user), kept
// until a new tombstone makes it stale; a live write's only cost is an
// atomic load when an unfollow adds a tombstone.

// Users yields every user with any edge, live or tombstone, of any kind,
// or a setting, once, in the order they first appeared.
func (g *Graph) Users() iter.Seq[fg.UserID] {
	return func(yield func(fg.UserID) bool) {
		tombs := g.tombstones()
		n := g.users.Load()
		for d := range n {
			s, nd := g.stripe(d), g.node(d)
			s.mu.RLock()
			live := nd.out.len() > 0 || nd.in.len() > 0 || s.relsOf(d) != nil
			s.mu.RUnlock()
			if (live || len(tombs.outOf(d)) > 0 || len(tombs.inOf(d)) > 0) && !yield(nd.ext) {
				return
			}
		}
	}
}

// OutEdges yields the edges user → x of user's following side, each once,
// as the event of its last change: OpFollow for a live edge, OpUnfollow
// for an unfollowed one (its tombstone), with the edge's version. Live
// edges come first, then tombstones, each in no particular order. An
// unknown user has none.
func (g *Graph) OutEdges(user fg.UserID) iter.Seq[fg.Event] {
	return func(yield func(fg.Event) bool) {
		u, ok := g.internal(user)
		if !ok {
			return
		}
		s := g.stripe(u)
		buf := make([]outEdge, 0, chunkMax)
		for after, first := uint32(0), true; ; first = false {
			s.mu.RLock()
			out := &g.node(u).out
			p := out.search(func(e outEdge) bool { return !first && e.id <= after })
			buf = out.appendFrom(buf[:0], p, chunkMax)
			s.mu.RUnlock()
			for _, e := range buf {
				if !yield(fg.NewEvent(user, g.ext(e.id), fg.OpFollow, e.version())) {
					return
				}
			}
			if len(buf) < chunkMax {
				break
			}
			after = buf[len(buf)-1].id
		}
		g.yieldTombs(g.tombstones().outOf(u), func(t uint32) edge { return edge{u, t} }, yield)
	}
}

// LinkEvents yields the edges of the other kinds (blocks, mutes, follow
// requests) that go out of user, each once, as the event of its last
// change (an off edge as its tombstone's OpUnblock, OpUnmute or
// OpUnrequest), then its private setting as an OpPrivate or OpPublic
// event if it was ever set; in no particular order. With OutEdges they
// are every event that rebuilds user's side of the graph.
func (g *Graph) LinkEvents(user fg.UserID) iter.Seq[fg.Event] {
	return func(yield func(fg.Event) bool) {
		u, ok := g.internal(user)
		if !ok {
			return
		}
		var events []fg.Event
		s := g.stripe(u)
		s.mu.RLock()
		if r := s.relsOf(u); r != nil {
			for x, p := range r.with {
				for i, l := range p.out {
					if l.v == 0 {
						continue
					}
					k := fg.Kind(i + int(fg.KindBlock))
					on := l.on || l.hidden // a hidden edge is stored
					e := fg.NewEvent(user, g.ext(x), fg.OpOf(k, on), l.v)
					if k == fg.KindMute && on {
						e.Since, e.Expires = fg.Millis(l.since), timeOf(l.expires)
					}
					events = append(events, e)
				}
			}
			if r.privV != 0 {
				events = append(events, fg.NewEvent(user, 0, fg.OpOf(fg.KindPrivate, r.private), r.privV))
			}
			if r.stateV != 0 {
				events = append(events, fg.NewStateEvent(user, r.state, r.stateV))
			}
		}
		s.mu.RUnlock()
		for _, e := range events {
			if !yield(e) {
				return
			}
		}
	}
}

// InEdges yields the edges x → user of user's followers side, each once,
// as OutEdges does: live edges first (oldest first), then tombstones. The
// followers list holds follow times only; each version is read from the
// follower's record.
func (g *Graph) InEdges(user fg.UserID) iter.Seq[fg.Event] {
	return func(yield func(fg.Event) bool) {
		t, ok := g.internal(user)
		if !ok {
			return
		}
		s := g.stripe(t)
		buf := make([]inEdge, 0, chunkMax)
		var after *fg.Key
		for {
			s.mu.RLock()
			in := &g.node(t).in
			p := pos{}
			if after != nil {
				k := *after
				p = in.search(func(e inEdge) bool { return !keyLess(k, g.inKey(e)) }) // the first after k
			}
			buf = in.appendFrom(buf[:0], p, chunkMax)
			s.mu.RUnlock()
			for _, e := range buf {
				x := e.id()
				sx := g.stripe(x)
				sx.mu.RLock()
				v, live := g.lookup(x, t)
				sx.mu.RUnlock()
				if live && !yield(fg.NewEvent(g.ext(x), user, fg.OpFollow, v)) {
					return
				}
				// Not live: unfollowed since the chunk was read.
			}
			if len(buf) < chunkMax {
				break
			}
			k := g.inKey(buf[len(buf)-1])
			after = &k
		}
		g.yieldTombs(g.tombstones().inOf(t), func(x uint32) edge { return edge{x, t} }, yield)
	}
}

// yieldTombs yields the tombstones of the edges edgeOf(x) for each x in
// xs, as OpUnfollow events, reading each from its follower's stripe (an
// index entry whose edge has been followed again since is skipped).
func (g *Graph) yieldTombs(xs []uint32, edgeOf func(uint32) edge, yield func(fg.Event) bool) {
	for _, x := range xs {
		k := edgeOf(x)
		s := g.stripe(k.user)
		s.mu.RLock()
		v, ok := s.tombs[k]
		s.mu.RUnlock()
		op := fg.OpUnfollow
		if v&hiddenBit != 0 {
			op, v = fg.OpFollow, v&^hiddenBit // hidden: stored, not shown
		}
		if ok && !yield(fg.NewEvent(g.ext(k.user), g.ext(k.target), op, v)) {
			return
		}
	}
}

// tombIndex lists, by internal id, the other ends of the edges with a
// tombstone, both ways: out for the followers' side, in for the
// followees'. Index i's entries are to[start[i]:start[i+1]]. An entry
// names an edge that had a tombstone when the index was built; walks read
// the version from the stripe, where the edge may have been followed again.
type tombIndex struct {
	building          bool // a placeholder while an index is being built
	outStart, inStart []uint32
	outTo, inFrom     []uint32
}

func (x *tombIndex) outOf(d uint32) []uint32 { return csr(x.outStart, x.outTo, d) }
func (x *tombIndex) inOf(d uint32) []uint32  { return csr(x.inStart, x.inFrom, d) }

func csr(start, to []uint32, d uint32) []uint32 {
	if int(d)+1 >= len(start) {
		return nil
	}
	return to[start[d]:start[d+1]]
}

// tombstones returns the tombstone index, building it unless the one kept
// is current.
//
// A new tombstone drops the index kept (staleTombs). A build first puts a
// placeholder of its own in place, then reads every stripe, and keeps its
// index only if the placeholder is still there: a tombstone added in a
// stripe after the build read it has replaced the placeholder with nil,
// since the build's store happened before its read of that stripe, which
// happened before the write that added the tombstone.
func (g *Graph) tombstones() *tombIndex {
	if x := g.tombIdx.Load(); x != nil && !x.building {
		return x
	}
	placeholder := &tombIndex{building: true}
	g.tombIdx.Store(placeholder)
	var all []edge
	for i := range g.stripes {
		s := &g.stripes[i]
		s.mu.RLock()
		for k := range s.tombs {
			all = append(all, k)
		}
		s.mu.RUnlock()
	}
	n := g.users.Load() // above every id in all: ids are assigned before their edges exist
	x := &tombIndex{outStart: make([]uint32, n+1), inStart: make([]uint32, n+1),
		outTo: make([]uint32, len(all)), inFrom: make([]uint32, len(all))}
	for _, k := range all {
		x.outStart[k.user+1]++
		x.inStart[k.target+1]++
	}
	for i := range n {
		x.outStart[i+1] += x.outStart[i]
		x.inStart[i+1] += x.inStart[i]
	}
	outNext, inNext := append([]uint32(nil), x.outStart[:n]...), append([]uint32(nil), x.inStart[:n]...)
	for _, k := range all {
		x.outTo[outNext[k.user]] = k.target
		outNext[k.user]++
		x.inFrom[inNext[k.target]] = k.user
		inNext[k.target]++
	}
	g.tombIdx.CompareAndSwap(placeholder, x)
	return x
}

// staleTombs drops the tombstone index, if any: a tombstone was added.
// The caller holds the stripe of the edge's follower.
func (g *Graph) staleTombs() {
	if g.tombIdx.Load() != nil {
		g.tombIdx.Store(nil)
	}
}

// appendFrom appends to dst up to n elements from position p on, in order.
func (s *chunks[E]) appendFrom(dst []E, p pos, n int) []E {
	for c, i := p.c, p.i; c < s.count() && n > 0; c, i = c+1, 0 {
		ch := s.chunk(c)[i:]
		ch = ch[:min(len(ch), n)]
		dst = append(dst, ch...)
		n -= len(ch)
	}
	return dst
}
