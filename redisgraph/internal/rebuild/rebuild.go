package rebuild

import (
	"cmp"
	"context"
	"fmt"
	"iter"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/redisgraph/internal/effects"
	"github.com/followgraph/followgraph/redisgraph/internal/errs"
	"github.com/followgraph/followgraph/redisgraph/internal/layout"
	"github.com/followgraph/followgraph/redisgraph/internal/lists"
	"github.com/followgraph/followgraph/redisgraph/internal/scripts"
	"github.com/followgraph/followgraph/redisgraph/internal/wire"
)

// Source is the graph Redis is expected to hold, as the operator commands
// build it: the durable store plus the event log's tail, loaded into a
// memgraph.Graph, which implements Source. Each edge is given as the event
// of its last change: OpFollow for a live edge, OpUnfollow for an
// unfollowed one (a tombstone), with the edge's version, and so for the
// other kinds (OpBlock or OpUnblock, …; a mute's with its since and
// expiry).
type Source interface {
	// Users yields every user with any edge of any kind, live or
	// tombstone, or a setting, once.
	Users() iter.Seq[fg.UserID]
	// OutEdges yields each follow edge user → x once.
	OutEdges(user fg.UserID) iter.Seq[fg.Event]
	// InEdges yields each follow edge x → user once.
	InEdges(user fg.UserID) iter.Seq[fg.Event]
	// LinkEvents yields each edge of the other kinds user → x once, and
	// user's private setting (Target 0) if it was ever set.
	LinkEvents(user fg.UserID) iter.Seq[fg.Event]
}

// sideKeys returns the keys of side s of user u, as scripts.Bulk takes them.
func (g *Graph) sideKeys(u fg.UserID, s layout.Side) scripts.BulkKeys {
	return scripts.BulkKeys{Set: g.ks.User(u, s.Set), Versions: g.ks.User(u, s.Versions), H: g.ks.User(u, layout.Counters)}
}

// followSides are the sides of the follows, which Rebuild and the repairs
// write in bulk (lua/bulk.lua); the other kinds go edge by edge.
var followSides = [2]layout.Side{layout.Following, layout.Followers}

// sideEdges returns u's edges on s, a follow side, in src.
func sideEdges(s layout.Side, src Source, u fg.UserID) iter.Seq[fg.Event] {
	if s.In {
		return src.InEdges(u)
	}
	return src.OutEdges(u)
}

// otherOf returns the user at the other end of e, as seen from side s.
func otherOf(s layout.Side, e fg.Event) fg.UserID {
	if s.In {
		return e.User
	}
	return e.Target
}

// DefaultBulkBatch is how many edges one call of the bulk script writes
// at most, unless Options says otherwise (Reconcile's repairs use
// it too, or the rate's burst when smaller). It keeps each call under a
// millisecond on the server even on a set of a million members, so that
// the service's own commands are never held up for longer (TestSlowlog
// checks it); on the sets of most users, all their edges fit one call.
// The figures behind it are in docs/BENCHMARKS.md, in the rows that name
// DefaultBulkBatch.
const DefaultBulkBatch = 64

// maxBulkBatch bounds Options.Batch: the script passes twice as
// many values to one command, within Lua's C stack (8000).
const maxBulkBatch = 2000

// Options tunes Rebuild. Zero fields take their defaults.
type Options struct {
	// Batch is the most edges one script call writes (default
	// DefaultBulkBatch, at most 2000).
	Batch int
	// Concurrency is how many pipelines of calls are in flight at once
	// (default 8).
	Concurrency int
}

func (o Options) withDefaults() Options {
	if o.Batch <= 0 {
		o.Batch = DefaultBulkBatch
	}
	o.Batch = min(o.Batch, maxBulkBatch)
	if o.Concurrency <= 0 {
		o.Concurrency = 8
	}
	return o
}

// Stats says what Rebuild did.
type Stats struct {
	Users   int64 // users of the source
	Edges   int64 // edges of the source, live or tombstone; each has two sides
	Written int64 // sides of edges written: those where Redis held an older state, or none
	Refused int64 // sides of live edges not written: below the user's tombstone horizon, with no record in Redis
	Calls   int64 // script calls
}

