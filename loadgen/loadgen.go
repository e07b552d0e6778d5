// Package loadgen drives a running followgraph server with a read or
// write mix, as `followgraph bench` does, and measures per kind of request
// the answers, the rate and the latency (see Config).
//
// It speaks HTTP/1.1 over a minimal client of its own (conn.go) rather
// than net/http's: the generator shares the machine with the server it
// measures, and takes about a fifth less CPU per request so
// (docs/BENCHMARKS.md, "The service").
package loadgen

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Config is what a run is told.
type Config struct {
	URL         string        `json:"url"`
	Duration    time.Duration `json:"duration_ns"`
	Concurrency int           `json:"concurrency"`
	Rate        float64       `json:"rate"`  // requests per second on an open-loop schedule; 0: closed loop, as fast as possible
	Mix         string        `json:"mix"`   // reads or writes
	Users       int           `json:"users"` // ids are drawn from 1..Users
	Skew        float64       `json:"skew"`  // Zipf exponent of the ids' popularity, > 1; 0: uniform
	Seed        uint64        `json:"seed"`
	// TLS is the client's TLS configuration for an https:// URL (roots, a
	// client certificate); nil: the system's roots.
	TLS *tls.Config `json:"-"`
	// Token is sent as the bearer token of every request, when set.
	Token string `json:"-"`
}

// Validate reports a configuration that cannot run.
func (c Config) Validate() error {
	u, err := url.Parse(c.URL)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return fmt.Errorf("loadgen: URL %q: want http://host:port or https://host:port", c.URL)
	case c.Duration <= 0 || c.Concurrency < 1 || c.Rate < 0:
		return errors.New("loadgen: the duration and the concurrency must be positive, the rate not negative")
	case c.Mix != "reads" && c.Mix != "writes":
		return fmt.Errorf("loadgen: mix %q: want reads or writes", c.Mix)
	case c.Users < 2:
		return errors.New("loadgen: users: want at least 2")
	case c.Skew != 0 && c.Skew <= 1:
		return fmt.Errorf("loadgen: skew %g: want 0 (uniform) or more than 1", c.Skew)
	}
	return nil
}

// The kinds of request; a first page and the page after it are told apart.
type kind int

const (
	kindFollowing kind = iota
	kindFollowingNext
	kindFollowers
	kindFollowersNext
	kindRelations
	kindCountsMany
	kindCountsOne
	kindMutuals
	kindCommonFollowing
	kindKnownFollowers
	kindFollow
	kindUnfollow
	kindBlock
	kindRequest
	numKinds
)

var kindNames = [numKinds]string{"following", "following+cursor", "followers", "followers+cursor",
	"relations(20)", "counts(10)", "counts(1)", "mutuals", "common-following", "known-followers", "follow", "unfollow",
	"block", "request"}

// PrivateTargets is how many users the writes mix makes private at its
// start, the targets of its follow requests: the last ids, 1..Users
// being drawn with the popular ones first, so that few of the other
// follows meet them.
const PrivateTargets = 8

// hist counts latencies in nanoseconds, histSub buckets per power of two,
// so a percentile is within 1/histSub (3%) of the true value.
const histSub = 32

type hist [62 * histSub]atomic.Int64

func bucket(ns int64) int {
	if ns < 2*histSub {
		return int(max(ns, 0))
	}
	shift := bits.Len64(uint64(ns)) - 6 // ns>>shift is in [histSub, 2*histSub)
	return shift*histSub + int(ns>>shift)
}

// quantile returns the upper edge of the bucket holding the q-quantile.
func (h *hist) quantile(q float64, n int64) time.Duration {
	rank := max(1, int64(q*float64(n)+0.999999))
	for b := range h {
		if rank -= h[b].Load(); rank <= 0 {
			if b < 2*histSub {
				return time.Duration(b)
			}
			shift := b/histSub - 1
			return time.Duration((int64(b%histSub+histSub+1) << shift) - 1)
		}
	}
	return 0
}

type kindStats struct {
	ok, non2xx, errs, changed, refused atomic.Int64
	maxNs                              atomic.Int64
	hist                               hist
}

func (s *kindStats) observe(d time.Duration) {
	s.ok.Add(1)
	s.hist[bucket(int64(d))].Add(1)
	for m := s.maxNs.Load(); int64(d) > m && !s.maxNs.CompareAndSwap(m, int64(d)); m = s.maxNs.Load() {
	}
}

