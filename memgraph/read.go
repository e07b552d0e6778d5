package memgraph

import (
	"context"
	"slices"

	"github.com/RoaringBitmap/roaring/v2"

	fg "github.com/followgraph/followgraph"
)

// IsFollowing reports whether user follows target; see followgraph.Graph.
func (g *Graph) IsFollowing(_ context.Context, user, target fg.UserID) (fg.Edge, error) {
	if err := fg.CheckIDs(user, target); err != nil {
		return fg.Edge{}, err
	}
	u, uok := g.internal(user)
	t, tok := g.internal(target)
	if !uok || !tok {
		return fg.Edge{}, nil
	}
	su := g.stripe(u)
	su.mu.RLock()
	v, live := g.lookup(u, t)
	live = live && g.active(u)
	su.mu.RUnlock()
	if !live {
		return fg.Edge{}, nil
	}
	return fg.Edge{Following: true, Since: v.Time()}, nil
}

// Counts returns the counters of each id; see followgraph.Graph.
func (g *Graph) Counts(_ context.Context, ids []fg.UserID) ([]fg.Counts, error) {
	if err := fg.CheckIDList(ids, fg.MaxCountIDs); err != nil {
		return nil, err
	}
	out := make([]fg.Counts, len(ids))
	for i, id := range ids {
		out[i].ID = id
		if d, ok := g.internal(id); ok {
			s, n := g.stripe(d), g.node(d)
			s.mu.RLock()
			switch r := s.relsOf(d); {
			case r != nil && !r.state.Active():
				out[i].State = r.state // answers as for a user with no edges
			default:
				out[i].FollowingCount, out[i].FollowerCount = int64(n.out.len()), int64(n.in.len())
				if r != nil {
					out[i].FollowRequests = int64(r.reqIn)
				}
			}
			s.mu.RUnlock()
		}
	}
	return out, nil
}

// Following returns a page of the users that user follows.
func (g *Graph) Following(_ context.Context, user fg.UserID, req fg.PageRequest) (fg.Page, error) {
	q, err := req.Query(fg.ListFollowing, user)
	if err != nil {
		return fg.Page{}, err
	}
	u, ok := g.internal(user)
	if !ok {
		return fg.Page{}, nil
	}
	g.rlock(u, u)
	defer g.runlock(u, u)
	if !g.active(u) {
		return fg.Page{}, nil
	}
	return page(q, &g.node(u).outT, func(t uint32) fg.Key { return g.outKey(u, t) }, nil), nil
}

// Followers returns a page of the users that follow user.
func (g *Graph) Followers(_ context.Context, user fg.UserID, req fg.PageRequest) (fg.Page, error) {
	q, err := req.Query(fg.ListFollowers, user)
	if err != nil {
		return fg.Page{}, err
	}
	u, ok := g.internal(user)
	if !ok {
		return fg.Page{}, nil
	}
	g.rlock(u, u)
	defer g.runlock(u, u)
	if !g.active(u) {
		return fg.Page{}, nil
	}
	return page(q, &g.node(u).in, g.inKey, nil), nil
}

// Relations returns the relation of viewer to each id. Each direction of
// each edge is read atomically; the viewer's side, with every flag (all
// kept at the viewer), in one step.
func (g *Graph) Relations(_ context.Context, viewer fg.UserID, ids []fg.UserID) ([]fg.RelationInfo, error) {
	if err := fg.CheckIDList(ids, fg.MaxRelationIDs, viewer); err != nil {
		return nil, err
	}
	out := make([]fg.RelationInfo, len(ids))
	for i, id := range ids {
		out[i] = fg.RelationInfo{ID: id, Relation: fg.RelationNone}
		if id == viewer {
			out[i].Relation = fg.RelationSelf
		}
	}
	v, ok := g.internal(viewer)
	if !ok {
		return out, nil
	}
	xs := make([]uint32, len(ids))
	known := make([]bool, len(ids))
	for i, id := range ids {
		if id != viewer {
			xs[i], known[i] = g.internal(id)
		}
	}
	g.rlock(v, v)
	if !g.active(v) {
		g.runlock(v, v)
		return out, nil // as for a user with no edges
	}
	rv := g.stripe(v).relsOf(v)
	var now int64
	if rv != nil {
		now = g.now().UnixMilli()
	}
	for i, x := range xs {
		if known[i] {
			if fv, ok := g.lookup(v, x); ok {
				out[i].FollowingSince = fv.Time()
			}
			if rv != nil {
				rv.relationFlags(&out[i], x, now)
			}
		}
	}
	g.runlock(v, v)
	for i, x := range xs {
		if !known[i] {
			continue
		}
		g.rlock(x, x)
		bv, ok := g.lookup(x, v)
		g.runlock(x, x)
		if ok {
			out[i].FollowedBySince = bv.Time()
		}
		out[i].Relation = fg.RelationOf(!out[i].FollowingSince.IsZero(), ok)
	}
	return out, nil
}

