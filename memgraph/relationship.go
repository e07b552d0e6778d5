package memgraph

import (
	"container/heap"
	"context"
	"time"

	fg "github.com/followgraph/followgraph"
)

// Blocks, mutes, follow requests and the private setting are rare next to
// follows, so they add nothing to a follow edge or a node: a user who has
// any has a *rels in its stripe's rels map (nil while the stripe has
// none), with one pair for each other user it has such an edge with,
// either way. Each edge is kept at the user it goes out of, with its
// version; off edges stay as tombstones. What the other end needs to
// answer without a second lock (that x blocks it, that x asks to follow
// it) is kept in the other end's pair, in the same change, under both
// stripes' locks. So a read about the pair (a follow's check, a relation's
// flags, a suggestion's exclusion) is one map lookup at one end.
type rels struct {
	with    map[uint32]*pair
	reqIn   int // pending requests to this user
	reqOut  int // this user's pending requests
	private bool
	privV   fg.Version // the version of the setting's last change

	state     fg.State   // the account state (state.go)…
	stateV    fg.Version // …and the version of its last change
	arch      []archRef  // hidden edges this user's job restores…
	restoring int        // …and those taken from arch by a step not done
}

// pair is what a user's rels hold about one other user x.
type pair struct {
	out         [3]link // by linkIndex: the user's block, mute and request of x, on or off
	blockedBy   bool    // x blocks the user
	requestedBy bool    // x has a pending request to the user (since reqSince)
	mutedBy     bool    // x mutes the user (for the user's job to find)
	reqSince    int64   // ms
}

// link is one edge of a kind other than follow, on or off at version v.
type link struct {
	v       fg.Version
	since   int64 // ms: when the edge was made (a mute's may precede v)
	expires int64 // ms: a mute's expiry; 0: none
	on      bool
	hidden  bool // off because an end is not active: hidden (state.go)
}

// linkIndex is the index in pair.out of kind k (block, mute or request).
func linkIndex(k fg.Kind) int { return int(k) - int(fg.KindBlock) }

// approveChunk is how many pending requests SetPrivate(false) approves
// between two looks at what is left.
const approveChunk = 256

// relsOf returns the rels of internal id d, nil if it has none. The caller
// holds the stripe.
func (s *stripe) relsOf(d uint32) *rels { return s.rels[d] }

// relsFor returns the rels of internal id d, making them. The caller holds
// the stripe for writing.
func (s *stripe) relsFor(d uint32) *rels {
	r := s.rels[d]
	if r == nil {
		if s.rels == nil {
			s.rels = make(map[uint32]*rels)
		}
		r = new(rels)
		s.rels[d] = r
	}
	return r
}

// pair returns what r holds about x; nil when nothing.
func (r *rels) pair(x uint32) *pair {
	if r == nil {
		return nil
	}
	return r.with[x]
}

// pairFor returns what r holds about x, making it.
func (r *rels) pairFor(x uint32) *pair {
	p := r.with[x]
	if p == nil {
		if r.with == nil {
			r.with = make(map[uint32]*pair)
		}
		p = new(pair)
		r.with[x] = p
	}
	return p
}

// link returns the edge of kind k to t; the zero link when there is none.
func (r *rels) link(k fg.Kind, t uint32) link { return r.pair(t).link(k) }

func (p *pair) link(k fg.Kind) link {
	if p == nil {
		return link{}
	}
	return p.out[linkIndex(k)]
}

// muting reports whether the user mutes x at ms, and the mute.
func (p *pair) muting(ms int64) (link, bool) {
	l := p.link(fg.KindMute)
	return l, l.on && l.live(ms)
}

// live reports whether a mute has not expired at ms.
func (l link) live(ms int64) bool { return l.expires == 0 || ms < l.expires }

// checkWrite returns the error of a block or mute by u of t when either
// state refuses it: u not active, or t deleted. The caller holds both
// stripes.
func (g *Graph) checkWrite(u, t uint32) error {
	if !g.active(u) {
		return fg.ErrUserInactive
	}
	if g.stateOf(t) == fg.StateDeleted {
		return fg.ErrTargetInactive
	}
	return nil
}