// Rebuild writes every edge of src, live or tombstone, into both sides in
// Redis, with its version, and sets each user's counters to the sizes of
// their sets and each user's clock to at least every version of their
// edges (so that later changes get higher versions). It is what restores
// Redis after a loss, from the durable store and the log.
//
// Each side of each edge is written only over an older version, so
// Rebuild is idempotent, and correct while the service keeps writing: a
// live change newer than src's state of an edge stays, and so does a
// tombstone newer than src's live edge. It needs no empty Redis, and
// removes nothing that src lacks (Reconcile finds that). A write the
// service makes while a rebuild is under way is decided on what Redis
// holds so far: an unfollow of an edge not yet rebuilt finds nothing to
// remove, and the edge comes back with the rebuild. (After Redis lost its
// data, writes wait instead, until InitOutbox follows the rebuild.)
//
// The writes go in bulk: the edges of one side of one user, up to
// opts.Batch a script call (lua/bulk.lua: one ZMSCORE and one HMGET read
// what Redis holds, one ZADD writes the winners), many calls pipelined and
// several pipelines in flight. A user's keys share a slot, so this works
// on a Cluster too.
//
// The following sides of all users are written first, then the followers
// sides. A live change on a standalone Redis writes both sides of an edge
// and trusts the followee's side to mirror the follower's (lua/change.lua),
// which a rebuild in progress breaks: a change made before the followee's
// side was rebuilt may move its counter by a member that is not there
// yet. Every call on a followers side sets the counter to the size of the
// set, and as every following side is complete by then, such a change
// cannot happen after the followee's side was rebuilt.
//
// It returns EUnavailable when Redis fails; what was written stays, and
// running Rebuild again completes it.
func (g *Graph) Rebuild(ctx context.Context, src Source, opts Options) (Stats, error) {
	opts = opts.withDefaults()
	var st Stats
	for _, s := range followSides {
		if err := g.rebuildSide(ctx, src, s, opts, &st); err != nil {
			return st, err
		}
	}
	return st, g.rebuildLinks(ctx, src, &st)
}

// linkBatch is how many calls of lua/effects.lua rebuildLinks pipelines.
const linkBatch = 256

// rebuildLinks writes every edge of the other kinds of src, and every
// setting, into both sides (a mute and a setting have one): the edge each
// event of src.LinkEvents is about, as lua/effects.lua applies it, over an
// older version only, with the counters moved as the edges change and the
// users' clocks raised. What the change did to other edges (a block's end
// of the follows) src gives as those edges' own states. These are far
// fewer than follows: one call per event, pipelined linkBatch at a time.
// The users' account states come last, by Apply, each putting its user in
// the jobs set: a rebuilt hidden user's edges are written as stored, and
// its job hides them again. (On a Cluster, an edge written where Redis
// holds an inactive state already is settled on both sides, as Apply's.)
func (g *Graph) rebuildLinks(ctx context.Context, src Source, st *Stats) error {
	var calls []scripts.Call
	var states []fg.Event // written last, as Apply writes them: their jobs hide what they must
	var of []fg.Event     // on a Cluster, the event of each call
	flush := func() error {
		var p effects.Pairs
		for i, r := range g.lua.ExecMulti(ctx, calls) {
			res, err := r.ToArray()
			if err != nil {
				return errs.Wrap("rebuild", err)
			}
			if n, _ := wire.Status(res[0]); n == layout.Changed {
				st.Written++
			}
			if g.ks.Cluster() {
				p.Note(of[i], ownEffect(of[i]), effects.Words(res, 1)...)
			}
		}
		st.Calls += int64(len(calls))
		calls, of = calls[:0], of[:0]
		if err := g.fx.SettlePairs(ctx, p); err != nil {
			return errs.Wrap("rebuild", err)
		}
		return nil
	}
	for u := range src.Users() {
		for e := range src.LinkEvents(u) {
			if err := e.Validate(); err != nil || e.User != u || e.Op.Kind() == fg.KindFollow {
				return fmt.Errorf("redisgraph: rebuild: the source gave %+v as a link of user %d", e, u)
			}
			if e.Op == fg.OpState {
				states = append(states, e)
				continue
			}
			own := ownEffect(e)
			st.Edges++
			users := effects.Users(e)
			if !g.ks.Cluster() {
				calls = append(calls, g.fx.Call(e, own, layout.RefuseNothing, users...))
			} else {
				for _, x := range users {
					calls = append(calls, g.fx.Call(e, own, layout.RefuseNothing, x))
					of = append(of, e)
				}
			}
			if len(calls) >= linkBatch {
				if err := flush(); err != nil {
					return err
				}
			}
		}
	}
	if err := flush(); err != nil {
		return err
	}
	return g.fx.Apply(ctx, states, wire.VersionHex(0)) // states: nothing refused
}