// page returns the page of time sequence s, newest first, keeping only the
// elements that keep accepts (all when keep is nil).
func page[E any](q fg.PageQuery, s *chunks[E], key func(E) fg.Key, keep func(E) bool) fg.Page {
	from := s.end()
	if q.After != nil {
		from = s.search(func(x E) bool { return keyLess(key(x), *q.After) })
	}
	var p fg.Page
	s.descend(from, func(x E) bool {
		if keep != nil && !keep(x) {
			return true
		}
		if len(p.Entries) == q.Size {
			p.Next = fg.EncodeCursor(q.Scope, p.Entries[q.Size-1].Key())
			return false
		}
		k := key(x)
		p.Entries = append(p.Entries, fg.Entry{ID: k.ID, Since: fg.Millis(k.Millis)})
		return true
	})
	return p
}

// set is one side of an intersection: the ids of a user's following or
// followers, with a way to test membership.
type set struct {
	n   int
	bm  *roaring.Bitmap // nil when the set is small
	ids func() []uint32 // every id, any order (used when small)
	has func(uint32) bool
}

// outSet is whom u follows. The caller holds u's stripe.
func (g *Graph) outSet(u uint32) set {
	n := g.node(u)
	s := set{n: n.out.len(), bm: n.outBM(), ids: n.outIDs}
	s.has = func(t uint32) bool { _, ok := g.lookup(u, t); return ok }
	if s.bm != nil {
		s.has = s.bm.Contains
	}
	return s
}

// inSet is who follows u. The caller holds u's stripe.
func (g *Graph) inSet(u uint32) set {
	n := g.node(u)
	s := set{n: n.in.len(), bm: n.inBM(), ids: n.inIDs}
	if s.bm != nil {
		s.has = s.bm.Contains
		return s
	}
	var sorted []uint32 // made on first use
	s.has = func(f uint32) bool {
		if sorted == nil {
			sorted = n.inIDs()
			slices.Sort(sorted)
		}
		_, ok := slices.BinarySearch(sorted, f)
		return ok
	}
	return s
}

// intersect answers a set query under the caller's locks: the elements of
// time sequence seq (whose ids are the set s) whose ids are also in other,
// newest first.
//
// The exact count comes from the bitmaps when both sets are large, else
// from walking the smaller set, which is then below bitmapMin. The page
// comes from whichever is cheaper: walking seq from the cursor, testing
// each id against other (about size × |s| / count tests), or sorting the
// keys of every member. memberKey gives a member's key, if the caller can
// under its locks; if not, and seq is too long to walk whole, intersect
// returns the members as unresolved for the caller to look up.
func intersect[E any](q fg.PageQuery, seq *chunks[E], key func(E) fg.Key, id func(E) uint32, s, other set, memberKey func(uint32) fg.Key) (count int, p fg.Page, unresolved []uint32) {
	var members []uint32
	if s.bm != nil && other.bm != nil {
		count = int(s.bm.AndCardinality(other.bm))
	} else {
		small, big := s, other
		if big.n < small.n {
			small, big = big, small
		}
		for _, x := range small.ids() {
			if big.has(x) {
				members = append(members, x)
			}
		}
		count = len(members)
	}
	switch {
	case count == 0:
		return 0, fg.Page{}, nil
	case members == nil && (q.Size+1)*s.n/count <= 4*count:
		return count, page(q, seq, key, func(e E) bool { return other.has(id(e)) }), nil
	case members == nil:
		members = roaring.And(s.bm, other.bm).ToArray()
	}
	keys := make([]fg.Key, 0, len(members))
	switch {
	case memberKey != nil:
		for _, x := range members {
			keys = append(keys, memberKey(x))
		}
	case seq.len() <= 4*bitmapMin:
		slices.Sort(members)
		seq.each(func(e E) bool {
			if _, ok := slices.BinarySearch(members, id(e)); ok {
				keys = append(keys, key(e))
			}
			return true
		})
	default:
		return count, fg.Page{}, members
	}
	return count, q.PageOf(keys), nil
}

