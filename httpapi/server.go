// Package httpapi serves a followgraph.Graph over HTTP, as version 1 of the
// API that docs/API.md and api/openapi.yaml describe. Its Go client is
// package client.
//
// The server is a standard net/http ServeMux with method patterns, behind
// one ServeHTTP that answers every request in JSON, unknown routes (404)
// and wrong methods (405) included. It validates ids, limits and bodies
// before it calls the graph (cursors are the graph's to check: reads
// change nothing), maps every error to a status in one
// table (error.go), limits writes per user when asked to, checks bearer
// tokens when asked to (auth.go), and exposes /healthz, /readyz and
// /metrics.
package httpapi

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"path"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/auth"
)

// MaxBodyBytes is the largest request body the server reads; a larger one
// is answered 413 too_large.
const MaxBodyBytes = 1 << 20

// readyTimeout bounds how long /readyz waits for the readiness checks.
const readyTimeout = 2 * time.Second

// Server serves a followgraph.Graph over HTTP. It is an http.Handler, safe
// for concurrent use.
type Server struct {
	g       followgraph.Graph
	mux     *http.ServeMux
	log     *slog.Logger
	limiter *writeLimiter // nil: writes are not limited
	ready   []*readiness
	reg     *prometheus.Registry
	metrics *metrics
	limits  Limits
	bodies  chan struct{} // one per request body being read (Limits.MaxBodies)
	gate    func() error  // nil: the API is open from the start
	// operatorPort: /metrics is served by OperatorHandler, not the API
	operatorPort bool
	auth         *auth.Authenticator // nil: requests are not authenticated
	history      metricsHistory      // its path "": none served
}

// metricsHistory is a history of metrics served beside them
// (WithMetricsHistory).
type metricsHistory struct {
	path string
	h    http.Handler
}

// readiness is a backend's check, for /readyz and the backend's up gauge.
type readiness struct {
	name       string
	check      func(context.Context) error
	degradable bool        // its loss is ridden out: named as degraded, not a 503
	down       atomic.Bool // as last checked, so that changes are logged once
}

// Option configures a Server.
type Option func(*Server)

// WithLogger sets the logger of errors: internal errors (500), unavailable
// backends (503), failed readiness checks and recovered panics. Successful
// requests are not logged. The default is slog.Default().
func WithLogger(l *slog.Logger) Option { return func(s *Server) { s.log = l } }

// WithWriteRate limits the writes (follows, blocks, mutes, settings and the
// rest: every PUT and DELETE) by each user, the path's {user}, to
// perSecond on average, with bursts of up to burst (at least 1). A write
// over the limit is answered 429 rate_limited with a Retry-After header
// and changes nothing. perSecond 0 (the default) means no limit.
func WithWriteRate(perSecond float64, burst int) Option {
	return func(s *Server) {
		if perSecond <= 0 {
			s.limiter = nil
			return
		}
		s.limiter = newWriteLimiter(perSecond, burst)
	}
}

// WithReadiness adds a check of a backend the service cannot do without,
// which /readyz runs: the server is ready when every such check returns
// nil within a short timeout. name names the backend in the 503 answer
// when its check fails, and labels its followgraph_backend_up gauge.
// Several may be added.
func WithReadiness(name string, check func(ctx context.Context) error) Option {
	return func(s *Server) { s.ready = append(s.ready, &readiness{name: name, check: check}) }
}

// WithDegradable adds a check of a backend whose loss the service rides
// out (the durable store behind the event log): when it fails, /readyz
// still answers 200 and names the backend under "degraded", and its
// followgraph_backend_up gauge reads 0.
func WithDegradable(name string, check func(ctx context.Context) error) Option {
	return func(s *Server) { s.ready = append(s.ready, &readiness{name: name, check: check, degradable: true}) }
}

// WithOperatorPort moves /metrics off the API's port: the Server answers
// it 404, and OperatorHandler serves it, with /healthz and /readyz, for a
// port of its own that only operators reach (it asks for no token).
func WithOperatorPort() Option { return func(s *Server) { s.operatorPort = true } }

// WithMetricsHistory serves h, a recent history of the metrics (the
// console's), at GET path, with the access of /metrics: a service token
// with scope admin when authentication is on, and on the operator port
// (OperatorHandler) with WithOperatorPort.
func WithMetricsHistory(path string, h http.Handler) Option {
	return func(s *Server) { s.history = metricsHistory{path: path, h: h} }
}

