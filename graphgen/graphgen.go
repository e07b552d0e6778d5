// Package graphgen generates seeded, reproducible follow graphs shaped like
// real ones: power-law out-degrees (the median user follows a fraction of
// the mean, a few follow thousands) and Zipf popularity (a few celebrities
// are followed by a large share of all users).
//
// Generation streams: edges are produced one follower at a time from a
// random generator seeded by (Config.Seed, follower), so memory does not
// grow with the number of edges, the output depends on the Config alone,
// and disjoint ranges of followers can be produced in parallel with one
// Generator per goroutine.
package graphgen

import (
	"fmt"
	"iter"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/followgraph/followgraph"
)

// Config describes a graph. Zero fields take the defaults documented on
// each; Validate reports a config that cannot be generated.
type Config struct {
	Users  int     // number of users; ids are 1..Users (default: Edges/50 when 0)
	Edges  int     // approximate total number of edges (the result is within a few % of this)
	Seed   uint64  // the same Config always yields the same edges
	OutExp float64 // power-law exponent of out-degrees, > 1 (default 2.0 when 0)
	InExp  float64 // Zipf exponent of popularity, > 1 (default 1.1 when 0)
	MaxOut int     // cap on one user's out-degree, below Users; near Users is slow (default Users/10, at least 20 × the mean, when 0)
	Start  int64   // follow times, unix ms, are uniform in [Start, End)
	End    int64   // (default when both are 0: the 3 years before 2026-01-01 UTC)
}

// Default returns a config of about n edges with Users = n/50, a mean
// out-degree of 50, and every other field at its default.
func Default(n int, seed uint64) Config {
	return Config{Users: n / 50, Edges: n, Seed: seed}
}

// Edge is one follow: Follower has followed Followee since Millis (unix ms).
type Edge struct {
	Follower followgraph.UserID
	Followee followgraph.UserID
	Millis   int64
}

var (
	defaultStart = time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	defaultEnd   = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
)

// withDefaults returns c with its zero fields replaced by their defaults.
func (c Config) withDefaults() Config {
	if c.Users == 0 {
		c.Users = c.Edges / 50
	}
	if c.OutExp == 0 {
		c.OutExp = 2.0
	}
	if c.InExp == 0 {
		c.InExp = 1.1
	}
	if c.MaxOut == 0 {
		// A tenth of the users, but room for a heavy tail in small graphs
		// too: at least 20 times the mean, and never all users.
		c.MaxOut = max(1, min(c.Users-1, max(c.Users/10, 20*c.Edges/max(c.Users, 1))))
	}
	if c.Start == 0 && c.End == 0 {
		c.Start, c.End = defaultStart, defaultEnd
	}
	return c
}

// Validate returns an error unless c, with its defaults applied, can be
// generated: at least 2 users, exponents above 1, 1 <= MaxOut < Users,
// Start < End, and a mean out-degree Edges/Users that the out-degree law
// can reach with a minimum degree of 1 and a maximum of MaxOut.
func (c Config) Validate() error {
	_, err := newPlan(c)
	return err
}

// Edges yields every edge of the graph c describes exactly once: no self
// edges, no duplicate (Follower, Followee) pairs, ordered by Follower and
// then by Followee. Each iteration generates the edges afresh (the same
// edges every time); it holds one follower's edges at a time, so memory
// grows with MaxOut, not with Edges. Edges panics if c is not valid; see
// Config.Validate.
//
// (It is a function, not a method, because Config.Edges is the field.)
func Edges(c Config) iter.Seq[Edge] {
	p, err := newPlan(c)
	if err != nil {
		panic(err)
	}
	return func(yield func(Edge) bool) {
		g := p.generator()
		var buf []Edge
		for u := 1; u <= p.cfg.Users; u++ {
			buf = g.AppendEdges(buf[:0], followgraph.UserID(u))
			for _, e := range buf {
				if !yield(e) {
					return
				}
			}
		}
	}
}

// Generator produces the edges of one follower at a time. The edges of a
// follower depend only on the Config and the follower, so Generators made
// from the same Config agree, and each can serve a share of the followers.
// A Generator is not safe for concurrent use: make one per goroutine.
type Generator struct {
	p    *plan
	pcg  *rand.PCG
	rng  *rand.Rand
	tail *rand.Zipf // popularity ranks from len(p.headCDF) on
	set  rankSet
	ids  []followgraph.UserID
}

