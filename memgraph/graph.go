// Package memgraph is the embedded, in-process follow graph engine: every
// question of the API answered from memory, for a single machine.
//
// Users get dense internal ids (uint32) in order of first appearance. Each
// user has three sorted sequences, each split into chunks so that no change
// moves more than one chunk (see chunks.go):
//
//   - out: whom the user follows, by internal id, with each edge's version
//     (whose millisecond part is the follow time): 12 bytes an edge.
//   - outT: the same ids ordered by (follow time, user id), the following
//     list, newest last; times are read from out: 4 bytes an edge.
//   - in: the followers with their follow times, ordered by (time, user
//     id): 10 bytes an edge.
//
// Sets of at least bitmapMin ids also get a roaring bitmap, for membership
// and intersections. Counters are the sequences' lengths. Blocks, mutes,
// follow requests and the private setting, rare next to follows, live
// beside them in a map per stripe and cost a follow nothing (see
// relationship.go).
//
// Users are spread over lock stripes. A change of user→target holds the
// stripes of both, and everything it touches belongs to one of the two, so
// changes of unrelated users run in parallel. docs/design/memgraph.md says why this
// layout; docs/BENCHMARKS.md what it costs.
package memgraph

import (
	"context"
	"fmt"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"

	"github.com/RoaringBitmap/roaring/v2"

	fg "github.com/followgraph/followgraph"
)

var (
	_ fg.Graph     = (*Graph)(nil)
	_ fg.Applier   = (*Graph)(nil)
	_ fg.JobRunner = (*Graph)(nil)
)

const (
	// Sets of at least bitmapMin ids get a roaring bitmap; it is dropped
	// again below bitmapMin/2, so a set near the threshold does not rebuild
	// it often.
	bitmapMin = 4096

	stripeCount = 1024 // lock stripes over internal ids
	idShardBits = 6    // 64 shards of the user id → internal id table
	blockBits   = 12   // nodes are allocated 4096 at a time
	blockSize   = 1 << blockBits
)

// Graph is the in-memory engine. It is safe for concurrent use. Each edge
// is linearizable: a change is visible to every read that starts after it
// returned, and to none before its hook succeeded. Reads of one user's
// list, and set queries of two users, see one consistent state of those
// users.
type Graph struct {
	now          func() time.Time
	hook         fg.Hook
	maxFollowing int
	region       int // the region of the versions issued (WithRegion); 0: none

	clock   atomic.Uint64 // the hybrid logical clock: the greatest version issued or applied
	seed    maphash.Seed
	ids     [1 << idShardBits]idTable
	dirMu   sync.Mutex                         // serializes growth of dir
	dir     atomic.Pointer[[]*[blockSize]node] // internal id → node, in stable blocks
	users   atomic.Uint32                      // internal ids assigned
	stripes [stripeCount]stripe
	tombIdx atomic.Pointer[tombIndex] // for walks; nil when none is current (walk.go)
	jobs    jobs                      // of account states (state.go)
	purging purging                   // the tombstone horizon (horizon.go)
	refused func(fg.Refusal)          // see WithRefused
}

// stripe guards the nodes whose internal id is its index modulo
// stripeCount, and the state of the edges whose follower it guards.
type stripe struct {
	mu       sync.RWMutex
	edges    int32                  // live edges whose follower is here
	tombPeak int32                  // the most tombs held since the map was made (horizon.go)
	tombs    map[edge]fg.Version    // versions of unfollowed edges, and of archived ones (hiddenBit)
	pending  map[edge]chan struct{} // edges whose change awaits its hook
	pendOut  map[uint32]int         // follows and requests awaiting their hook, per follower
	rels     map[uint32]*rels       // the blocks, mutes, requests and settings of users here; nil when none
}

