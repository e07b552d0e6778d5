package memgraph

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/internal/pause"
)

// Account states (the domain's state.go; docs/design/memgraph.md,
// "Account states").
//
// A user's state is kept in its rels. An edge that the rule hides (one end
// not active) is hidden: taken out of both sides' sequences, flags and
// counts in one step under both ends' stripe locks, and kept where an off
// edge is kept, at its own version, flagged hidden: a follow as its
// tombstone with hiddenBit set, a block, mute or request as its link with
// hidden set. Every later change of the edge compares its version with the
// hidden one as with any, and replaces it when it is higher.
// The hidden edges are listed in the archive of one end that is not
// active (rels.arch), from which that user's job restores each when it is
// active again, or hands it to the other end if that one is hidden too.
//
// A job is a walk: hiding walks the user's shown edges and archives each
// pair's, restoring walks its archive, deleting does both and drops what it
// finds. Each step settles one pair under its two stripes' locks, the
// locks every write of the pair takes, so no read sees a side without the
// other or a count that is not its list's length. A step finds what the
// rule says now, so a state changed while its job runs turns the walk
// around and nothing is done twice or lost. The jobs are not durable here:
// memgraph is rebuilt from the durable store or the log at start, where
// the states are, and each user who is not active then gets its job again.

// hiddenBit flags a follow tombstone as an archived follow: the edge is
// stored, at the version below the bit, but not shown. Versions use 63
// bits.
const hiddenBit = fg.Version(1) << 63

// archRef names one hidden edge in the archive of one of its ends.
type archRef struct {
	other uint32
	kind  fg.Kind
	out   bool // the edge goes from the archive's user to other
}

// jobBatch is how many pairs a job settles between two looks at what is
// left, each pair under its own locks.
const jobBatch = 256

// jobs is the set of users whose job is not done, each with the generation
// of the change that started it.
type jobs struct {
	mu      sync.Mutex
	gen     uint64
	users   map[uint32]uint64
	wake    chan struct{}
	changed atomic.Int64
}

func (j *jobs) add(d uint32) {
	j.mu.Lock()
	if j.users == nil {
		j.users = make(map[uint32]uint64)
	}
	j.gen++
	j.users[d] = j.gen
	j.mu.Unlock()
	select {
	case j.wake <- struct{}{}:
	default:
	}
}

// next returns a user whose job is not done.
func (j *jobs) next() (uint32, uint64, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for d, gen := range j.users {
		return d, gen, true
	}
	return 0, 0, false
}

// finish ends d's job unless a change started it again since gen.
func (j *jobs) finish(d uint32, gen uint64) {
	j.mu.Lock()
	if j.users[d] == gen {
		delete(j.users, d)
	}
	j.mu.Unlock()
}

func (j *jobs) list() []uint32 {
	j.mu.Lock()
	defer j.mu.Unlock()
	ds := make([]uint32, 0, len(j.users))
	for d := range j.users {
		ds = append(ds, d)
	}
	return ds
}

// stateOf returns d's state. The caller holds d's stripe.
func (g *Graph) stateOf(d uint32) fg.State {
	if r := g.stripe(d).relsOf(d); r != nil {
		return r.state
	}
	return fg.StateActive
}

// active reports whether d is active. The caller holds d's stripe.
func (g *Graph) active(d uint32) bool { return g.stateOf(d).Active() }

// State returns user's state; see followgraph.Graph.
func (g *Graph) State(_ context.Context, user fg.UserID) (fg.AccountState, error) {
	if err := fg.CheckIDs(user); err != nil {
		return fg.AccountState{}, err
	}
	a := fg.AccountState{ID: user}
	if u, ok := g.internal(user); ok {
		g.rlock(u, u)
		a = g.accountState(user, u)
		g.runlock(u, u)
	}
	return a, nil
}

// accountState returns the state of user (internal id u). The caller
// holds u's stripe.
func (g *Graph) accountState(user fg.UserID, u uint32) fg.AccountState {
	a := fg.AccountState{ID: user, Pending: g.pending(u)}
	if r := g.stripe(u).relsOf(u); r != nil && r.stateV != 0 {
		a.State, a.Since = r.state, r.stateV.Time()
	}
	return a
}