// muting reports whether r's user mutes t at ms, and the mute.
func (r *rels) muting(t uint32, ms int64) (link, bool) { return r.pair(t).muting(ms) }

// blocksEither reports whether r's user blocks t or is blocked by t.
func (r *rels) blocksEither(t uint32) bool {
	p := r.pair(t)
	return p != nil && (p.blockedBy || p.out[linkIndex(fg.KindBlock)].on)
}

func (r *rels) isPrivate() bool { return r != nil && r.private }

func (r *rels) requestsOut() int {
	if r == nil {
		return 0
	}
	return r.reqOut
}

func (r *rels) setPrivate(on bool, v fg.Version) {
	if v > r.privV {
		r.private, r.privV = on, v
	}
}

// setLink sets the edge of kind k from a to b on or off at e's version
// unless it has a version of e's or higher, and keeps the indexes at b.
// The caller holds the stripes of a and b.
//
// A request has no tombstone of a follow's: a follow (an approval) or an
// unfollow ends the request of its direction only when there is one.
// Instead a request is turned on only above the follow edge's own
// version too, so one older than a follow or unfollow that arrives after
// it stays off.
func (g *Graph) setLink(k fg.Kind, a, b uint32, on bool, e fg.Event) {
	sa, sb := g.stripe(a), g.stripe(b)
	ra := sa.relsOf(a)
	cur := ra.link(k, b)
	if e.Version <= cur.v {
		return
	}
	if k == fg.KindRequest {
		if on && e.Version <= g.followVersion(a, b) {
			return
		}
		if !on && e.Op.Kind() == fg.KindFollow && cur.v == 0 {
			return
		}
	}
	if ra == nil {
		ra = sa.relsFor(a)
	}
	l := link{v: e.Version, on: on}
	if on {
		l.since = e.Version.Millis()
		if k == fg.KindMute {
			l.since, l.expires = e.Since.UnixMilli(), msOf(e.Expires)
		}
	}
	ra.pairFor(b).out[linkIndex(k)] = l
	if cur.on == on && !(on && k == fg.KindRequest) {
		return // the other end stands; a request's since is refreshed below
	}
	switch k {
	case fg.KindBlock:
		sb.relsFor(b).pairFor(a).blockedBy = on
	case fg.KindMute:
		sb.relsFor(b).pairFor(a).mutedBy = on
	case fg.KindRequest:
		rb := sb.relsFor(b)
		pb := rb.pairFor(a)
		pb.requestedBy, pb.reqSince = on, l.since
		if on != cur.on {
			d := 1
			if !on {
				d = -1
			}
			ra.reqOut += d
			rb.reqIn += d
		}
	}
}