// New returns a Generator for c, or the error of c.Validate.
func New(c Config) (*Generator, error) {
	p, err := newPlan(c)
	if err != nil {
		return nil, err
	}
	return p.generator(), nil
}

// Config returns the config g generates, with its defaults applied.
func (g *Generator) Config() Config { return g.p.cfg }

// AppendEdges appends the edges of follower to dst, ordered by Followee,
// and returns the extended slice. It appends nothing for an id outside
// 1..Users.
func (g *Generator) AppendEdges(dst []Edge, follower followgraph.UserID) []Edge {
	p := g.p
	if follower < 1 || int64(follower) > int64(p.cfg.Users) {
		return dst
	}
	u := uint64(follower) - 1
	g.pcg.Seed(p.seedHi, mix64(p.seedLo+u))

	d := p.outDegree(u, g.rng.Float64())
	self := p.popularity.inverse(u) // the follower's own popularity rank
	g.set.reset(d)
	g.ids = g.ids[:0]
	misses := 0
	for len(g.ids) < d {
		var r uint64
		if misses < maxMisses {
			r = g.popularRank()
		} else {
			// The popular ranks are taken: a uniform draw is accepted with
			// probability at least 1-(MaxOut+1)/Users, which ends quickly
			// while MaxOut is well below Users.
			r = g.rng.Uint64N(p.n)
		}
		if r == self || !g.set.add(r) {
			misses++
			continue
		}
		misses = 0
		g.ids = append(g.ids, followgraph.UserID(p.popularity.at(r)+1))
	}
	slices.Sort(g.ids)
	span := p.cfg.End - p.cfg.Start
	for _, id := range g.ids {
		dst = append(dst, Edge{Follower: follower, Followee: id, Millis: p.cfg.Start + g.rng.Int64N(span)})
	}
	return dst
}

// popularRank draws a 0-based popularity rank r with probability
// proportional to (r+1)^-InExp: from the table when it falls among the
// most popular ranks, else from rand.Zipf shifted past them.
func (g *Generator) popularRank() uint64 {
	cdf := g.p.headCDF
	if u := g.rng.Float64(); u < cdf[len(cdf)-1] {
		i := g.p.headGuide[int(u*float64(len(g.p.headGuide)))]
		for cdf[i] <= u {
			i++
		}
		return uint64(i)
	}
	return uint64(len(cdf)) + g.tail.Uint64()
}

// maxMisses is how many Zipf draws in a row may be rejected (self or
// already followed) before a follower draws uniformly instead. Only users
// of very high out-degree ever reach it.
const maxMisses = 32

// plan is what every Generator of one Config shares; it is immutable.
type plan struct {
	cfg            Config
	n              uint64    // Users
	outB           float64   // OutExp-1, the exponent of the out-degree tail
	xmin, xmax     float64   // the out-degree law's continuous range [xmin, MaxOut+1)
	strata         perm      // follower -> out-degree stratum
	popularity     perm      // popularity rank -> follower (0-based)
	headCDF        []float64 // headCDF[i] = P(rank <= i) for the most popular ranks
	headGuide      []int32   // headGuide[j] = the least i with headCDF[i] > j/len(headGuide)
	seedHi, seedLo uint64
}

// headRanks is how many of the most popular ranks are drawn from a table;
// with the default InExp they take most of the draws, and the table saves
// rand.Zipf's exp and log on each of those. The guide table makes finding a
// rank in the table a step or two (Chen's method).
const headRanks = 1 << 14