// OperatorHandler serves /metrics, /healthz and /readyz (and the metrics'
// history, with WithMetricsHistory), for an operator port
// (WithOperatorPort); everything else is 404.
func (s *Server) OperatorHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{}))
	if s.history.path != "" {
		mux.Handle("GET "+s.history.path, s.history.h)
	}
	mux.Handle("GET /healthz", s)
	mux.Handle("GET /readyz", s)
	return mux
}

// WithGate holds the API back until gate returns nil: meanwhile every API
// request is answered gate's error, as any error is (an EUnavailable one
// is a 503, with Retry-After: 1), while /healthz, /readyz and /metrics are
// served from the start. gate is called for every API request, so it must
// be cheap (serve's says whether the graph is loaded yet).
func WithGate(gate func() error) Option { return func(s *Server) { s.gate = gate } }

// WithRegistry registers the server's metrics in reg, and serves reg at
// /metrics. By default the server has a registry of its own, with the Go
// and process collectors.
func WithRegistry(reg *prometheus.Registry) Option { return func(s *Server) { s.reg = reg } }

// NewServer returns a Server answering from g.
func NewServer(g followgraph.Graph, opts ...Option) *Server {
	s := &Server{g: g, mux: http.NewServeMux(), log: slog.Default(), limits: DefaultLimits}
	for _, o := range opts {
		o(s)
	}
	s.bodies = make(chan struct{}, s.limits.MaxBodies)
	if s.reg == nil {
		s.reg = prometheus.NewRegistry()
		s.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	s.metrics = newMetrics(s.reg)
	register(s.reg, prometheus.Collector(backendsUp{s}))
	s.routes()
	return s
}

func (s *Server) routes() {
	s.handle("PUT /v1/users/{user}/following/{target}", s.follow())
	s.handle("DELETE /v1/users/{user}/following/{target}", s.unfollow())
	s.handle("GET /v1/users/{user}/following/{target}", s.isFollowing)
	s.handle("GET /v1/users/{user}", s.counts)
	s.handle("GET /v1/users", s.countsOf)
	s.handle("GET /v1/users/{user}/following", s.following)
	s.handle("GET /v1/users/{user}/followers", s.followers)
	s.handle("GET /v1/users/{user}/relations", s.relations)
	s.handleRead("POST /v1/users/{user}/relations", s.relationsOf)
	s.handle("GET /v1/users/{user}/mutuals", s.mutuals)
	s.handle("GET /v1/users/{user}/common-following/{other}", s.commonFollowing)
	s.handle("GET /v1/users/{user}/common-followers/{other}", s.commonFollowers)
	s.handle("GET /v1/users/{user}/known-followers/{target}", s.knownFollowers)
	s.handle("GET /v1/users/{user}/suggestions", s.suggestions)
	s.relationshipRoutes()
	s.stateRoutes()
	s.handleOps("GET /healthz", s.healthz)
	s.handleOps("GET /readyz", s.readyz)
	if s.operatorPort {
		return
	}
	s.handleAdmin("GET /metrics", promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{}))
	if s.history.path != "" {
		s.handleAdmin("GET "+s.history.path, s.history.h)
	}
}