// SetState sets user's state; see followgraph.Graph. The state holds when
// it returns; its job is left to RunJobs.
func (g *Graph) SetState(ctx context.Context, user fg.UserID, s fg.State) (fg.AccountState, error) {
	if err := fg.CheckIDs(user); err != nil {
		return fg.AccountState{}, err
	}
	if err := fg.CheckState(s); err != nil {
		return fg.AccountState{}, err
	}
	u := g.intern(user)
	_, err := g.change(ctx, u, u, false, func() (write, error) {
		switch cur := g.stateOf(u); {
		case cur == s:
			return write{}, nil
		case cur == fg.StateDeleted:
			return write{}, fg.ErrTargetInactive
		}
		return write{e: fg.NewStateEvent(user, s, g.tick())}, nil
	})
	if err != nil {
		return fg.AccountState{}, err
	}
	g.rlock(u, u)
	defer g.runlock(u, u)
	return g.accountState(user, u), nil
}

// setState applies a state change of d at version v, and starts d's job.
// The caller holds d's stripe.
func (g *Graph) setState(d uint32, s fg.State, v fg.Version) {
	r := g.stripe(d).relsFor(d)
	if v <= r.stateV {
		return
	}
	r.state, r.stateV = s, v
	g.jobs.add(d)
}

// pending returns how many edges d's job has left. The caller holds d's
// stripe.
func (g *Graph) pending(d uint32) int64 {
	r := g.stripe(d).relsOf(d)
	if r == nil {
		return 0
	}
	n := int64(len(r.arch) + r.restoring)
	if r.state.Active() {
		return n
	}
	if r.state != fg.StateDeleted {
		n = 0
	}
	nd := g.node(d)
	n += int64(nd.out.len() + nd.in.len())
	for _, p := range r.with {
		n += int64(p.shown())
	}
	return n
}

// shown returns how many edges between a user and x the pair holds shown,
// either way.
func (p *pair) shown() int {
	n := count(p.blockedBy) + count(p.requestedBy) + count(p.mutedBy)
	for _, l := range p.out {
		n += count(l.on)
	}
	return n
}

// settle brings the edges between a and b to the rule after a change: if
// either end is not active, every shown edge between them is archived, in
// the archive of an end that is not active; if either is deleted, they
// are removed instead, archived ones too. It returns how many edges it
// changed. The caller holds both stripes.
func (g *Graph) settle(a, b uint32) int {
	sa, sb := g.stateOf(a), g.stateOf(b)
	if sa.Active() && sb.Active() {
		return 0
	}
	keeper := a
	if sa.Active() {
		keeper = b
	}
	gone := sa == fg.StateDeleted || sb == fg.StateDeleted
	n := 0
	for _, d := range [2]edge{{a, b}, {b, a}} {
		x, y := d.user, d.target
		sx := g.stripe(x)
		if at, v, live := g.find(x, y); live {
			g.unlink(x, y, v, at)
			sx.edges--
			tomb := v
			if !gone {
				tomb |= hiddenBit
				g.archive(keeper, x, y, fg.KindFollow)
			}
			sx.setTomb(edge{x, y}, tomb)
			g.staleTombs()
			n++
		} else if v, ok := sx.tombs[edge{x, y}]; ok && gone && v&hiddenBit != 0 {
			sx.tombs[edge{x, y}] = v &^ hiddenBit
			n++
		}
		p := sx.relsOf(x).pair(y)
		if p == nil {
			continue
		}
		for i := range p.out {
			k := fg.Kind(i + int(fg.KindBlock))
			switch l := &p.out[i]; {
			case l.on:
				g.hideLink(k, x, y, !gone)
				if !gone {
					g.archive(keeper, x, y, k)
				}
				n++
			case l.hidden && gone:
				l.hidden = false
				n++
			}
		}
	}
	return n
}