func newPlan(c Config) (*plan, error) {
	c = c.withDefaults()
	switch {
	case c.Users < 2:
		return nil, fmt.Errorf("graphgen: %d users: need at least 2", c.Users)
	case c.Edges < 1:
		return nil, fmt.Errorf("graphgen: %d edges: need at least 1", c.Edges)
	case !(c.OutExp > 1) || math.IsInf(c.OutExp, 0):
		return nil, fmt.Errorf("graphgen: OutExp %g: must be finite and above 1", c.OutExp)
	case !(c.InExp > 1) || math.IsInf(c.InExp, 0):
		return nil, fmt.Errorf("graphgen: InExp %g: must be finite and above 1", c.InExp)
	case c.MaxOut < 1 || c.MaxOut >= c.Users:
		return nil, fmt.Errorf("graphgen: MaxOut %d: must be from 1 to Users-1 (%d)", c.MaxOut, c.Users-1)
	case c.Start >= c.End || c.End-c.Start < 0: // the second catches overflow
		return nil, fmt.Errorf("graphgen: times [%d, %d): Start must be before End", c.Start, c.End)
	}
	p := &plan{
		cfg:    c,
		n:      uint64(c.Users),
		outB:   c.OutExp - 1,
		xmax:   float64(c.MaxOut) + 1,
		seedHi: mix64(c.Seed ^ 0x6a09e667f3bcc908),
		seedLo: mix64(c.Seed ^ 0xbb67ae8584caa73b),
	}
	p.strata = newPerm(p.n, mix64(c.Seed^0x3c6ef372fe94f82b))
	p.popularity = newPerm(p.n, mix64(c.Seed^0xa54ff53a5f1d36f1))
	xmin, err := p.solveXmin(float64(c.Edges) / float64(c.Users))
	if err != nil {
		return nil, err
	}
	p.xmin = xmin
	total := sumPow(1, c.Users, c.InExp)
	p.headCDF = make([]float64, min(headRanks, c.Users))
	cum := 0.0
	for i := range p.headCDF {
		cum += math.Pow(float64(i+1), -c.InExp)
		p.headCDF[i] = cum / total
	}
	if len(p.headCDF) == c.Users {
		p.headCDF[len(p.headCDF)-1] = 1
	}
	p.headGuide = make([]int32, 4*len(p.headCDF))
	i := 0
	for j := range p.headGuide {
		for i < len(p.headCDF)-1 && p.headCDF[i] <= float64(j)/float64(len(p.headGuide)) {
			i++
		}
		p.headGuide[j] = int32(i)
	}
	return p, nil
}

func (p *plan) generator() *Generator {
	pcg := rand.NewPCG(0, 0)
	rng := rand.New(pcg)
	g := &Generator{p: p, pcg: pcg, rng: rng}
	if head := uint64(len(p.headCDF)); head < p.n {
		// P(k) ∝ (head+1+k)^-InExp is the law of rank head+k.
		g.tail = rand.NewZipf(rng, p.cfg.InExp, float64(head+1), p.n-1-head)
	}
	return g
}

// The out-degree law: a continuous power law X with density proportional
// to x^-OutExp on [xmin, MaxOut+1), and the out-degree is floor(X), so it
// runs from floor(xmin) >= 1 to MaxOut. xmin is solved for so that the
// mean out-degree is Edges/Users. Each follower draws X by inverting the
// CDF at a stratified point: follower u gets the stratum strata(u) of
// [0,1) cut into Users equal parts, and a uniform point in it. The degrees
// are then a shuffled sample of every quantile of the law, so their total
// is within a fraction of a percent of Edges, where independent draws of
// a tail this heavy would scatter it by a few percent.

// outDegree returns the out-degree of follower u (0-based) given a uniform
// v in [0,1).
func (p *plan) outDegree(u uint64, v float64) int {
	q := (float64(p.strata.at(u)) + v) / float64(p.n)
	d := int(p.quantile(q))
	return min(max(d, 1), p.cfg.MaxOut)
}

// quantile returns the q-quantile of X.
func (p *plan) quantile(q float64) float64 {
	lo, hi := math.Pow(p.xmin, -p.outB), math.Pow(p.xmax, -p.outB)
	return math.Pow(lo-q*(lo-hi), -1/p.outB)
}

// meanDegree returns E[floor(X)] when X starts at xmin:
// the sum over k = 1..MaxOut of P(X >= k).
func (p *plan) meanDegree(xmin float64) float64 {
	b, maxOut := p.outB, p.cfg.MaxOut
	lo, hi := math.Pow(xmin, -b), math.Pow(p.xmax, -b)
	k0 := int(xmin) // P(X >= k) = 1 for k <= k0
	if k0 >= maxOut {
		return float64(maxOut)
	}
	tail := sumPow(k0+1, maxOut, b) - float64(maxOut-k0)*hi
	return float64(k0) + tail/(lo-hi)
}

