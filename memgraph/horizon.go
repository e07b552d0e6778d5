package memgraph

import (
	"context"
	"sync"
	"sync/atomic"

	fg "github.com/followgraph/followgraph"
)

var _ fg.TombstonePurger = (*Graph)(nil)

// The tombstone horizon (followgraph.TombstonePurger): every tombstone of
// an edge between two users with a version below it may be gone. Kept in
// memory: at start the graph is loaded from the durable store, whose
// horizon the loader gives it (RaiseTombstoneHorizon, in recovery.Load),
// and holds no tombstone the store has not.
//
// What goes: a follow's tombstone (its stripe's tombs entry, unless it is
// an archived follow, hiddenBit), a block's, mute's or request's that is
// off and not hidden (its link, zeroed), a pair left with nothing, and a
// user's rels left with nothing. A user's private setting and account
// state are not edges: one per user, never removed, and so never refused.
type purging struct {
	horizon atomic.Uint64 // only grows
	mu      sync.Mutex    // one purge at a time
	next    int           // the stripe the next purge step starts at
}

// horizon returns the tombstone horizon.
func (g *Graph) horizon() fg.Version { return fg.Version(g.purging.horizon.Load()) }

// TombstoneHorizon returns the graph's tombstone horizon: 0 until the
// first PurgeTombstones. It never fails.
func (g *Graph) TombstoneHorizon(context.Context) (fg.Version, error) { return g.horizon(), nil }

// PurgeTombstones removes at most limit tombstones older than below, and
// raises the tombstone horizon to just above each before it removes it;
// see followgraph.TombstonePurger. A step goes through the lock stripes in
// turn from where the last one stopped, holding one stripe's lock at a
// time, and the next step goes on from there; more is false once a pass
// has reached the last stripe. Within a stripe the tombstones go in no
// order. A stripe whose map of tombstones has lost half of the most it
// held is copied into a map of its size (Go maps do not shrink), so the
// memory goes too. A limit below 1 is EInvalidArgument; it fails
// otherwise only when ctx ends, after the removals so far.
func (g *Graph) PurgeTombstones(ctx context.Context, below fg.Version, limit int) (removed int, more bool, err error) {
	if limit < 1 {
		return 0, false, fg.Errorf(fg.EInvalidArgument, "memgraph: purge tombstones: limit %d is below 1", limit)
	}
	p := &g.purging
	p.mu.Lock()
	defer p.mu.Unlock()
	defer func() {
		if removed > 0 {
			g.staleTombs() // the walks' index names tombstones gone
		}
	}()
	for p.next < stripeCount && removed < limit {
		if err := ctx.Err(); err != nil {
			return removed, true, err
		}
		s := &g.stripes[p.next]
		s.mu.Lock()
		n, done := s.purge(below, limit-removed, g.raise)
		s.mu.Unlock()
		removed += n
		if done {
			p.next++
		}
	}
	if p.next < stripeCount {
		return removed, true, nil
	}
	p.next = 0
	return removed, false, nil
}

// RaiseTombstoneHorizon raises the tombstone horizon to h; see
// followgraph.TombstonePurger. It never fails.
func (g *Graph) RaiseTombstoneHorizon(_ context.Context, h fg.Version) error {
	g.raise(h)
	return nil
}

// raise raises the tombstone horizon to h.
func (g *Graph) raise(h fg.Version) {
	for {
		cur := g.purging.horizon.Load()
		if uint64(h) <= cur || g.purging.horizon.CompareAndSwap(cur, uint64(h)) {
			return
		}
	}
}

// purge removes up to max tombstones older than below from the stripe,
// calling raise with just above each before it goes, and reports whether
// it removed all of them. The caller holds the stripe.
func (s *stripe) purge(below fg.Version, max int, raise func(fg.Version)) (n int, done bool) {
	defer s.shrinkTombs()
	for k, v := range s.tombs {
		if v < below { // neither an archived follow (hiddenBit) nor a newer one
			if n == max {
				return n, false
			}
			raise(v + 1)
			delete(s.tombs, k)
			n++
		}
	}
	for d, r := range s.rels {
		for x, p := range r.with {
			for i := range p.out {
				if l := &p.out[i]; !l.on && !l.hidden && l.v != 0 && l.v < below {
					if n == max {
						return n, false
					}
					raise(l.v + 1)
					*l = link{}
					n++
				}
			}
			if p.empty() {
				delete(r.with, x)
			}
		}
		if r.empty() {
			delete(s.rels, d)
		}
	}
	if len(s.rels) == 0 {
		s.rels = nil
	}
	return n, true
}

// shrinkTombs copies the stripe's tombstones into a map of their size
// once it holds half of the most it held or less: a Go map keeps the
// room of the most it ever held.
func (s *stripe) shrinkTombs() {
	switch n := len(s.tombs); {
	case n == 0:
		s.tombs, s.tombPeak = nil, 0
	case 2*n <= int(s.tombPeak):
		m := make(map[edge]fg.Version, n)
		for k, v := range s.tombs {
			m[k] = v
		}
		s.tombs, s.tombPeak = m, int32(n)
	}
}

// empty reports whether the pair holds nothing: no edge on, off or
// hidden either way.
func (p *pair) empty() bool {
	return p.out == [3]link{} && !p.blockedBy && !p.requestedBy && !p.mutedBy
}

// empty reports whether the rels hold nothing a read or a job needs.
func (r *rels) empty() bool {
	return len(r.with) == 0 && !r.private && r.privV == 0 && r.stateV == 0 && r.state.Active() &&
		len(r.arch) == 0 && r.restoring == 0 && r.reqIn == 0 && r.reqOut == 0
}

// applyOld applies e, older than the horizon h, to every edge it sets of
// which the graph keeps a record, and appends a refusal to refused for
// every other edge between two users it would have written. The caller
// holds the stripes of u and t.
func (g *Graph) applyOld(e fg.Event, u, t uint32, h fg.Version, refused []fg.Refusal) []fg.Refusal {
	keep := func(ef fg.Effect) bool {
		if !ef.Kind.Info().Edge {
			return true // a setting: never removed
		}
		a, b := u, t
		if ef.User != e.User {
			a, b = t, u
		}
		if g.recorded(ef.Kind, a, b) {
			return true
		}
		if ef.Kind == fg.KindRequest && !ef.On && e.Op == fg.OpFollow {
			return false // a follow's end of a request there is none of: nothing to write
		}
		refused = append(refused, fg.Refusal{Effect: ef, Version: e.Version, Horizon: h})
		return false
	}
	g.applyEffects(e, u, t, found{}, keep)
	return refused
}

// recorded reports whether the graph keeps a record of the edge a→b of
// kind k: on, off or hidden. The caller holds a's stripe.
func (g *Graph) recorded(k fg.Kind, a, b uint32) bool {
	if k == fg.KindFollow {
		_, live := g.lookup(a, b)
		_, tomb := g.stripe(a).tombs[edge{a, b}]
		return live || tomb
	}
	return g.stripe(a).relsOf(a).link(k, b).v != 0
}