// archive lists the hidden edge x→y of kind k in keeper's archive
// (keeper is x or y).
func (g *Graph) archive(keeper, x, y uint32, k fg.Kind) {
	ref := archRef{other: y, kind: k, out: true}
	if keeper == y {
		ref = archRef{other: x, kind: k}
	}
	r := g.stripe(keeper).relsFor(keeper)
	r.arch = append(r.arch, ref)
}

func (s *stripe) setTomb(k edge, v fg.Version) {
	if s.tombs == nil {
		s.tombs = make(map[edge]fg.Version)
	}
	s.tombs[k] = v
	s.tombPeak = max(s.tombPeak, int32(len(s.tombs)))
}

// hideLink turns the shown edge x→y of kind k off, undoing what it sets at
// y, and flags it archived when keep is set. The caller holds both stripes.
func (g *Graph) hideLink(k fg.Kind, x, y uint32, keep bool) {
	rx := g.stripe(x).relsOf(x)
	l := &rx.with[y].out[linkIndex(k)]
	l.on, l.hidden = false, keep
	g.linkAtOther(k, rx, x, y, false, l.since)
}

// showLink turns the hidden edge x→y of kind k on again.
func (g *Graph) showLink(k fg.Kind, x, y uint32) {
	rx := g.stripe(x).relsOf(x)
	l := &rx.with[y].out[linkIndex(k)]
	l.on, l.hidden = true, false
	g.linkAtOther(k, rx, x, y, true, l.since)
}

// linkAtOther sets at y what an edge x→y of kind k being on or off sets
// there, and the request counts. rx is x's rels.
func (g *Graph) linkAtOther(k fg.Kind, rx *rels, x, y uint32, on bool, since int64) {
	ry := g.stripe(y).relsFor(y)
	py := ry.pairFor(x)
	switch k {
	case fg.KindBlock:
		py.blockedBy = on
	case fg.KindMute:
		py.mutedBy = on
	case fg.KindRequest:
		py.requestedBy, py.reqSince = on, since
		d := 1
		if !on {
			d = -1
		}
		rx.reqOut += d
		ry.reqIn += d
	}
}

// hidden reports whether the edge x→y of kind k is archived. The caller
// holds x's stripe.
func (g *Graph) hidden(k fg.Kind, x, y uint32) bool {
	sx := g.stripe(x)
	if k == fg.KindFollow {
		return sx.tombs[edge{x, y}]&hiddenBit != 0
	}
	return sx.relsOf(x).link(k, y).hidden
}

// restore brings back the hidden edge of ref from d's archive, hands
// it to the other end's archive, drops it, or keeps it, as the two ends'
// states say now. It returns whether it changed an edge. The caller
// holds the stripes of d and ref.other.
func (g *Graph) restore(d uint32, ref archRef) bool {
	x, y := d, ref.other
	if !ref.out {
		x, y = y, x
	}
	if !g.hidden(ref.kind, x, y) {
		return false // changed since it was archived
	}
	sd, so := g.stateOf(d), g.stateOf(ref.other)
	switch {
	case sd == fg.StateDeleted || so == fg.StateDeleted:
		g.unhide(ref.kind, x, y)
	case !sd.Active():
		g.archive(d, x, y, ref.kind) // d is hidden again: its next job restores it
		return false
	case !so.Active():
		g.archive(ref.other, x, y, ref.kind)
		return false
	case ref.kind == fg.KindFollow:
		sx := g.stripe(x)
		v := sx.tombs[edge{x, y}] &^ hiddenBit
		delete(sx.tombs, edge{x, y})
		at, _, _ := g.find(x, y)
		g.link(x, y, v, at)
		sx.edges++
	default:
		g.showLink(ref.kind, x, y)
	}
	return true
}

// unhide drops the hidden flag of the hidden edge x→y of kind k: it
// stays off at its version.
func (g *Graph) unhide(k fg.Kind, x, y uint32) {
	sx := g.stripe(x)
	if k == fg.KindFollow {
		sx.tombs[edge{x, y}] &^= hiddenBit
		return
	}
	sx.relsOf(x).with[y].out[linkIndex(k)].hidden = false
}