// generator is one run: its client, and what it has seen so far.
type generator struct {
	cfg   Config
	addr  string // host:port of the server
	https bool
	stats [numKinds]kindStats
	lag   kindStats // open loop: from a request's scheduled start to when it is sent

	mu       sync.Mutex
	statuses map[int]int64
	firstErr string
}

func (g *generator) failed(k kind, status int, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err != nil {
		g.stats[k].errs.Add(1)
		if g.firstErr == "" {
			g.firstErr = err.Error()
		}
		return
	}
	g.stats[k].non2xx.Add(1)
	g.statuses[status]++
}

// conn returns a new connection of the run (dialed at its first request).
func (g *generator) conn() conn {
	c := conn{addr: g.addr}
	if g.https {
		c.tls = g.cfg.TLS
		if c.tls == nil {
			c.tls = &tls.Config{}
		}
		if c.tls.ServerName == "" {
			c.tls = c.tls.Clone()
			c.tls.ServerName, _, _ = net.SplitHostPort(g.addr)
		}
	}
	if g.cfg.Token != "" {
		c.header = []byte("Authorization: Bearer " + g.cfg.Token + "\r\n")
	}
	return c
}

// makePrivate makes the PrivateTargets last users private, through c,
// for the writes mix's follow requests.
func (g *generator) makePrivate(c *conn, body *bytes.Buffer) error {
	for i := range g.privateTargets() {
		u := uint64(g.cfg.Users - i)
		path := strconv.AppendUint([]byte("/v1/users/"), u, 10)
		status, err := c.do(http.MethodPut, append(path, "/settings"...), []byte(`{"private":true}`), time.Now().Add(5*time.Second), body)
		if err != nil {
			return err
		}
		if status != http.StatusOK {
			return fmt.Errorf("making user %d private: %s answers %d: %.200s", u, g.cfg.URL, status, body.Bytes())
		}
	}
	return nil
}

// privateTargets returns how many users the writes mix makes private:
// PrivateTargets, or fewer than half the users.
func (g *generator) privateTargets() int { return min(PrivateTargets, g.cfg.Users/2) }

// Run drives cfg.URL with cfg's mix until cfg.Duration has passed or
// ctx ends, then waits up to a second for the requests in flight. It
// returns an error only when the run could not start.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("loadgen: %w", err)
	}
	g := &generator{cfg: cfg, addr: u.Host, https: u.Scheme == "https", statuses: map[int]int64{}}
	probe := g.conn()
	var body bytes.Buffer
	status, err := probe.do(http.MethodGet, []byte("/readyz"), nil, time.Now().Add(5*time.Second), &body)
	if err == nil && status == http.StatusOK && cfg.Mix == "writes" {
		err = g.makePrivate(&probe, &body)
	}
	probe.close()
	if err != nil {
		return nil, fmt.Errorf("loadgen: %w", err)
	}
	if status != http.StatusOK {
		return nil, fmt.Errorf("loadgen: %s/readyz answers %d", cfg.URL, status)
	}

	start := time.Now()
	end := start.Add(cfg.Duration)
	runCtx, stopRun := context.WithDeadline(ctx, end) // no request starts after end
	defer stopRun()
	deadline := end.Add(time.Second) // no request runs much longer
	var tickets chan time.Time
	if cfg.Rate > 0 {
		tickets = make(chan time.Time, cfg.Concurrency)
		go schedule(runCtx, tickets, start, end, cfg.Rate)
	}
	var wg sync.WaitGroup
	for i := range cfg.Concurrency {
		w := &worker{g: g, conn: g.conn(), rng: rand.New(rand.NewPCG(cfg.Seed, uint64(i)))}
		if cfg.Skew > 0 {
			w.zipf = rand.NewZipf(w.rng, cfg.Skew, 10, uint64(cfg.Users-1))
		}
		wg.Go(func() { w.run(runCtx, deadline, tickets) })
	}
	wg.Wait()
	return g.result(time.Since(start)), nil
}