// ownEffect yields the first of e's effects, the one on the edge e is
// the last change of: what the source gives of the others, it gives as
// those edges' own events.
func ownEffect(e fg.Event) iter.Seq[fg.Effect] {
	return func(yield func(fg.Effect) bool) {
		for eff := range e.Effects {
			yield(eff)
			return
		}
	}
}

// rebuildSide writes side s of every user of src: one goroutine walks src
// and cuts the calls, opts.Concurrency goroutines send them.
func (g *Graph) rebuildSide(ctx context.Context, src Source, s layout.Side, opts Options, st *Stats) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	batches := make(chan []scripts.Call, opts.Concurrency)
	var written, refused, calls atomic.Int64
	var wg sync.WaitGroup
	for range opts.Concurrency {
		wg.Go(func() {
			for batch := range batches {
				if ctx.Err() != nil {
					continue // drain
				}
				for _, r := range g.lua.ExecMulti(ctx, batch) {
					res, err := r.ToArray()
					if err == nil && len(res) < 2 {
						err = fmt.Errorf("bulk script returned %d values", len(res))
					}
					if err != nil {
						cancel(errs.Wrap("rebuild", err))
						break
					}
					n, _ := res[0].AsInt64()
					written.Add(n)
					if len(res) > 2 {
						n, _ := res[2].AsInt64()
						refused.Add(n)
					}
				}
				calls.Add(int64(len(batch)))
			}
		})
	}

	// A pipeline holds 16 full calls' worth of edges, or 256 calls (users
	// with few edges).
	var (
		batch      []scripts.Call
		batchEdges int
		users      int64
		edges      int64
		bad        error
		es         = make([]bulkEdge, 0, opts.Batch)
	)
	send := func() bool {
		if len(batch) == 0 {
			return true
		}
		select {
		case batches <- batch:
		case <-ctx.Done():
			return false
		}
		batch, batchEdges = nil, 0
		return true
	}
	total := 0  // the edges of the user's side, given with its first call
	chunk := "" // the chunk of the edges of a call (rebuildChunked)
	// add sends es as a call on u's side; last says it is the side's last
	// call, which sets the counter to the set's size: a live unfollow made
	// between the rebuild of its follower's side and of its followee's
	// moves the followee's counter without a member to remove (change.lua
	// takes the followee's side to mirror the follower's), which only a
	// count of the set mends.
	add := func(u fg.UserID, last bool) bool {
		clk := fg.Version(0)
		if s == layout.Following {
			for _, e := range es {
				clk = max(clk, e.v)
			}
		}
		batch = append(batch, scripts.Bulk.Call(g.sideKeys(u, s), bulkArgs(s, es, bulkCall{clk: clk, total: total, chunk: chunk, recount: last})))
		total = 0
		batchEdges += len(es)
		edges += int64(len(es))
		es = es[:0]
		if batchEdges >= 16*opts.Batch || len(batch) >= 256 {
			return send()
		}
		return true
	}