// node holds one user's edges.
type node struct {
	ext  fg.UserID
	out  chunks[outEdge] // by internal id
	outT chunks[uint32]  // following, by (time, user id)
	in   chunks[inEdge]  // followers, by (time, user id)
	bm   *bitmaps        // when out or in is large
}

type bitmaps struct{ out, in *roaring.Bitmap }

// outEdge is a followee and the version of the follow: 12 bytes.
type outEdge struct {
	id     uint32
	vl, vh uint32
}

func newOutEdge(id uint32, v fg.Version) outEdge {
	return outEdge{id: id, vl: uint32(v), vh: uint32(v >> 32)}
}

func (e outEdge) version() fg.Version { return fg.Version(uint64(e.vh)<<32 | uint64(e.vl)) }

// inEdge is a follower and the follow time in milliseconds (48 bits):
// 10 bytes.
type inEdge [5]uint16

func newInEdge(id uint32, ms int64) inEdge {
	return inEdge{uint16(id), uint16(id >> 16), uint16(ms), uint16(ms >> 16), uint16(ms >> 32)}
}

func (e inEdge) id() uint32 { return uint32(e[0]) | uint32(e[1])<<16 }
func (e inEdge) ms() int64  { return int64(e[2]) | int64(e[3])<<16 | int64(e[4])<<32 }

// edge is an edge by internal ids.
type edge struct{ user, target uint32 }

// Option configures a Graph.
type Option func(*Graph)

// WithClock sets the clock that gives follow times (default time.Now).
func WithClock(now func() time.Time) Option { return func(g *Graph) { g.now = now } }

// WithRegion makes the graph issue only versions of region r, from 1 to
// followgraph.MaxRegion (see followgraph.NextVersion), so that no other
// region of the deployment issues the same; 0, the default, is a
// deployment without regions. New panics on any other r.
func WithRegion(r int) Option { return func(g *Graph) { g.region = r } }

// WithHook sets the hook that receives every change before the write
// returns (see followgraph.Hook). memgraph promises more: a change is made
// visible only once its hook returned nil, so no read sees it while the
// hook runs, and a change whose hook failed leaves no trace. The write then
// returns the hook's error itself: a *followgraph.Error keeps its code,
// any other error is internal. While a change awaits its hook, other
// writes of its edge wait (of both ways of the pair, for a block), and a
// pending follow or request counts toward the following limit.
func WithHook(h fg.Hook) Option { return func(g *Graph) { g.hook = h } }

// WithRefused sets what Apply calls, once it has applied its batch, with
// each change it refused for being older than the tombstone horizon (see
// Apply); by default, and with nil, nothing.
func WithRefused(f func(fg.Refusal)) Option {
	return func(g *Graph) {
		if f != nil {
			g.refused = f
		}
	}
}

// WithMaxFollowing caps how many users one user may follow (0: no cap).
func WithMaxFollowing(n int) Option { return func(g *Graph) { g.maxFollowing = n } }

// New returns an empty graph. It panics on a region out of range (see
// WithRegion), a mistake of configuration that it has no error to report.
func New(opts ...Option) *Graph {
	g := &Graph{now: time.Now, seed: maphash.MakeSeed(), jobs: jobs{wake: make(chan struct{}, 1)}, refused: func(fg.Refusal) {}}
	g.dir.Store(new([]*[blockSize]node))
	for _, o := range opts {
		o(g)
	}
	if g.region < 0 || g.region > fg.MaxRegion {
		panic(fmt.Sprintf("memgraph: region %d: it must be 0 (none) to %d", g.region, fg.MaxRegion))
	}
	return g
}

// Stats describes the size of the graph.
type Stats struct {
	Users int // users with an internal id: every user ever named by a change
	Edges int // live follow edges

	// The edges of the other kinds that are on (mutes: expired or not),
	// and the private accounts.
	Blocks, Mutes, Requests, Private int
}