// msOf returns t in ms, 0 for the zero time.
func msOf(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// timeOf returns the time of ms, the zero time for 0.
func timeOf(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return fg.Millis(ms)
}

// Block makes user block target, ending the follows and requests between
// them in the same change; see followgraph.Graph.
func (g *Graph) Block(ctx context.Context, user, target fg.UserID) (fg.LinkResult, error) {
	if err := fg.CheckLinkIDs(user, target); err != nil {
		return fg.LinkResult{}, err
	}
	u, t := g.intern(user), g.intern(target)
	w, err := g.change(ctx, u, t, true, func() (write, error) {
		if err := g.checkWrite(u, t); err != nil {
			return write{}, err
		}
		if l := g.stripe(u).relsOf(u).link(fg.KindBlock, t); l.on || l.hidden {
			return write{since: l.since}, nil
		}
		e := fg.NewEvent(user, target, fg.OpBlock, g.tick())
		return write{e: e, since: e.Version.Millis()}, nil
	})
	return fg.LinkResult{Created: w.e.Op != 0, Since: timeOf(w.since)}, err
}

// Unblock ends user's block of target; see followgraph.Graph.
func (g *Graph) Unblock(ctx context.Context, user, target fg.UserID) (bool, error) {
	return g.setOff(ctx, user, target, fg.KindBlock)
}

// Unmute ends user's mute of target; see followgraph.Graph.
func (g *Graph) Unmute(ctx context.Context, user, target fg.UserID) (bool, error) {
	return g.setOff(ctx, user, target, fg.KindMute)
}

// setOff turns off user's edge of kind k (block or mute) to target, if
// it is on (a mute: not expired), and reports whether it was.
func (g *Graph) setOff(ctx context.Context, user, target fg.UserID, k fg.Kind) (bool, error) {
	if err := fg.CheckLinkIDs(user, target); err != nil {
		return false, err
	}
	u, uok := g.internal(user)
	t, tok := g.internal(target)
	if !uok || !tok {
		return false, g.checkActive(user)
	}
	w, err := g.change(ctx, u, t, false, func() (write, error) {
		if !g.active(u) {
			return write{}, fg.ErrUserInactive
		}
		l := g.stripe(u).relsOf(u).link(k, t)
		on := l.on || l.hidden
		if k == fg.KindMute {
			on = on && l.live(g.now().UnixMilli())
		}
		if !on {
			return write{}, nil
		}
		return write{e: fg.NewEvent(user, target, fg.OpOf(k, false), g.tick())}, nil
	})
	return w.e.Op != 0, err
}

// Mute makes user mute target for d (0: until unmuted); see
// followgraph.Graph. A repeated mute with the expiry it has already
// changes nothing and makes no event.
func (g *Graph) Mute(ctx context.Context, user, target fg.UserID, d time.Duration) (fg.LinkResult, error) {
	if err := fg.CheckLinkIDs(user, target); err != nil {
		return fg.LinkResult{}, err
	}
	if err := fg.CheckMute(d); err != nil {
		return fg.LinkResult{}, err
	}
	u, t := g.intern(user), g.intern(target)
	var renewed bool // a mute was on: a new expiry, not a new mute
	w, err := g.change(ctx, u, t, false, func() (write, error) {
		if err := g.checkWrite(u, t); err != nil {
			return write{}, err
		}
		old := g.stripe(u).relsOf(u).link(fg.KindMute, t)
		active := (old.on || old.hidden) && old.live(g.now().UnixMilli())
		renewed = active
		v := g.tick()
		w := write{since: v.Millis()}
		if active {
			w.since = old.since
		}
		if d > 0 {
			w.expires = fg.Millis(v.Millis()).Add(d).UnixMilli()
		}
		if active && w.expires == old.expires {
			return w, nil
		}
		w.e = fg.NewEvent(user, target, fg.OpMute, v)
		w.e.Since, w.e.Expires = fg.Millis(w.since), timeOf(w.expires)
		return w, nil
	})
	return fg.LinkResult{Created: !renewed, Since: timeOf(w.since), Expires: timeOf(w.expires)}, err
}

// Link reports the edge of kind from user to target; see followgraph.Graph.
func (g *Graph) Link(_ context.Context, kind fg.Kind, user, target fg.UserID) (fg.Link, error) {
	if err := checkLinkKind(kind); err != nil {
		return fg.Link{}, err
	}
	if err := fg.CheckIDs(user, target); err != nil {
		return fg.Link{}, err
	}
	u, uok := g.internal(user)
	t, tok := g.internal(target)
	if !uok || !tok {
		return fg.Link{}, nil
	}
	g.rlock(u, u)
	ru := g.stripe(u).relsOf(u)
	l := ru.link(kind, t)
	if kind == fg.KindMute {
		l, l.on = ru.muting(t, g.now().UnixMilli())
	}
	l.on = l.on && g.active(u)
	g.runlock(u, u)
	if !l.on {
		return fg.Link{}, nil
	}
	return fg.Link{On: true, Since: fg.Millis(l.since), Expires: timeOf(l.expires)}, nil
}

func checkLinkKind(k fg.Kind) error {
	if !k.Info().Link {
		return fg.Errorf(fg.EInvalidArgument, "no link of kind %s: it is one of %v", k, fg.LinkKinds())
	}
	return nil
}

// Links returns a page of the blocks, the mutes or the pending follow
// requests of user; see followgraph.Graph. Each page looks at the whole
// list and keeps the first entries after the cursor (docs/design/memgraph.md says
// why).
func (g *Graph) Links(_ context.Context, list string, user fg.UserID, req fg.PageRequest) (fg.Page, error) {
	switch list {
	case fg.ListBlocks, fg.ListMutes, fg.ListFollowRequests:
	default:
		return fg.Page{}, fg.Errorf(fg.EInvalidArgument, "no list %q: it is %s, %s or %s", list, fg.ListBlocks, fg.ListMutes, fg.ListFollowRequests)
	}
	q, err := req.Query(list, user)
	if err != nil {
		return fg.Page{}, err
	}
	u, ok := g.internal(user)
	if !ok {
		return fg.Page{}, nil
	}
	first := firstKeys{after: q.After, n: q.Size + 1}
	g.rlock(u, u)
	if ru := g.stripe(u).relsOf(u); ru != nil && ru.state.Active() {
		now := g.now().UnixMilli()
		for x, p := range ru.with {
			ms, ok := int64(0), false
			switch list {
			case fg.ListBlocks:
				ms, ok = p.out[linkIndex(fg.KindBlock)].since, p.out[linkIndex(fg.KindBlock)].on
			case fg.ListMutes:
				var l link
				l, ok = p.muting(now)
				ms = l.since
			case fg.ListFollowRequests:
				ms, ok = p.reqSince, p.requestedBy
			}
			if ok {
				first.add(fg.Key{Millis: ms, ID: g.ext(x)})
			}
		}
	}
	g.runlock(u, u)
	return q.PageOf(first.h), nil
}

// firstKeys keeps the n keys that come first in list order (newest
// first) of those after the cursor key after (nil: all): a heap whose root
// is the last kept, so a list of m entries costs O(m log n), not a sort.
type firstKeys struct {
	after *fg.Key
	n     int
	h     keyHeap
}

func (f *firstKeys) add(k fg.Key) {
	switch {
	case f.after != nil && !f.after.Before(k):
	case len(f.h) < f.n:
		heap.Push(&f.h, k)
	case k.Compare(f.h[0]) < 0:
		f.h[0] = k
		heap.Fix(&f.h, 0)
	}
}

// keyHeap is a heap of keys, the last in list order at the root.
type keyHeap []fg.Key

func (h keyHeap) Len() int           { return len(h) }
func (h keyHeap) Less(i, j int) bool { return h[i].Compare(h[j]) > 0 }
func (h keyHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *keyHeap) Push(x any)        { *h = append(*h, x.(fg.Key)) }
func (h *keyHeap) Pop() any {
	x := (*h)[len(*h)-1]
	*h = (*h)[:len(*h)-1]
	return x
}

// Approve approves requester's pending request to user; see
// followgraph.Graph.
func (g *Graph) Approve(ctx context.Context, user, requester fg.UserID) (fg.FollowResult, error) {
	if err := fg.CheckLinkIDs(user, requester); err != nil {
		return fg.FollowResult{}, err
	}
	r, rok := g.internal(requester)
	u, uok := g.internal(user)
	if !rok || !uok {
		if err := g.checkActive(user); err != nil {
			return fg.FollowResult{}, err
		}
		return fg.FollowResult{}, errNoRequest(requester, user)
	}
	w, err := g.change(ctx, r, u, false, func() (write, error) {
		if !g.active(u) {
			return write{}, fg.ErrUserInactive
		}
		at, cur, live := g.find(r, u)
		w := write{hint: found{at: at, v: cur, live: live, ok: true}}
		l := g.stripe(r).relsOf(r).link(fg.KindRequest, u)
		switch {
		case live:
			w.since = cur.Millis()
		case g.hidden(fg.KindFollow, r, u): // hidden (state.go): followed as stored
			w.since = (g.stripe(r).tombs[edge{r, u}] &^ hiddenBit).Millis()
		case l.on || l.hidden:
			w.e = fg.NewEvent(requester, user, fg.OpFollow, g.tick())
			w.since = w.e.Version.Millis()
		default:
			return write{}, errNoRequest(requester, user)
		}
		if w.e.Op == 0 && l.on {
			// Followed, and asked to follow too: a request made in one
			// region while the other approved an earlier one (Mend).
			// The request ends; the follow stays as it is.
			w.e = fg.NewEvent(requester, user, fg.OpUnrequest, g.tick())
		}
		return w, nil
	})
	return w.followResult(), err
}

func errNoRequest(requester, user fg.UserID) error {
	return fg.Errorf(fg.ENoRequest, "%d has no pending follow request to %d", requester, user)
}

// RemoveFollower ends follower's follow of user, or rejects its request;
// see followgraph.Graph. It is Unfollow seen from the other end.
func (g *Graph) RemoveFollower(ctx context.Context, user, follower fg.UserID) (bool, error) {
	return g.unfollow(ctx, follower, user, user)
}

// Settings returns user's settings; see followgraph.Graph.
func (g *Graph) Settings(_ context.Context, user fg.UserID) (fg.Settings, error) {
	if err := fg.CheckIDs(user); err != nil {
		return fg.Settings{}, err
	}
	st := fg.Settings{ID: user}
	if u, ok := g.internal(user); ok {
		g.rlock(u, u)
		st.Private = g.stripe(u).relsOf(u).isPrivate()
		g.runlock(u, u)
	}
	return st, nil
}

// SetPrivate sets whether user's account is private; see
// followgraph.Graph. Turning it off approves the pending requests in the
// call, approveChunk at a time, each an OpFollow event through the hook as
// Approve makes; it stops at the first error, leaving the rest pending,
// and at once if the account is made private again meanwhile.
func (g *Graph) SetPrivate(ctx context.Context, user fg.UserID, private bool) (fg.Settings, error) {
	if err := fg.CheckIDs(user); err != nil {
		return fg.Settings{}, err
	}
	u := g.intern(user)
	_, err := g.change(ctx, u, u, false, func() (write, error) {
		if !g.active(u) {
			return write{}, fg.ErrUserInactive
		}
		if g.stripe(u).relsOf(u).isPrivate() == private {
			return write{}, nil
		}
		return write{e: fg.NewEvent(user, 0, fg.OpOf(fg.KindPrivate, private), g.tick())}, nil
	})
	if err != nil {
		return fg.Settings{}, err
	}
	if !private {
		if err := g.approveAll(ctx, user, u); err != nil {
			return fg.Settings{}, err
		}
	}
	return fg.Settings{ID: user, Private: private}, nil
}

// approveAll approves the pending requests to user (internal id u) while
// its account is public.
func (g *Graph) approveAll(ctx context.Context, user fg.UserID, u uint32) error {
	chunk := make([]fg.UserID, 0, approveChunk)
	for {
		chunk = chunk[:0]
		g.rlock(u, u)
		if ru := g.stripe(u).relsOf(u); ru != nil && !ru.private {
			for r, p := range ru.with {
				if !p.requestedBy {
					continue
				}
				if chunk = append(chunk, g.ext(r)); len(chunk) == approveChunk {
					break
				}
			}
		}
		g.runlock(u, u)
		if len(chunk) == 0 {
			return nil
		}
		for _, r := range chunk {
			if _, err := g.Approve(ctx, user, r); err != nil && fg.ErrorCode(err) != fg.ENoRequest {
				return err
			}
		}
	}
}

// relationFlags sets the flags of info, about x, from the viewer's rels at
// ms. The caller holds the viewer's stripe.
func (r *rels) relationFlags(info *fg.RelationInfo, x uint32, ms int64) {
	p := r.pair(x)
	if p == nil {
		return
	}
	_, info.Muting = p.muting(ms)
	info.Blocking, info.BlockedBy = p.out[linkIndex(fg.KindBlock)].on, p.blockedBy
	info.Requested, info.RequestedBy = p.out[linkIndex(fg.KindRequest)].on, p.requestedBy
}

// excludes reports whether suggestions for r's user leave out c at ms.
func (r *rels) excludes(c uint32, ms int64) bool {
	p := r.pair(c)
	if p == nil {
		return false
	}
	_, muting := p.muting(ms)
	return muting || p.blockedBy || p.out[linkIndex(fg.KindBlock)].on || p.out[linkIndex(fg.KindRequest)].on
}
