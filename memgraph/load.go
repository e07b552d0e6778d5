package memgraph

import (
	"cmp"
	"context"
	"fmt"
	"iter"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/RoaringBitmap/roaring/v2"

	fg "github.com/followgraph/followgraph"
)

// Apply replays events; see followgraph.Applier. It also moves the clock
// past every applied version, so later changes get higher versions.
//
// An edge between two users that an event older than the tombstone
// horizon sets (see PurgeTombstones), and of which the graph keeps no
// record, is left as it is: its tombstone, newer than the event, may
// have been removed. Each such change is passed to the function of
// WithRefused once the batch is applied; the event's other edges are
// applied.
func (g *Graph) Apply(_ context.Context, events []fg.Event) error {
	for _, e := range events {
		if err := e.Validate(); err != nil {
			return fmt.Errorf("memgraph: apply: %w", err)
		}
	}
	var refused []fg.Refusal
	for _, e := range events {
		u, t := g.internPair(e)
		g.lock(u, t)
		// Read under the locks: a purge raises the horizon before it
		// removes anything under them.
		if h := g.horizon(); e.Version < h {
			refused = g.applyOld(e, u, t, h, refused)
		} else {
			g.applyEvent(e, u, t, found{})
		}
		g.unlock(u, t)
	}
	for _, r := range refused {
		g.refused(r)
	}
	return nil
}

// internPair returns the internal ids of e's user and target; both are
// the user's for a per-user event.
func (g *Graph) internPair(e fg.Event) (u, t uint32) {
	u = g.intern(e.User)
	if e.PerUser() {
		return u, u
	}
	return u, g.intern(e.Target)
}

// Load fills an empty graph with events, the way Apply would but in bulk:
// it sorts instead of searching, builds every sequence full and exactly
// sized, and uses every core. Events may come in any order, with several
// versions of one edge; the highest wins. Events of the other kinds
// (blocks, mutes, requests, settings) are applied one by one, as Apply
// does, once the follows are built. On a graph that is not empty it
// applies the events in batches instead. An invalid event returns an error
// and leaves the graph empty.
func (g *Graph) Load(ctx context.Context, events iter.Seq[fg.Event]) error {
	if g.users.Load() > 0 {
		return g.applyAll(ctx, events)
	}
	for i := range g.stripes {
		g.stripes[i].mu.Lock()
	}
	defer func() {
		for i := range g.stripes {
			g.stripes[i].mu.Unlock()
		}
	}()
	if err := g.loadLocked(events); err != nil {
		g.reset()
		return fmt.Errorf("memgraph: load: %w", err)
	}
	return nil
}

// reset empties the graph. The caller holds every stripe.
func (g *Graph) reset() {
	for i := range g.ids {
		g.ids[i].mu.Lock()
		g.ids[i].slots.Store(nil)
		g.ids[i].n = 0
		g.ids[i].mu.Unlock()
	}
	g.dirMu.Lock()
	g.dir.Store(new([]*[blockSize]node))
	g.users.Store(0)
	g.dirMu.Unlock()
	for i := range g.stripes {
		g.stripes[i].edges, g.stripes[i].tombs, g.stripes[i].tombPeak, g.stripes[i].rels = 0, nil, 0, nil
	}
	g.clock.Store(0)
	g.tombIdx.Store(nil)
	g.jobs.mu.Lock()
	g.jobs.users = nil
	g.jobs.mu.Unlock()
}

func (g *Graph) applyAll(ctx context.Context, events iter.Seq[fg.Event]) error {
	batch := make([]fg.Event, 0, 4096)
	for e := range events {
		if batch = append(batch, e); len(batch) == cap(batch) {
			if err := g.Apply(ctx, batch); err != nil {
				return err
			}
			batch = batch[:0]
		}
	}
	return g.Apply(ctx, batch)
}

// loadRec is one event in the bulk loader: 16 bytes. The top bit of v marks
// an unfollow (versions use 63 bits until the year 280,000).
type loadRec struct {
	u, t uint32
	v    uint64
}

const unfollowBit = 1 << 63

func (r loadRec) version() fg.Version { return fg.Version(r.v &^ unfollowBit) }

// inRec is a live edge seen from one end: the other end and the time.
type inRec struct {
	f  uint32
	ms int64
}