walk:
	for u := range src.Users() {
		users++
		total = 0
		for range sideEdges(s, src, u) {
			total++
		}
		if total > scripts.SplitAt(g.maxKey) {
			// A side of several chunks: its edges go a chunk a call, so
			// that each call reads and writes one chunk's keys.
			bad = g.rebuildChunked(ctx, src, s, u, total, opts.Batch, &es, &chunk, add)
			if chunk = ""; bad != nil {
				break
			}
			continue
		}
		userTotal, seen := total, 0
		for e := range sideEdges(s, src, u) {
			if bad = checkSourceEdge(u, s, e); bad != nil {
				break walk
			}
			es = append(es, newBulkEdge(otherOf(s, e), stateOf(e)))
			if seen++; len(es) == opts.Batch && !add(u, seen == userTotal) {
				break walk
			}
		}
		if len(es) > 0 && !add(u, true) {
			break
		}
	}
	if bad == nil {
		send()
	}
	close(batches)
	wg.Wait()
	if bad != nil {
		return fmt.Errorf("redisgraph: rebuild: %w", bad)
	}
	if err := context.Cause(ctx); err != nil {
		return err
	}
	if s == layout.Following {
		st.Users, st.Edges = users, edges
	}
	st.Written += written.Load()
	st.Refused += refused.Load()
	st.Calls += calls.Load()
	return nil
}

// rebuildChunked sends the total edges of side s of user u, a side of
// several chunks, through add, in calls of up to most edges of one chunk
// each: the chunks of u's view when the side has some already, else
// those lua/bulk.lua makes of a side of total edges (chunksFor). es is
// the buffer add sends, hint the chunk of its edges it tells the script.
func (g *Graph) rebuildChunked(ctx context.Context, src Source, s layout.Side, u fg.UserID, total, most int,
	es *[]bulkEdge, hint *string, add func(fg.UserID, bool) bool) error {
	n := chunksFor(total, g.maxKey)
	v, err := lists.ParseView(g.c.Do(ctx, g.lists.ViewCmd(u)))
	if err != nil {
		return errs.Wrap("rebuild", err)
	}
	if k := v.Chunks(s.Set); k > 1 {
		n = k
	}
	all := make([]bulkEdge, 0, total)
	for e := range sideEdges(s, src, u) {
		if err := checkSourceEdge(u, s, e); err != nil {
			return err
		}
		all = append(all, newBulkEdge(otherOf(s, e), stateOf(e)))
	}
	chunk := func(e bulkEdge) int { return layout.ChunkOf(layout.MemberHash(uint64(e.other)), n) }
	slices.SortStableFunc(all, func(a, b bulkEdge) int { return cmp.Compare(chunk(a), chunk(b)) })
	for len(all) > 0 {
		k := 1
		for k < len(all) && k < most && chunk(all[k]) == chunk(all[0]) {
			k++
		}
		*es = append((*es)[:0], all[:k]...)
		*hint = strconv.Itoa(n) + ":" + strconv.Itoa(chunk(all[0]))
		all = all[k:]
		if !add(u, len(all) == 0) {
			return context.Cause(ctx)
		}
	}
	return nil
}

// chunksFor is the number of chunks lua/bulk.lua makes of a side rebuilt
// into nothing with total edges: the least power of two that keeps each
// at most half full.
func chunksFor(total, bound int) int {
	n := 1
	for float64(total)/float64(n) > float64(bound)/2 {
		n *= 2
	}
	return n
}

// checkSourceEdge returns an error unless e is an edge src may give on
// side s of user u.
func checkSourceEdge(u fg.UserID, s layout.Side, e fg.Event) error {
	own, other := e.User, e.Target
	if s == layout.Followers {
		own, other = other, own
	}
	if own != u || !other.Valid() || other == u || e.Version == 0 || (e.Op != fg.OpFollow && e.Op != fg.OpUnfollow) {
		return fmt.Errorf("the source gave %+v as an edge of the %s of user %d", e, s, u)
	}
	return nil
}

// bulkEdge is an edge as scripts.Bulk takes it: the other user, the version,
// and the state.
type bulkEdge struct {
	other fg.UserID
	v     fg.Version
	state bulkState
}