// RunJobs runs the jobs of account states until ctx ends; see
// followgraph.JobRunner. One user's job at a time, jobBatch pairs a step.
func (g *Graph) RunJobs(ctx context.Context, rate int) error {
	for {
		d, gen, ok := g.jobs.next()
		if !ok {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-g.jobs.wake:
				continue
			}
		}
		p := newPacer(rate)
		for {
			if err := ctx.Err(); err != nil {
				return err
			}
			n, done := g.jobStep(d, p.batch())
			g.jobs.changed.Add(int64(n))
			if done {
				g.jobs.finish(d, gen)
				break
			}
			if err := p.wait(ctx, n); err != nil {
				return err
			}
		}
	}
}

// JobStats returns what the jobs are doing; see followgraph.JobRunner.
func (g *Graph) JobStats() fg.JobStats {
	ds := g.jobs.list()
	st := fg.JobStats{Running: len(ds), Changed: g.jobs.changed.Load()}
	for _, d := range ds {
		g.rlock(d, d)
		st.Pending += g.pending(d)
		g.runlock(d, d)
	}
	return st
}

// jobStep settles up to max of d's pairs, as d's state says now, and
// returns how many edges it changed and whether the job is done.
func (g *Graph) jobStep(d uint32, max int) (int, bool) {
	g.lock(d, d)
	st := g.stateOf(d)
	var refs []archRef
	if r := g.stripe(d).relsOf(d); r != nil && (st.Active() || st == fg.StateDeleted) {
		i := len(r.arch) - min(len(r.arch), max)
		refs = append(refs, r.arch[i:]...)
		r.arch = r.arch[:i:i] // a later append copies: refs stays ours
		r.restoring += len(refs)
	}
	var others []uint32
	if !st.Active() && len(refs) < max {
		others = g.shownWith(d, max-len(refs))
	}
	g.unlock(d, d)
	if len(refs) == 0 && len(others) == 0 {
		return 0, true
	}
	n := 0
	for _, ref := range refs {
		g.lock(d, ref.other)
		if g.restore(d, ref) {
			n++
		}
		g.stripe(d).relsOf(d).restoring--
		g.unlock(d, ref.other)
		runtime.Gosched()
	}
	for _, x := range others {
		g.lock(d, x)
		n += g.settle(d, x)
		g.unlock(d, x)
		runtime.Gosched()
	}
	return n, false
}

// shownWith returns up to max users with whom d has shown edges: the
// newest followers and followees first. The caller holds d's stripe.
func (g *Graph) shownWith(d uint32, max int) []uint32 {
	nd := g.node(d)
	xs := make([]uint32, 0, max)
	nd.in.descend(nd.in.end(), func(e inEdge) bool {
		xs = append(xs, e.id())
		return len(xs) < max
	})
	if len(xs) < max {
		nd.outT.descend(nd.outT.end(), func(t uint32) bool {
			xs = append(xs, t)
			return len(xs) < max
		})
	}
	if r := g.stripe(d).relsOf(d); r != nil && len(xs) < max {
		for x, p := range r.with {
			if p.shown() > 0 {
				if xs = append(xs, x); len(xs) == max {
					break
				}
			}
		}
	}
	return xs
}

// pacer keeps a job's steps at a rate of edges a second (0: none).
type pacer struct {
	rate  int
	start time.Time
	n     int64
}

func newPacer(rate int) *pacer { return &pacer{rate: rate, start: time.Now()} }

// batch is how many pairs a step may settle: about a tenth of a second's
// worth at the rate.
func (p *pacer) batch() int {
	if p.rate <= 0 {
		return jobBatch
	}
	return max(1, min(jobBatch, p.rate/10))
}

// wait sleeps until n more edges are within the rate.
func (p *pacer) wait(ctx context.Context, n int) error {
	if p.rate <= 0 {
		return ctx.Err()
	}
	p.n += int64(n)
	due := p.start.Add(time.Duration(float64(p.n) / float64(p.rate) * float64(time.Second)))
	d := time.Until(due)
	if d <= 0 {
		return ctx.Err()
	}
	return pause.For(ctx, d)
}