// schedule sends the scheduled start of each request, rate per second
// from start until end, sending late ones as soon as it can.
func schedule(ctx context.Context, tickets chan<- time.Time, start, end time.Time, rate float64) {
	defer close(tickets)
	interval := float64(time.Second) / rate
	for i := 0; ; i++ {
		at := start.Add(time.Duration(float64(i) * interval))
		if !at.Before(end) {
			return
		}
		if d := time.Until(at); d > 0 {
			select {
			case <-time.After(d):
			case <-ctx.Done():
				return
			}
		}
		select {
		case tickets <- at:
		case <-ctx.Done():
			return
		}
	}
}

// worker is one client, sending one request at a time.
type worker struct {
	g        *generator
	conn     conn
	rng      *rand.Rand
	zipf     *rand.Zipf // nil: uniform ids
	url      []byte     // the path and query of the next request
	body     bytes.Buffer
	cursors  [2][]userCursor // next_cursors of recent first pages: of following, of followers
	followed [][2]uint64     // recent follows, to unfollow
}

type userCursor struct {
	user   uint64
	cursor string
}

const (
	maxCursors  = 16   // next_cursors a reader keeps per direction
	maxFollowed = 1024 // recent follows a writer keeps
)

// keep appends v to s, or puts it in a random place once s has n elements.
func keep[T any](rng *rand.Rand, s []T, v T, n int) []T {
	if len(s) < n {
		return append(s, v)
	}
	s[rng.IntN(n)] = v
	return s
}

func (w *worker) run(runCtx context.Context, deadline time.Time, tickets <-chan time.Time) {
	defer w.conn.close()
	for runCtx.Err() == nil {
		from := time.Now()
		if tickets != nil {
			select {
			case at, ok := <-tickets:
				if !ok {
					return
				}
				w.g.lag.observe(time.Since(at))
				from = at
			case <-runCtx.Done():
				return
			}
		}
		w.send(deadline, from)
	}
}

func (w *worker) id() uint64 {
	if w.zipf != nil {
		return 1 + w.zipf.Uint64()
	}
	return 1 + w.rng.Uint64N(uint64(w.g.cfg.Users))
}

// other returns an id that is not u.
func (w *worker) other(u uint64) uint64 {
	for {
		if t := w.id(); t != u {
			return t
		}
	}
}

func (w *worker) appendIDs(p []byte, n int) []byte {
	for i := range n {
		if i > 0 {
			p = append(p, ',')
		}
		p = strconv.AppendUint(p, w.id(), 10)
	}
	return p
}

// next puts the URL of the next request of the mix in w.url and returns its
// kind, method and user.
func (w *worker) next() (kind, string, uint64) {
	p := append(w.url[:0], "/v1/users/"...)
	defer func() { w.url = p }() // whichever return is taken
	u := w.id()
	r := w.rng.IntN(100)
	if w.g.cfg.Mix == "writes" {
		t := w.other(u)
		switch {
		case r < 2:
			p = strconv.AppendUint(append(strconv.AppendUint(p, u, 10), "/blocks/"...), t, 10)
			return kindBlock, http.MethodPut, u
		case r < 7:
			if t = uint64(w.g.cfg.Users - w.rng.IntN(w.g.privateTargets())); t == u {
				t--
			}
			p = strconv.AppendUint(append(strconv.AppendUint(p, u, 10), "/following/"...), t, 10)
			return kindRequest, http.MethodPut, u
		case r < 70:
			w.followed = keep(w.rng, w.followed, [2]uint64{u, t}, maxFollowed)
		default:
			if n := len(w.followed); n > 0 {
				i := w.rng.IntN(n)
				u, t = w.followed[i][0], w.followed[i][1]
				w.followed[i] = w.followed[n-1]
				w.followed = w.followed[:n-1]
			}
		}
		p = strconv.AppendUint(append(strconv.AppendUint(p, u, 10), "/following/"...), t, 10)
		if r < 70 {
			return kindFollow, http.MethodPut, u
		}
		return kindUnfollow, http.MethodDelete, u
	}
	switch {
	case r < 40:
		// Most lists fit in one page: second pages are of lists that had one.
		dir := w.rng.IntN(2)
		k := kindFollowing + kind(2*dir)
		var cursor string
		if cs := w.cursors[dir]; len(cs) > 0 && w.rng.IntN(2) == 0 {
			c := cs[w.rng.IntN(len(cs))]
			u, cursor, k = c.user, c.cursor, k+1
		}
		p = strconv.AppendUint(p, u, 10)
		p = append(p, [2]string{"/following?limit=20", "/followers?limit=20"}[dir]...)
		if cursor != "" {
			p = append(append(p, "&cursor="...), cursor...)
		}
		return k, http.MethodGet, u
	case r < 70:
		p = w.appendIDs(append(strconv.AppendUint(p, u, 10), "/relations?ids="...), 20)
		return kindRelations, http.MethodGet, u
	case r < 80:
		p = w.appendIDs(append(p[:len(p)-1], "?ids="...), 10)
		return kindCountsMany, http.MethodGet, u
	case r < 90:
		p = strconv.AppendUint(p, u, 10)
		return kindCountsOne, http.MethodGet, u
	}
	p = strconv.AppendUint(p, u, 10)
	switch w.rng.IntN(3) {
	case 0:
		p = append(p, "/mutuals"...)
		return kindMutuals, http.MethodGet, u
	case 1:
		p = strconv.AppendUint(append(p, "/common-following/"...), w.other(u), 10)
		return kindCommonFollowing, http.MethodGet, u
	}
	p = strconv.AppendUint(append(p, "/known-followers/"...), w.other(u), 10)
	return kindKnownFollowers, http.MethodGet, u
}