// Stats returns the current size of the graph.
func (g *Graph) Stats() Stats {
	s := Stats{Users: int(g.users.Load())}
	for i := range g.stripes {
		st := &g.stripes[i]
		st.mu.RLock()
		s.Edges += int(st.edges)
		for _, r := range st.rels {
			s.Requests += r.reqOut
			for _, p := range r.with {
				s.Blocks += count(p.link(fg.KindBlock).on)
				s.Mutes += count(p.link(fg.KindMute).on)
			}
			s.Private += count(r.private)
		}
		st.mu.RUnlock()
	}
	return s
}

func count(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Follow makes user follow target, or asks to when target is private; see
// followgraph.Graph.
func (g *Graph) Follow(ctx context.Context, user, target fg.UserID) (fg.FollowResult, error) {
	if err := fg.CheckIDs(user, target); err != nil {
		return fg.FollowResult{}, err
	}
	if user == target {
		return fg.FollowResult{}, fg.ErrSelfFollow
	}
	u, t := g.intern(user), g.intern(target)
	w, err := g.change(ctx, u, t, false, func() (write, error) { return g.decideFollow(user, target, u, t) })
	return w.followResult(), err
}

// decideFollow is Follow's decision under the locks of u and t.
func (g *Graph) decideFollow(user, target fg.UserID, u, t uint32) (write, error) {
	if !g.active(u) {
		return write{}, fg.ErrUserInactive
	}
	if !g.active(t) {
		return write{}, fg.ErrTargetInactive
	}
	at, cur, live := g.find(u, t)
	w := write{hint: found{at: at, v: cur, live: live, ok: true}}
	if live {
		w.since = cur.Millis()
		return w, nil
	}
	su := g.stripe(u)
	ru, rt := su.relsOf(u), g.stripe(t).relsOf(t)
	if ru.blocksEither(t) {
		return write{}, fg.ErrBlocked
	}
	op := fg.OpFollow
	req := ru.link(fg.KindRequest, t)
	if rt.isPrivate() {
		if req.on {
			return write{since: req.since, requested: true}, nil
		}
		op, w.requested = fg.OpRequest, true
	}
	if g.maxFollowing > 0 && !req.on && g.node(u).out.len()+su.pendOut[u]+ru.requestsOut() >= g.maxFollowing {
		return write{}, fg.Errorf(fg.EFollowingLimit, "user %d already follows, or asked to follow, the maximum of %d users", user, g.maxFollowing)
	}
	w.e = fg.NewEvent(user, target, op, g.tick())
	w.since = w.e.Version.Millis()
	return w, nil
}

// Unfollow makes user stop following target, or withdraws its request;
// see followgraph.Graph.
func (g *Graph) Unfollow(ctx context.Context, user, target fg.UserID) (bool, error) {
	return g.unfollow(ctx, user, target, user)
}

// unfollow ends user's follow of target, or its request, as a write by
// actor (user or target), who must be active. An archived follow or
// request (state.go) ends as a shown one does.
func (g *Graph) unfollow(ctx context.Context, user, target, actor fg.UserID) (bool, error) {
	if err := fg.CheckIDs(user, target); err != nil {
		return false, err
	}
	u, uok := g.internal(user)
	t, tok := g.internal(target)
	if !uok || !tok {
		return false, g.checkActive(actor)
	}
	a := u
	if actor != user {
		a = t
	}
	w, err := g.change(ctx, u, t, false, func() (write, error) {
		if !g.active(a) {
			return write{}, fg.ErrUserInactive
		}
		at, cur, live := g.find(u, t)
		w := write{hint: found{at: at, v: cur, live: live, ok: true}}
		switch l := g.stripe(u).relsOf(u).link(fg.KindRequest, t); {
		case live || g.hidden(fg.KindFollow, u, t):
			w.e = fg.NewEvent(user, target, fg.OpUnfollow, g.tick())
		case l.on || l.hidden:
			w.e = fg.NewEvent(user, target, fg.OpUnrequest, g.tick())
		}
		return w, nil
	})
	return w.e.Op != 0, err
}

// checkActive returns ErrUserInactive if user is known and not active.
func (g *Graph) checkActive(user fg.UserID) error {
	d, ok := g.internal(user)
	if !ok {
		return nil
	}
	g.rlock(d, d)
	defer g.runlock(d, d)
	if !g.active(d) {
		return fg.ErrUserInactive
	}
	return nil
}

// write is what a change decided under its users' locks: the event to
// make (Op 0: none, the edge is as asked already), and the state of the
// edge it leaves, for the caller's answer.
type write struct {
	e         fg.Event
	since     int64 // when the edge was made, in ms
	expires   int64 // a mute's expiry in ms; 0: none
	requested bool  // the edge is a follow request, not a follow
	hint      found // what find(u, t) returned, while the locks are held
}

// found is what find returned for the follow e.User→e.Target.
type found struct {
	at   pos
	v    fg.Version
	live bool
	ok   bool // the fields above are set
}

func (w write) followResult() fg.FollowResult {
	return fg.FollowResult{Created: w.e.Op != 0 && w.e.Op != fg.OpUnrequest, Since: fg.Millis(w.since), Requested: w.requested}
}

// change makes the change that decide, called under the locks of u and t
// (t == u for a per-user setting), decides on, if any, and returns what
// decide returned. wide is for changes that also set the edges of the
// other direction (a block): they wait for pending changes either way.
//
// With no hook the change is made under the two stripes' locks. With a
// hook the edge is marked pending (other changes of it wait), the locks are
// released while the hook runs, and the change is made only once the hook
// succeeded: no read sees a change its hook refused.
func (g *Graph) change(ctx context.Context, u, t uint32, wide bool, decide func() (write, error)) (write, error) {
	k := edge{u, t}
	su, st := g.stripe(u), g.stripe(t)
	for {
		g.lock(u, t)
		wait, busy := su.pending[k]
		if !busy && wide {
			wait, busy = st.pending[edge{t, u}]
		}
		if busy {
			g.unlock(u, t)
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return write{}, fmt.Errorf("memgraph: waiting for a pending change: %w", ctx.Err())
			}
		}
		w, err := decide()
		if err != nil || w.e.Op == 0 {
			g.unlock(u, t)
			return w, err
		}
		if g.hook == nil {
			g.applyEvent(w.e, u, t, w.hint)
			g.unlock(u, t)
			return w, nil
		}
		wait = make(chan struct{})
		// A pending follow or request counts toward the limit, but not an
		// approval of a request that counts already.
		counts := (w.e.Op == fg.OpFollow || w.e.Op == fg.OpRequest) && !su.relsOf(u).link(fg.KindRequest, t).on
		su.setPending(k, wait, counts)
		if wide {
			st.setPending(edge{t, u}, wait, false)
		}
		g.unlock(u, t)

		err = g.hook(ctx, w.e)

		g.lock(u, t)
		su.clearPending(k, counts)
		if wide {
			st.clearPending(edge{t, u}, false)
		}
		if err == nil {
			g.applyEvent(w.e, u, t, found{})
		}
		g.unlock(u, t)
		close(wait)
		if err != nil {
			return write{}, err
		}
		return w, nil
	}
}