func (g *Graph) loadLocked(events iter.Seq[fg.Event]) error {
	var (
		recs []loadRec
		rest []fg.Event // of the other kinds
	)
	for e := range events {
		if err := e.Validate(); err != nil {
			return err
		}
		if e.Op.Kind() != fg.KindFollow {
			rest = append(rest, e)
			continue
		}
		r := loadRec{u: g.intern(e.User), t: g.intern(e.Target), v: uint64(e.Version)}
		if e.Op == fg.OpUnfollow {
			r.v |= unfollowBit
		}
		recs = append(recs, r)
		g.observe(e.Version)
	}
	n := int(g.users.Load())

	// Bucket by follower (a counting sort), then per follower sort by
	// followee and version, keep the highest version of each edge.
	byUser := make([]loadRec, len(recs))
	start := bucketStarts(n, func(yield func(uint32)) {
		for _, r := range recs {
			yield(r.u)
		}
	})
	next := slices.Clone(start[:n])
	for _, r := range recs {
		byUser[next[r.u]] = r
		next[r.u]++
	}
	recs = nil

	var (
		mu    sync.Mutex
		tombs []loadRec
	)
	parallel(n, func(u int) {
		rs := byUser[start[u]:start[u+1]]
		slices.SortFunc(rs, func(a, b loadRec) int {
			if c := cmp.Compare(a.t, b.t); c != 0 {
				return c
			}
			return cmp.Compare(b.version(), a.version())
		})
		out := make([]outEdge, 0, len(rs))
		var dead []loadRec
		for i, r := range rs {
			if i > 0 && rs[i-1].t == r.t {
				rs[i].u = ^uint32(0) // an older version of the same edge
				continue
			}
			if r.v&unfollowBit != 0 {
				dead = append(dead, r)
				rs[i].u = ^uint32(0)
				continue
			}
			out = append(out, newOutEdge(r.t, r.version()))
		}
		nd := g.node(uint32(u))
		nd.out.fill(out)
		if len(dead) > 0 {
			mu.Lock()
			tombs = append(tombs, dead...)
			mu.Unlock()
		}
		if len(out) >= bitmapMin {
			nd.bitmaps().out = roaring.BitmapOf(nd.outIDs()...)
		}
		keyed := make([]inRec, len(out))
		for i, e := range out {
			keyed[i] = inRec{f: e.id, ms: e.version().Millis()}
		}
		g.sortByKey(keyed)
		ids := make([]uint32, len(keyed))
		for i, r := range keyed {
			ids[i] = r.f
		}
		nd.outT.fill(ids)
	})
	for u := range n {
		g.stripe(uint32(u)).edges += int32(g.node(uint32(u)).out.len())
	}
	for _, r := range tombs {
		g.stripe(r.u).setTomb(edge{r.u, r.t}, r.version())
	}
	g.tombIdx.Store(nil) // a walk of the empty graph may have left one

	// The followers: bucket the live edges by followee, sort each by key.
	live := func(yield func(uint32)) {
		for _, r := range byUser {
			if r.u != ^uint32(0) {
				yield(r.t)
			}
		}
	}
	start = bucketStarts(n, live)
	next = slices.Clone(start[:n])
	byTarget := make([]inRec, start[n])
	for _, r := range byUser {
		if r.u != ^uint32(0) {
			byTarget[next[r.t]] = inRec{f: r.u, ms: r.version().Millis()}
			next[r.t]++
		}
	}
	byUser = nil
	parallel(n, func(t int) {
		rs := byTarget[start[t]:start[t+1]]
		g.sortByKey(rs)
		in := make([]inEdge, len(rs))
		for i, r := range rs {
			in[i] = newInEdge(r.f, r.ms)
		}
		nd := g.node(uint32(t))
		nd.in.fill(in)
		if len(in) >= bitmapMin {
			nd.bitmaps().in = roaring.BitmapOf(nd.inIDs()...)
		}
	})
	// The other kinds, on the built follows: a block's effects end them.
	for _, e := range rest {
		u, t := g.internPair(e)
		g.applyEvent(e, u, t, found{})
	}
	return nil
}

// sortByKey sorts rs by (time, user id).
func (g *Graph) sortByKey(rs []inRec) {
	slices.SortFunc(rs, func(a, b inRec) int {
		if c := cmp.Compare(a.ms, b.ms); c != 0 {
			return c
		}
		return cmp.Compare(g.ext(a.f), g.ext(b.f))
	})
}

// bucketStarts returns, for keys 0..n-1 yielded by keys, where each key's
// bucket starts in the bucketed array; start[n] is the total.
func bucketStarts(n int, keys func(yield func(uint32))) []int {
	start := make([]int, n+1)
	keys(func(k uint32) { start[k+1]++ })
	for i := 1; i <= n; i++ {
		start[i] += start[i-1]
	}
	return start
}

// parallel calls f(i) for i in 0..n-1 on every core, handing out small
// ranges so one huge bucket does not hold up the rest.
func parallel(n int, f func(i int)) {
	const step = 256
	var next atomic.Int64
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for {
				lo := int(next.Add(step)) - step
				if lo >= n {
					return
				}
				for i := lo; i < min(lo+step, n); i++ {
					f(i)
				}
			}
		})
	}
	wg.Wait()
}