func outID(t uint32) uint32 { return t }

// Mutuals returns the users that user follows and that follow user.
func (g *Graph) Mutuals(_ context.Context, user fg.UserID, req fg.PageRequest) (fg.SetPage, error) {
	q, err := req.Query(fg.ListMutuals, user)
	if err != nil {
		return fg.SetPage{}, err
	}
	u, ok := g.internal(user)
	if !ok {
		return fg.SetPage{}, nil
	}
	g.rlock(u, u)
	defer g.runlock(u, u)
	if !g.active(u) {
		return fg.SetPage{}, nil
	}
	return g.outQuery(q, u, g.inSet(u)), nil
}

// CommonFollowing returns the users that both user and other follow.
func (g *Graph) CommonFollowing(_ context.Context, user, other fg.UserID, req fg.PageRequest) (fg.SetPage, error) {
	q, err := req.Query(fg.ListCommonFollowing, user, other)
	if err != nil {
		return fg.SetPage{}, err
	}
	u, uok := g.internal(user)
	o, ook := g.internal(other)
	if !uok || !ook {
		return fg.SetPage{}, nil
	}
	g.rlock(u, o)
	defer g.runlock(u, o)
	if !g.active(u) || !g.active(o) {
		return fg.SetPage{}, nil
	}
	return g.outQuery(q, u, g.outSet(o)), nil
}

// KnownFollowers returns the users that user follows and that follow target.
func (g *Graph) KnownFollowers(_ context.Context, user, target fg.UserID, req fg.PageRequest) (fg.SetPage, error) {
	q, err := req.Query(fg.ListKnownFollowers, user, target)
	if err != nil {
		return fg.SetPage{}, err
	}
	u, uok := g.internal(user)
	t, tok := g.internal(target)
	if !uok || !tok {
		return fg.SetPage{}, nil
	}
	g.rlock(u, t)
	defer g.runlock(u, t)
	if !g.active(u) || !g.active(t) {
		return fg.SetPage{}, nil
	}
	return g.outQuery(q, u, g.inSet(t)), nil
}

// outQuery is a set query over whom u follows: the since is when u
// followed. The caller holds the stripes of u and of other's owner.
func (g *Graph) outQuery(q fg.PageQuery, u uint32, other set) fg.SetPage {
	key := func(t uint32) fg.Key { return g.outKey(u, t) }
	count, p, _ := intersect(q, &g.node(u).outT, key, outID, g.outSet(u), other, key)
	return fg.SetPage{Count: int64(count), Entries: p.Entries, Next: p.Next}
}

// CommonFollowers returns the users that follow both user and other. When
// the page must be built from few members of a long followers list, their
// follow times are read from each member after the two users' locks are
// released: each is then the time of a follow that existed at that moment.
func (g *Graph) CommonFollowers(_ context.Context, user, other fg.UserID, req fg.PageRequest) (fg.SetPage, error) {
	q, err := req.Query(fg.ListCommonFollowers, user, other)
	if err != nil {
		return fg.SetPage{}, err
	}
	u, uok := g.internal(user)
	o, ook := g.internal(other)
	if !uok || !ook {
		return fg.SetPage{}, nil
	}
	g.rlock(u, o)
	if !g.active(u) || !g.active(o) {
		g.runlock(u, o)
		return fg.SetPage{}, nil
	}
	count, p, unresolved := intersect(q, &g.node(u).in, g.inKey, inEdge.id, g.inSet(u), g.inSet(o), nil)
	g.runlock(u, o)
	if unresolved != nil {
		keys := make([]fg.Key, 0, len(unresolved))
		for _, f := range unresolved {
			g.rlock(f, f)
			v, ok := g.lookup(f, u)
			g.runlock(f, f)
			if ok {
				keys = append(keys, fg.Key{Millis: v.Millis(), ID: g.ext(f)})
			}
		}
		p = q.PageOf(keys)
	}
	return fg.SetPage{Count: int64(count), Entries: p.Entries, Next: p.Next}, nil
}