// setPending marks edge k pending until wait is closed; counts: the
// change counts toward its user's following limit meanwhile.
func (s *stripe) setPending(k edge, wait chan struct{}, counts bool) {
	if s.pending == nil {
		s.pending, s.pendOut = make(map[edge]chan struct{}), make(map[uint32]int)
	}
	s.pending[k] = wait
	if counts {
		s.pendOut[k.user]++
	}
}

func (s *stripe) clearPending(k edge, counts bool) {
	delete(s.pending, k)
	if counts {
		if s.pendOut[k.user]--; s.pendOut[k.user] == 0 {
			delete(s.pendOut, k.user)
		}
	}
}

// tick returns a new version, greater than every version issued or applied
// so far, at least the clock's current millisecond, and of the graph's
// region (fg.NextVersion).
func (g *Graph) tick() fg.Version {
	now := g.now().UnixMilli()
	for {
		last := g.clock.Load()
		v := fg.NextVersion(fg.Version(last), now, g.region)
		if g.clock.CompareAndSwap(last, uint64(v)) {
			return v
		}
	}
}

// observe moves the clock to at least v.
func (g *Graph) observe(v fg.Version) {
	for {
		last := g.clock.Load()
		if last >= uint64(v) || g.clock.CompareAndSwap(last, uint64(v)) {
			return
		}
	}
}