// solveXmin returns the xmin whose mean out-degree is mean.
func (p *plan) solveXmin(mean float64) (float64, error) {
	least, most := p.meanDegree(1), float64(p.cfg.MaxOut)
	if mean < least*0.999 || mean > most {
		return 0, fmt.Errorf("graphgen: %d edges over %d users is a mean out-degree of %.4g; "+
			"with OutExp %g and MaxOut %d it must be from %.4g to %d: change Edges, Users or MaxOut",
			p.cfg.Edges, p.cfg.Users, mean, p.cfg.OutExp, p.cfg.MaxOut, least, p.cfg.MaxOut)
	}
	lo, hi := 1.0, p.xmax
	for range 100 { // the mean grows with xmin
		mid := (lo + hi) / 2
		if p.meanDegree(mid) < mean {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, nil
}

// sumPow returns the sum of k^-s for k = a..b (0 when b < a), exactly for
// small k and by the Euler-Maclaurin formula beyond, which is accurate to
// about 1e-12 relative there.
func sumPow(a, b int, s float64) float64 {
	const direct = 128
	sum := 0.0
	for ; a <= b && a < direct; a++ {
		sum += math.Pow(float64(a), -s)
	}
	if a > b {
		return sum
	}
	lo, hi := float64(a), float64(b)
	f := func(x float64) float64 { return math.Pow(x, -s) }
	df := func(x float64) float64 { return -s * math.Pow(x, -s-1) }
	var integral float64
	if math.Abs(s-1) < 1e-12 {
		integral = math.Log(hi / lo)
	} else {
		integral = (math.Pow(hi, 1-s) - math.Pow(lo, 1-s)) / (1 - s)
	}
	return sum + integral + (f(lo)+f(hi))/2 + (df(hi)-df(lo))/12
}

// perm is a seeded pseudo-random permutation of [0, n): a 4-round
// balanced Feistel network on the smallest even number of bits that holds
// n-1, with cycle walking back into [0, n). It needs no table, so a
// permutation of billions of users costs nothing to build or hold.
type perm struct {
	n    uint64
	half uint // bits in each half
	mask uint64
	keys [4]uint64
}

func newPerm(n, seed uint64) perm {
	half := uint(1)
	for half < 32 && n-1 >= 1<<(2*half) {
		half++
	}
	p := perm{n: n, half: half, mask: 1<<half - 1}
	for i := range p.keys {
		seed = mix64(seed + 0x9e3779b97f4a7c15)
		p.keys[i] = seed
	}
	return p
}

// at returns the image of x, which must be in [0, n).
func (p perm) at(x uint64) uint64 {
	for {
		l, r := x>>p.half, x&p.mask
		for _, k := range p.keys {
			l, r = r, l^(mix64(r^k)&p.mask)
		}
		x = l<<p.half | r
		if x < p.n {
			return x
		}
	}
}

// inverse returns the x whose image is y, which must be in [0, n).
func (p perm) inverse(y uint64) uint64 {
	for {
		l, r := y>>p.half, y&p.mask
		for i := len(p.keys) - 1; i >= 0; i-- {
			l, r = r^(mix64(l^p.keys[i])&p.mask), l
		}
		y = l<<p.half | r
		if y < p.n {
			return y
		}
	}
}

// mix64 is the SplitMix64 finalizer: a bijection of uint64 that spreads
// every input bit over every output bit.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// rankSet is a set of popularity ranks: open addressing on a power-of-two
// table at most half full, cleared in time proportional to its size, and
// reused from follower to follower.
type rankSet struct {
	slots []uint64 // rank+1, or 0 when empty
	shift uint
}

// reset empties the set and sizes it for up to n ranks.
func (s *rankSet) reset(n int) {
	size, shift := 16, uint(60)
	for size < 2*n {
		size, shift = size*2, shift-1
	}
	if cap(s.slots) < size {
		s.slots = make([]uint64, size)
	}
	s.slots, s.shift = s.slots[:size], shift
	clear(s.slots)
}

// add inserts r and reports whether it was absent.
func (s *rankSet) add(r uint64) bool {
	key := r + 1
	mask := uint64(len(s.slots) - 1)
	for i := (key * 0x9e3779b97f4a7c15) >> s.shift; ; i = (i + 1) & mask {
		switch s.slots[i] {
		case 0:
			s.slots[i] = key
			return true
		case key:
			return false
		}
	}
}