// send sends the next request and records its answer, timed from "from".
func (w *worker) send(deadline, from time.Time) {
	k, method, u := w.next()
	status, err := w.conn.do(method, w.url, nil, deadline, &w.body)
	d := time.Since(from)
	s := &w.g.stats[k]
	switch {
	case err != nil:
		w.g.failed(k, 0, err)
		return
	case status == http.StatusForbidden && (k == kindFollow || k == kindRequest) && bytes.Contains(w.body.Bytes(), []byte(`"blocked"`)):
		// One of the two blocks the other: the answer the contract gives.
		s.observe(d)
		s.refused.Add(1)
		return
	case status/100 != 2:
		w.g.failed(k, status, nil)
		return
	}
	s.observe(d)
	b := w.body.Bytes()
	switch k {
	case kindFollowing, kindFollowers:
		if c := nextCursor(b); c != "" {
			dir := (k - kindFollowing) / 2
			w.cursors[dir] = keep(w.rng, w.cursors[dir], userCursor{u, c}, maxCursors)
		}
	case kindFollow, kindUnfollow, kindBlock, kindRequest:
		if bytes.Contains(b, []byte(`"created":true`)) || bytes.Contains(b, []byte(`"removed":true`)) {
			s.changed.Add(1)
		}
	}
}

// nextCursor returns the next_cursor of a page, "" when it is null.
func nextCursor(body []byte) string {
	const key = `"next_cursor":"`
	i := bytes.Index(body, []byte(key))
	if i < 0 {
		return ""
	}
	c := body[i+len(key):]
	if j := bytes.IndexByte(c, '"'); j > 0 {
		return string(c[:j])
	}
	return ""
}

// Result is what a run measured; latencies are in milliseconds.
type Result struct {
	Config     Config        `json:"config"`
	Elapsed    float64       `json:"elapsed_seconds"`
	Kinds      []KindResult  `json:"kinds"`
	Total      KindResult    `json:"total"`
	Lag        *KindResult   `json:"schedule_lag,omitempty"`
	Scheduled  int64         `json:"scheduled,omitempty"`
	Statuses   map[int]int64 `json:"non_2xx_statuses,omitempty"`
	FirstError string        `json:"first_error,omitempty"`
}

type KindResult struct {
	Kind     string `json:"kind"`
	Requests int64  `json:"requests"`
	OK       int64  `json:"ok"`
	Non2xx   int64  `json:"non_2xx"`
	Errors   int64  `json:"errors"`
	Changed  int64  `json:"changed,omitempty"` // writes that created or removed an edge
	// Refused counts the follows and requests answered 403 blocked (one
	// of the two blocks the other), which are answers, in OK, not errors.
	Refused int64   `json:"refused_blocked,omitempty"`
	PerSec  float64 `json:"per_second"` // 2xx answers per second
	P50     float64 `json:"p50_ms"`
	P90     float64 `json:"p90_ms"`
	P99     float64 `json:"p99_ms"`
	Max     float64 `json:"max_ms"`
}