func (g *Graph) stripe(d uint32) *stripe { return &g.stripes[d%stripeCount] }

// lock takes the write locks of the stripes of a and b, in stripe order.
func (g *Graph) lock(a, b uint32) {
	x, y := a%stripeCount, b%stripeCount
	if x > y {
		x, y = y, x
	}
	g.stripes[x].mu.Lock()
	if x != y {
		g.stripes[y].mu.Lock()
	}
}

func (g *Graph) unlock(a, b uint32) {
	x, y := a%stripeCount, b%stripeCount
	g.stripes[x].mu.Unlock()
	if x != y {
		g.stripes[y].mu.Unlock()
	}
}

// rlock and runlock are lock and unlock for readers.
func (g *Graph) rlock(a, b uint32) {
	x, y := a%stripeCount, b%stripeCount
	if x > y {
		x, y = y, x
	}
	g.stripes[x].mu.RLock()
	if x != y {
		g.stripes[y].mu.RLock()
	}
}

func (g *Graph) runlock(a, b uint32) {
	x, y := a%stripeCount, b%stripeCount
	g.stripes[x].mu.RUnlock()
	if x != y {
		g.stripes[y].mu.RUnlock()
	}
}

// node returns the node of internal id d. Nodes never move.
func (g *Graph) node(d uint32) *node { return &(*g.dir.Load())[d>>blockBits][d&(blockSize-1)] }

// ext returns the user id of internal id d. It never changes, so it may be
// read without the stripe's lock.
func (g *Graph) ext(d uint32) fg.UserID { return g.node(d).ext }

// shard returns the shard of id and id's hash. The shard is chosen by the
// hash's top bits, the slot by its low bits.
func (g *Graph) shard(id fg.UserID) (*idTable, uint64) {
	h := hashID(g.seed, id)
	return &g.ids[h>>(64-idShardBits)], h
}

// internal returns the internal id of id, if it has one.
func (g *Graph) internal(id fg.UserID) (uint32, bool) {
	sh, h := g.shard(id)
	return sh.get(h, id)
}