// bulkState is the state of a bulkEdge, in the order of lua/bulk.lua's
// lists.
type bulkState int8

const (
	bulkLive bulkState = iota // on
	bulkOff                   // off: a tombstone
	bulkNone                  // no record
)

// newBulkEdge returns state st of the edge with other as a bulkEdge.
func newBulkEdge(other fg.UserID, st EdgeState) bulkEdge {
	switch {
	case st.Live:
		return bulkEdge{other, st.Version, bulkLive}
	case st.Version != 0:
		return bulkEdge{other, st.Version, bulkOff}
	}
	return bulkEdge{other, 0, bulkNone}
}

// stateOf returns the state of an edge whose last change is e.
func stateOf(e fg.Event) EdgeState { return EdgeState{e.Version, e.Op.On()} }

// bulkCall is what a call of scripts.Bulk takes besides its edges.
type bulkCall struct {
	horizon string     // "" for Rebuild, else a repair's horizon (16 hex digits)
	clk     fg.Version // the version the user's clock must reach (0: none)
	total   int        // the edges the side will hold, on Rebuild's first call of a side (0 otherwise: lua/bulk.lua makes the side's chunks from it)
	recount bool       // set the counter to the set's size (a repair's last call), rather than move it by the members written
	chunk   string     // "n:j" when every edge is in chunk j of the side's n chunks, else ""
}

// bulkArgs returns scripts.Bulk's arguments for the edges es of side s, in
// call c. It orders es as the script reports on them: live edges,
// tombstones, then the others.
//
// The arguments are substrings of one string, one allocation for all.
func bulkArgs(s layout.Side, es []bulkEdge, call bulkCall) scripts.BulkArgs {
	slices.SortStableFunc(es, func(a, b bulkEdge) int { return cmp.Compare(a.state, b.state) })
	var nl, nv, nt, nn int
	for _, e := range es {
		switch {
		case e.state == bulkLive:
			nl++
			if e.v&(1<<fg.VersionCounterBits-1) != 0 {
				nv++
			}
		case e.state == bulkOff:
			nt++
		default:
			nn++
		}
	}
	c := ""
	if call.clk != 0 {
		c = wire.VersionHex(call.clk)
	}
	rc := "0"
	if call.recount {
		rc = "1"
	}
	args := scripts.BulkArgs{Counter: s.Counter, Horizon: call.horizon, Clock: c, NumLive: strconv.Itoa(nl),
		NumCounted: strconv.Itoa(nv), NumOff: strconv.Itoa(nt), NumNone: strconv.Itoa(nn), Total: strconv.Itoa(call.total),
		Recount: rc, Chunk: call.chunk, Lists: make([]string, 0, 2*nl+2*nv+2*nt+nn)}
	buf := make([]byte, 0, 22*nl+24*nv+24*nt+8*nn)
	ends := make([]int, 0, cap(args.Lists)) // where each argument from the lists ends in buf
	endArg := func() { ends = append(ends, len(buf)) }
	for _, e := range es[:nl] { // L
		buf = strconv.AppendInt(buf, e.v.Millis(), 10)
		endArg()
		buf = wire.AppendMember(buf, e.other)
		endArg()
	}
	for _, e := range es[:nl] { // V
		if e.v&(1<<fg.VersionCounterBits-1) != 0 {
			buf = wire.AppendMember(buf, e.other)
			endArg()
			buf = wire.AppendVersionHex(buf, e.v)
			endArg()
		}
	}
	for _, e := range es[nl : nl+nt] { // T
		buf = wire.AppendMember(buf, e.other)
		endArg()
		buf = wire.AppendVersionHex(buf, e.v)
		endArg()
	}
	for _, e := range es[nl+nt:] { // N
		buf = wire.AppendMember(buf, e.other)
		endArg()
	}
	all := string(buf)
	from := 0
	for _, end := range ends {
		args.Lists = append(args.Lists, all[from:end])
		from = end
	}
	return args
}