// handleAdmin routes pattern, an operator's route that is not JSON of
// the API's, to h behind a check of a token with scope admin (with
// WithAuth).
func (s *Server) handleAdmin(pattern string, h http.Handler) {
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		markMatched(w)
		if s.auth != nil {
			if err := s.authorize(r, accessAdmin); err != nil {
				s.writeError(requestContext(w, r), w, r, err)
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

// apiFunc answers one request, with ctx its context (with its deadline):
// it appends the JSON answer (status 200) to b and returns it, or returns
// an error to answer instead.
type apiFunc func(ctx context.Context, r *http.Request, b []byte) ([]byte, error)

// handle routes pattern, a route of the API, to f.
func (s *Server) handle(pattern string, f apiFunc) { s.route(pattern, f, true, accessOf(pattern)) }

// handleOps routes pattern, a route for operators (health, readiness),
// which WithGate's gate does not hold back and WithAuth leaves open.
func (s *Server) handleOps(pattern string, f apiFunc) { s.route(pattern, f, false, accessOpen) }

// route routes pattern to f, behind WithGate's gate when gated, and, with
// WithAuth, behind a check of the request's token for need. A route that
// changes the graph (an API route that is not a GET, nor a read such as
// handleRead's) has the deadline of a write.
func (s *Server) route(pattern string, f apiFunc, gated bool, need access) {
	write := gated && need != accessRead && !strings.HasPrefix(pattern, http.MethodGet+" ")
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		markMatched(w)
		if sw, ok := w.(*statusWriter); ok && write {
			// Before anything has waited on the context, which fixes its
			// deadline.
			sw.ctx.deadline = sw.ctx.deadline.Add(s.limits.WriteRequestTimeout - sw.timeout)
			sw.timeout = s.limits.WriteRequestTimeout
		}
		ctx := requestContext(w, r)
		if need != accessOpen && s.auth != nil {
			if err := s.authorize(r, need); err != nil {
				s.writeError(ctx, w, r, err)
				return
			}
		}
		if gated && s.gate != nil {
			if err := s.gate(); err != nil {
				if _, code := statusCode(err); code == followgraph.EUnavailable {
					w.Header().Set("Retry-After", "1")
				}
				s.writeError(ctx, w, r, err)
				return
			}
		}
		buf := bufs.Get().(*[]byte)
		defer bufs.Put(buf)
		b, err := f(ctx, r, (*buf)[:0])
		if cap(b) <= maxPooledBuf {
			*buf = b
		}
		if err != nil {
			s.writeError(ctx, w, r, err)
			return
		}
		writeBody(w, http.StatusOK, b)
	})
}

// requestContext returns the context of r with its deadline, which
// ServeHTTP keeps with the response writer (so that r need not be copied
// to carry it: net/http's WithContext copies the whole request).
func requestContext(w http.ResponseWriter, r *http.Request) context.Context {
	if sw, ok := w.(*statusWriter); ok && sw.ctx.Context != nil {
		return &sw.ctx
	}
	return r.Context()
}

// bufs holds the buffers answers are built in; one larger than
// maxPooledBuf (a page of 1000 users with relations is ~100 KB) is left to
// the garbage collector.
var bufs = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

const maxPooledBuf = 256 << 10

// routeUnmatched is the route label of requests that match no route.
const routeUnmatched = "unmatched"

// ServeHTTP answers r. Requests that match no route get a JSON 404, or a
// JSON 405 with an Allow header when the path exists with other methods;
// a path that is not in canonical form (such as "/v1//users/1") matches
// no route. A body over MaxBodyBytes gets 413. A panic in a handler is
// logged and answered 500 internal.
//
// The mux routes each request once: a route's handler marks the writer as
// matched before it writes, so whatever the mux writes to an unmarked
// writer is its own 404 or 405, which the writer holds back and ServeHTTP
// answers in JSON instead.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	// Every request's work has a deadline: the handlers pass the context
	// that the writer keeps to the graph, whose backend calls end by then
	// (writeError answers 503). A write's route moves it to its own
	// (route).
	sw := &statusWriter{ResponseWriter: w, timeout: s.limits.RequestTimeout,
		ctx: deadlineCtx{Context: r.Context(), deadline: start.Add(s.limits.RequestTimeout)}}
	defer sw.ctx.cancel()
	defer func() {
		route := r.Pattern
		if !sw.matched {
			route = routeUnmatched
		}
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			s.log.Error("httpapi: panic serving a request", "method", r.Method, "route", route, "panic", p, "stack", string(debug.Stack()))
			if !sw.wroteHeader {
				writeError(sw, http.StatusInternalServerError, followgraph.EInternal, internalMessage)
			}
		}
		s.metrics.observe(route, sw.status(), time.Since(start))
	}()

	switch p := r.URL.EscapedPath(); {
	case cleanPath(p) != p:
		// The mux would redirect to the clean path; the API has no
		// redirects.
		sw.matched = true // what follows is our own answer
		writeError(sw, http.StatusNotFound, followgraph.ENotFound, notFoundMessage(r))
		sw.matched = false
		return
	case r.ContentLength > MaxBodyBytes:
		sw.matched = true
		writeError(sw, http.StatusRequestEntityTooLarge, followgraph.ETooLarge, tooLargeMessage)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
	s.mux.ServeHTTP(sw, r)
	if !sw.matched {
		s.unmatched(sw, r)
	}
}

// unmatched answers in JSON a request the mux answered itself, with a 404
// or a 405 and its Allow header, which sw held back.
func (s *Server) unmatched(sw *statusWriter, r *http.Request) {
	sw.matched = true // let our own answer through
	defer func() { sw.matched = false }()
	if s.auth != nil && strings.HasPrefix(r.URL.Path, "/v1/") {
		// Every request under /v1/ needs a valid token, even to learn
		// that its route does not exist.
		if _, err := s.auth.Authenticate(authorization(r)); err != nil {
			sw.Header().Del("Allow")
			s.writeError(requestContext(sw, r), sw, r, err)
			return
		}
	}
	if sw.heldCode == http.StatusMethodNotAllowed {
		allow := sw.Header().Get("Allow")
		writeError(sw, http.StatusMethodNotAllowed, followgraph.EMethodNotAllowed,
			fmt.Sprintf("method %s is not allowed here; allowed: %s", truncate(r.Method), allow))
		return
	}
	sw.Header().Del("Allow")
	writeError(sw, http.StatusNotFound, followgraph.ENotFound, notFoundMessage(r))
}