// intern returns the internal id of id, assigning one if needed.
func (g *Graph) intern(id fg.UserID) uint32 {
	if d, ok := g.internal(id); ok {
		return d
	}
	sh, h := g.shard(id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if d, ok := sh.get(h, id); ok {
		return d
	}
	g.dirMu.Lock()
	d := g.users.Load()
	if dir := *g.dir.Load(); int(d>>blockBits) == len(dir) {
		grown := append(dir[:len(dir):len(dir)], new([blockSize]node))
		g.dir.Store(&grown)
	}
	g.node(d).ext = id
	g.users.Store(d + 1)
	g.dirMu.Unlock()
	sh.put(g.seed, h, id, d)
	return d
}

// lookup returns the version of the live edge u→t. The caller holds u's
// stripe.
func (g *Graph) lookup(u, t uint32) (fg.Version, bool) {
	_, v, ok := g.find(u, t)
	return v, ok
}

// find returns where t is or would be in u's out, and the version of the
// live edge u→t. The caller holds u's stripe.
func (g *Graph) find(u, t uint32) (pos, fg.Version, bool) {
	out := &g.node(u).out
	p := out.search(func(e outEdge) bool { return e.id < t })
	if !out.isEnd(p) {
		if e := out.at(p); e.id == t {
			return p, e.version(), true
		}
	}
	return p, 0, false
}

// applyEvent makes each effect of e (see followgraph.Event.Effects) whose
// edge has a lower version than e, and moves the clock past e's version.
// u and t are the internal ids of e.User and e.Target (t == u for a
// per-user event); the caller holds their stripes. hint, when set, is what
// find(u, t) returned under these locks.
func (g *Graph) applyEvent(e fg.Event, u, t uint32, hint found) { g.applyEffects(e, u, t, hint, nil) }

// applyEffects is applyEvent of the effects keep takes (nil: all).
func (g *Graph) applyEffects(e fg.Event, u, t uint32, hint found, keep func(fg.Effect) bool) {
	g.observe(e.Version)
	for ef := range e.Effects {
		if keep != nil && !keep(ef) {
			continue
		}
		a, b := u, t
		if ef.User != e.User {
			a, b = t, u
		}
		switch ef.Kind {
		case fg.KindFollow:
			if !hint.ok || a != u || b != t {
				hint.at, hint.v, hint.live = g.find(a, b)
			}
			g.setFollow(a, b, ef.On, e.Version, hint.at, hint.v, hint.live)
			hint.ok = false
		case fg.KindPrivate:
			g.stripe(a).relsFor(a).setPrivate(ef.On, e.Version)
		case fg.KindState:
			g.setState(a, e.State, e.Version)
		default:
			g.setLink(ef.Kind, a, b, ef.On, e)
		}
	}
	if u != t {
		g.settle(u, t)
	}
}

// setFollow sets the follow u→t on or off at version v unless it has a
// version of v or higher; at, cur and live are what find(u, t) returned.
// The caller holds the stripes of u and t.
func (g *Graph) setFollow(u, t uint32, on bool, v fg.Version, at pos, cur fg.Version, live bool) {
	su, k := g.stripe(u), edge{u, t}
	if !live {
		cur = su.tombs[k] &^ hiddenBit
	}
	if v <= cur {
		return
	}
	if live {
		g.unlink(u, t, cur, at)
		su.edges--
	}
	if on {
		delete(su.tombs, k)
		g.link(u, t, v, at)
		su.edges++
		return
	}
	su.setTomb(k, v)
	g.staleTombs()
}

// followVersion returns the version of the follow u→t's last change, live
// or tombstone (0: none). The caller holds u's stripe.
func (g *Graph) followVersion(u, t uint32) fg.Version {
	if v, live := g.lookup(u, t); live {
		return v
	}
	return g.stripe(u).tombs[edge{u, t}] &^ hiddenBit
}

// The time sequences are ordered by fg.Key (time, user id) ascending, and
// read from the end for newest first.
func keyLess(a, b fg.Key) bool { return a.Millis < b.Millis || a.Millis == b.Millis && a.ID < b.ID }

// outKey is the key of followee t in u's following list.
func (g *Graph) outKey(u, t uint32) fg.Key {
	v, _ := g.lookup(u, t)
	return fg.Key{Millis: v.Millis(), ID: g.ext(t)}
}

// inKey is the key of a follower in a followers list.
func (g *Graph) inKey(e inEdge) fg.Key { return fg.Key{Millis: e.ms(), ID: g.ext(e.id())} }

// link adds the live edge u→t of version v; t belongs at position at of
// u's out.
func (g *Graph) link(u, t uint32, v fg.Version, at pos) {
	un, tn := g.node(u), g.node(t)
	ms := v.Millis()
	un.out.insert(at, newOutEdge(t, v))
	insertByKey(&un.outT, t, g.outLess(u, ms, tn.ext))
	if bm := un.outBM(); bm != nil {
		bm.Add(t)
	} else if un.out.len() >= bitmapMin {
		un.bitmaps().out = roaring.BitmapOf(un.outIDs()...)
	}

	insertByKey(&tn.in, newInEdge(u, ms), g.inLess(ms, un.ext))
	if bm := tn.inBM(); bm != nil {
		bm.Add(u)
	} else if tn.in.len() >= bitmapMin {
		tn.bitmaps().in = roaring.BitmapOf(tn.inIDs()...)
	}
}

// unlink removes the live edge u→t of version v, at position at of u's out.
func (g *Graph) unlink(u, t uint32, v fg.Version, at pos) {
	un, tn := g.node(u), g.node(t)
	ms := v.Millis()
	// outT first: its order is read from u's out.
	removeByKey(&un.outT, t, g.outLess(u, ms, tn.ext))
	removeByKey(&tn.in, newInEdge(u, ms), g.inLess(ms, un.ext))
	un.out.remove(at)
	if un.bm != nil && un.bm.out != nil {
		if un.out.len() < bitmapMin/2 {
			un.bm.out = nil
		} else {
			un.bm.out.Remove(t)
		}
	}
	if tn.bm != nil && tn.bm.in != nil {
		if tn.in.len() < bitmapMin/2 {
			tn.bm.in = nil
		} else {
			tn.bm.in.Remove(u)
		}
	}
	un.dropEmptyBitmaps()
	tn.dropEmptyBitmaps()
}

// outLess reports whether followee x comes before the key (ms, id) in u's
// following list. The user id is read only on a tie of times.
func (g *Graph) outLess(u uint32, ms int64, id fg.UserID) func(uint32) bool {
	return func(x uint32) bool {
		v, _ := g.lookup(u, x)
		m := v.Millis()
		return m < ms || m == ms && g.ext(x) < id
	}
}

// inLess reports whether a follower comes before the key (ms, id) in a
// followers list. The user id is read only on a tie of times.
func (g *Graph) inLess(ms int64, id fg.UserID) func(inEdge) bool {
	return func(e inEdge) bool {
		m := e.ms()
		return m < ms || m == ms && g.ext(e.id()) < id
	}
}

// insertByKey inserts e where less stops holding.
func insertByKey[E comparable](s *chunks[E], e E, less func(E) bool) {
	if last, ok := s.last(); !ok || less(last) {
		s.insert(s.end(), e) // the usual case: the newest follow
		return
	}
	s.insert(s.search(less), e)
}

// removeByKey removes e, found where less stops holding.
func removeByKey[E comparable](s *chunks[E], e E, less func(E) bool) {
	p := s.search(less)
	if s.isEnd(p) || s.at(p) != e {
		panic(fmt.Sprintf("memgraph: %v missing from its time sequence", e))
	}
	s.remove(p)
}

// bitmaps returns n's bitmaps, allocating the holder.
func (n *node) bitmaps() *bitmaps {
	if n.bm == nil {
		n.bm = new(bitmaps)
	}
	return n.bm
}

func (n *node) dropEmptyBitmaps() {
	if n.bm != nil && n.bm.out == nil && n.bm.in == nil {
		n.bm = nil
	}
}

func (n *node) outBM() *roaring.Bitmap {
	if n.bm == nil {
		return nil
	}
	return n.bm.out
}

func (n *node) inBM() *roaring.Bitmap {
	if n.bm == nil {
		return nil
	}
	return n.bm.in
}

// outIDs returns the ids the user follows, in internal id order.
func (n *node) outIDs() []uint32 {
	ids := make([]uint32, 0, n.out.len())
	n.out.each(func(e outEdge) bool { ids = append(ids, e.id); return true })
	return ids
}

// inIDs returns the ids of the user's followers, in time order.
func (n *node) inIDs() []uint32 {
	ids := make([]uint32, 0, n.in.len())
	n.in.each(func(e inEdge) bool { ids = append(ids, e.id()); return true })
	return ids
}