func summarize(name string, s *kindStats, elapsed time.Duration) KindResult {
	ok := s.ok.Load()
	ms := func(d time.Duration) float64 { return float64(min(d, time.Duration(s.maxNs.Load()))) / 1e6 }
	return KindResult{Kind: name, Requests: ok + s.non2xx.Load() + s.errs.Load(), OK: ok, Non2xx: s.non2xx.Load(),
		Errors: s.errs.Load(), Changed: s.changed.Load(), Refused: s.refused.Load(), PerSec: float64(ok) / elapsed.Seconds(),
		P50: ms(s.hist.quantile(0.5, ok)), P90: ms(s.hist.quantile(0.9, ok)), P99: ms(s.hist.quantile(0.99, ok)), Max: ms(time.Duration(s.maxNs.Load()))}
}

func (g *generator) result(elapsed time.Duration) *Result {
	res := &Result{Config: g.cfg, Elapsed: elapsed.Seconds(), Statuses: g.statuses, FirstError: g.firstErr}
	var total kindStats
	for k := range numKinds {
		s := &g.stats[k]
		if s.ok.Load()+s.non2xx.Load()+s.errs.Load() == 0 {
			continue
		}
		res.Kinds = append(res.Kinds, summarize(kindNames[k], s, elapsed))
		total.ok.Add(s.ok.Load())
		total.non2xx.Add(s.non2xx.Load())
		total.errs.Add(s.errs.Load())
		total.changed.Add(s.changed.Load())
		total.refused.Add(s.refused.Load())
		total.maxNs.Store(max(total.maxNs.Load(), s.maxNs.Load()))
		for b := range s.hist {
			total.hist[b].Add(s.hist[b].Load())
		}
	}
	res.Total = summarize("total", &total, elapsed)
	if g.cfg.Rate > 0 {
		lag := summarize("schedule lag", &g.lag, elapsed)
		res.Lag, res.Scheduled = &lag, int64(g.cfg.Duration.Seconds()*g.cfg.Rate)
	}
	return res
}

func (r *Result) Print(w io.Writer) {
	c := r.Config
	loop := "closed loop (as fast as possible)"
	if c.Rate > 0 {
		loop = fmt.Sprintf("open loop at %.0f req/s (latency from the scheduled start)", c.Rate)
	}
	ids := fmt.Sprintf("Zipf(s=%g, v=10)", c.Skew)
	if c.Skew == 0 {
		ids = "uniform"
	}
	fmt.Fprintf(w, "%s mix, %d clients, %s, %.1fs against %s; ids 1..%d %s, seed %d\n",
		c.Mix, c.Concurrency, loop, r.Elapsed, c.URL, c.Users, ids, c.Seed)
	fmt.Fprintf(w, "%-18s %10s %10s %8s %8s %8s %8s %8s %8s\n", "kind", "requests", "2xx/s", "p50 ms", "p90 ms", "p99 ms", "max ms", "non-2xx", "errors")
	row := func(k KindResult) {
		fmt.Fprintf(w, "%-18s %10d %10.0f %8.3f %8.3f %8.3f %8.1f %8d %8d\n", k.Kind, k.Requests, k.PerSec, k.P50, k.P90, k.P99, k.Max, k.Non2xx, k.Errors)
	}
	for _, k := range r.Kinds {
		row(k)
	}
	row(r.Total)
	if c.Mix == "writes" {
		acked := r.Total.OK - r.Total.Refused
		fmt.Fprintf(w, "acknowledged writes: %d (%.0f/s), of which %d created or removed an edge; %d follows or requests refused (403 blocked)\n",
			acked, float64(acked)/r.Elapsed, r.Total.Changed, r.Total.Refused)
	}
	if r.Lag != nil {
		fmt.Fprintf(w, "schedule: %d requests due, %d sent; lag from scheduled start to send p50 %.3f ms, p99 %.3f ms, max %.1f ms\n",
			r.Scheduled, r.Total.Requests, r.Lag.P50, r.Lag.P99, r.Lag.Max)
	}
	if len(r.Statuses) > 0 {
		fmt.Fprintf(w, "non-2xx statuses: %v\n", r.Statuses)
	}
	if r.FirstError != "" {
		fmt.Fprintf(w, "first error: %s\n", r.FirstError)
	}
}