func notFoundMessage(r *http.Request) string {
	return fmt.Sprintf("no such route: %s %s", truncate(r.Method), truncate(r.URL.Path))
}

// cleanPath returns the canonical form of the escaped path p, as
// http.ServeMux computes it to decide on a redirect.
func cleanPath(p string) string {
	if p == "" {
		return "/"
	}
	if p[0] != '/' {
		p = "/" + p
	}
	np := path.Clean(p)
	if p[len(p)-1] == '/' && np != "/" {
		np += "/"
	}
	return np
}

func truncate(s string) string {
	const max = 200
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}

func (s *Server) healthz(_ context.Context, _ *http.Request, b []byte) ([]byte, error) {
	return appendStatus(b, "ok"), nil
}

// readyz runs every readiness check at once and answers 503 naming the
// required backends that fail, in the order they were added; failing
// degradable backends are named under "degraded" in a 200. The causes are
// logged when a backend's state changes, not answered.
func (s *Server) readyz(ctx context.Context, _ *http.Request, b []byte) ([]byte, error) {
	var failing, degraded []string
	for i, err := range s.checkBackends(ctx) {
		switch {
		case err == nil:
		case s.ready[i].degradable:
			degraded = append(degraded, s.ready[i].name)
		default:
			failing = append(failing, s.ready[i].name)
		}
	}
	if len(failing) > 0 {
		return b, loggedError{followgraph.Errorf(followgraph.EUnavailable, "not ready: %s", strings.Join(failing, ", "))}
	}
	return appendReady(b, degraded), nil
}

// checkBackends runs every readiness check at once, within readyTimeout,
// and returns their errors in order. A backend whose state changed since
// its last check is logged: at warning level with the cause when it
// fails, at info level when it answers again. While WithGate's gate holds
// the API back (the service is starting: loading the graph, rebuilding
// Redis), what does not answer yet is expected, and neither logged nor
// remembered: a backend still failing once the gate opens is logged then.
// The gate is asked before the checks run and again after: a check that
// began while the service was starting describes the start even when the
// gate opened before it returned.
func (s *Server) checkBackends(ctx context.Context) []error {
	starting := func() bool { return s.gate != nil && s.gate() != nil }
	wasStarting := starting()
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	errs := make([]error, len(s.ready))
	var wg sync.WaitGroup
	for i, c := range s.ready {
		wg.Go(func() { errs[i] = c.check(ctx) })
	}
	wg.Wait()
	if wasStarting || starting() {
		return errs
	}
	for i, err := range errs {
		c := s.ready[i]
		if was := c.down.Swap(err != nil); was == (err != nil) {
			continue
		}
		if err != nil {
			s.log.Warn("httpapi: backend not answering", "backend", c.name, "degradable", c.degradable, "err", err)
		} else {
			s.log.Info("httpapi: backend answering again", "backend", c.name)
		}
	}
	return errs
}

// statusWriter remembers the status of the response it writes. Until a
// route's handler marks it matched, it holds back what is written to it
// (the mux's own 404 or 405) and keeps only the status.
type statusWriter struct {
	http.ResponseWriter
	code        int
	wroteHeader bool
	matched     bool
	heldCode    int
	ctx         deadlineCtx   // the request's context, with its deadline
	timeout     time.Duration // the deadline's distance from the request's start
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.matched {
		if w.heldCode == 0 {
			w.heldCode = code
		}
		return
	}
	if !w.wroteHeader {
		w.code, w.wroteHeader = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if !w.matched {
		w.WriteHeader(http.StatusOK)
		return len(b), nil
	}
	if !w.wroteHeader {
		w.code, w.wroteHeader = http.StatusOK, true
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) status() int {
	if !w.wroteHeader {
		return http.StatusOK
	}
	return w.code
}

// markMatched tells the statusWriter w that a route's handler answers.
// Every handler the mux has calls it before it writes.
func markMatched(w http.ResponseWriter) {
	if sw, ok := w.(*statusWriter); ok {
		sw.matched = true
	}
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
