package httpapi

import (
	"context"
	"errors"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/followgraph/followgraph"
)

// Limits bound what clients can hold of a server: time, connections and
// request bodies. Zero fields take the values of DefaultLimits.
type Limits struct {
	// RequestTimeout is the deadline of each read's work: every backend
	// call it makes ends by then, and the request is answered 503
	// unavailable.
	RequestTimeout time.Duration
	// WriteRequestTimeout is the deadline of each write's work (a route
	// that changes the graph), as RequestTimeout is a read's. It is
	// longer by default, so that a write waits out what briefly holds
	// writes back (the election of a new leader of the event log's
	// stream, 4 to 9 s) instead of failing. A write whose deadline passes
	// has an unknown outcome, as for any 503 on a write.
	WriteRequestTimeout time.Duration
	// ReadTimeout bounds reading a request, head and body.
	ReadTimeout time.Duration
	// WriteTimeout bounds the time from the end of a request's head to the
	// end of its answer, so that a client that does not read its answers
	// is dropped. It must exceed RequestTimeout and WriteRequestTimeout.
	WriteTimeout time.Duration
	// IdleTimeout is how long a keep-alive connection may wait for its
	// next request.
	IdleTimeout time.Duration
	// MaxConns is the most connections served at once. A connection beyond
	// is answered at once, with 200 on /healthz and 503 unavailable
	// otherwise, and closed.
	MaxConns int
	// MaxBodies is the most request bodies read at once; a request waits
	// for its turn within its deadline. Each body is at most MaxBodyBytes,
	// so this bounds the memory that stalled or slow bodies hold.
	MaxBodies int
}

// DefaultLimits are the limits of a server that is given none.
var DefaultLimits = Limits{
	RequestTimeout:      5 * time.Second,
	WriteRequestTimeout: 15 * time.Second,
	ReadTimeout:         10 * time.Second,
	WriteTimeout:        20 * time.Second,
	IdleTimeout:         60 * time.Second,
	MaxConns:            10_000,
	MaxBodies:           16,
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	if l.RequestTimeout <= 0 {
		l.RequestTimeout = d.RequestTimeout
	}
	if l.ReadTimeout <= 0 {
		l.ReadTimeout = d.ReadTimeout
	}
	if l.WriteRequestTimeout <= 0 {
		l.WriteRequestTimeout = d.WriteRequestTimeout
	}
	if l.WriteTimeout <= 0 {
		l.WriteTimeout = max(d.WriteTimeout, l.deadlines()+time.Second)
	}
	if l.IdleTimeout <= 0 {
		l.IdleTimeout = d.IdleTimeout
	}
	if l.MaxConns <= 0 {
		l.MaxConns = d.MaxConns
	}
	if l.MaxBodies <= 0 {
		l.MaxBodies = d.MaxBodies
	}
	return l
}

// Validate reports limits that cannot work together.
func (l Limits) Validate() error {
	l = l.withDefaults()
	if l.WriteTimeout <= l.deadlines() {
		return errors.New("the write timeout must exceed the request timeouts, or an answer is cut off before its deadline")
	}
	return nil
}

// deadlines is the longer of the requests' deadlines.
func (l Limits) deadlines() time.Duration { return max(l.RequestTimeout, l.WriteRequestTimeout) }

// WithLimits sets the server's limits (see Limits; DefaultLimits without).
func WithLimits(l Limits) Option { return func(s *Server) { s.limits = l.withDefaults() } }

// Limits returns the server's limits.
func (s *Server) Limits() Limits { return s.limits }

// HTTPServer returns an http.Server for h (the Server itself, or a mux in
// front of it) with the read, write and idle timeouts of the server's
// limits, to serve on a listener from Listen.
func (s *Server) HTTPServer(h http.Handler) *http.Server {
	l := s.limits
	return &http.Server{
		Handler: s.framed(h),
		// The same for the head as for the whole request: net/http then
		// sets the read deadline once per request instead of twice.
		ReadHeaderTimeout: l.ReadTimeout,
		ReadTimeout:       l.ReadTimeout,
		WriteTimeout:      l.WriteTimeout,
		IdleTimeout:       l.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		// "OPTIONS *" reaches the handler like any request (a 404), so
		// that every request read from a connection is counted there.
		DisableGeneralOptionsHandler: true,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			if fc, ok := c.(*conn); ok {
				return context.WithValue(ctx, connKey{}, fc)
			}
			return ctx
		},
		ErrorLog: slogErrorLog(s.log),
	}
}

// Listen returns ln bounded by the server's MaxConns: it hands out at most
// that many connections at once, and answers each one beyond at once (200
// on /healthz, 503 otherwise) and closes it. Each connection it hands out
// frames its requests, so that the server refuses one with both
// Content-Length and Transfer-Encoding (see framer). Closing the listener
// closes ln.
func (s *Server) Listen(ln net.Listener) net.Listener {
	l := &listener{
		Listener: ln,
		slots:    make(chan struct{}, s.limits.MaxConns),
		overflow: make(chan net.Conn),
		closed:   make(chan struct{}),
		refusing: make(chan struct{}, maxRefusing),
		metrics:  s.metrics,
	}
	l.refuser = &http.Server{
		Handler:           http.HandlerFunc(s.refuse),
		ReadHeaderTimeout: time.Second,
		ReadTimeout:       time.Second,
		WriteTimeout:      time.Second,
		ErrorLog:          slogErrorLog(s.log),
	}
	l.refuser.SetKeepAlivesEnabled(false)
	go l.refuser.Serve(overflowListener{l})
	return l
}

// maxRefusing bounds the connections beyond the limit being answered at
// once; beyond it they are closed unanswered.
const maxRefusing = 256

// refuse answers a connection beyond the limit.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && r.URL.Path == "/healthz" {
		writeBody(w, http.StatusOK, appendStatus(nil, "ok"))
		return
	}
	w.Header().Set("Retry-After", "1")
	writeError(w, http.StatusServiceUnavailable, followgraph.EUnavailable, "the server is at its limit of connections; retry later")
}

type listener struct {
	net.Listener
	slots    chan struct{} // one per connection handed out
	overflow chan net.Conn // connections beyond the limit, for the refuser
	refusing chan struct{} // one per connection being refused
	refuser  *http.Server
	closed   chan struct{}
	once     sync.Once
	metrics  *metrics
}

func (l *listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.slots <- struct{}{}:
			l.metrics.conns.Inc()
			return &conn{Conn: c, release: l.release}, nil
		default:
		}
		l.metrics.refused.Inc()
		select {
		case l.refusing <- struct{}{}:
			select {
			case l.overflow <- &refusedConn{Conn: c, done: l.refusing}:
			case <-l.closed:
				c.Close()
			}
		default:
			c.Close()
		}
	}
}

func (l *listener) release() {
	<-l.slots
	l.metrics.conns.Dec()
}

func (l *listener) Close() error {
	l.once.Do(func() {
		close(l.closed)
		l.refuser.Close()
	})
	return l.Listener.Close()
}

// overflowListener hands the refuser the connections beyond the limit.
type overflowListener struct{ l *listener }

func (o overflowListener) Accept() (net.Conn, error) {
	select {
	case c := <-o.l.overflow:
		return c, nil
	case <-o.l.closed:
		return nil, net.ErrClosed
	}
}
func (o overflowListener) Close() error   { return nil }
func (o overflowListener) Addr() net.Addr { return o.l.Addr() }

// refusedConn gives its place among those being refused back when closed.
type refusedConn struct {
	net.Conn
	done chan struct{}
	once sync.Once
}

func (c *refusedConn) Close() error {
	c.once.Do(func() { <-c.done })
	return c.Conn.Close()
}

// conn is a connection handed out by the listener: it frames the requests
// read from it and gives its slot back when closed.
type conn struct {
	net.Conn
	release func()
	once    sync.Once

	f         framer
	cut       bool          // after an ambiguous head: nothing more is read
	ambiguous atomic.Uint64 // the index of the ambiguous head, 0 for none
	served    atomic.Uint64 // requests that reached the handler
}

type connKey struct{}

func (c *conn) Read(p []byte) (int, error) {
	if c.cut {
		return 0, io.EOF
	}
	n, err := c.Conn.Read(p)
	if k, bad := c.f.feed(p[:n]); bad {
		c.ambiguous.Store(c.f.heads)
		c.cut = true
		return k, nil
	}
	return n, err
}

func (c *conn) Close() error {
	c.once.Do(c.release)
	return c.Conn.Close()
}

// framed answers a request whose connection's framer found it ambiguous
// (both Content-Length and Transfer-Encoding) with 400 invalid_argument
// and closes the connection; others go to h.
func (s *Server) framed(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !ambiguousRequest(r) {
			h.ServeHTTP(w, r)
			return
		}
		start := time.Now()
		w.Header().Set("Connection", "close")
		writeError(w, http.StatusBadRequest, followgraph.EInvalidArgument,
			"the request has both Content-Length and Transfer-Encoding: send one of them (RFC 9112 section 6.3)")
		s.metrics.observe(routeUnmatched, http.StatusBadRequest, time.Since(start))
	})
}

// ambiguousRequest reports whether r, the next request served from its
// connection, had both Content-Length and Transfer-Encoding. Requests of
// one HTTP/1.1 connection reach the handler one at a time and in order, so
// counting them gives each its index.
func ambiguousRequest(r *http.Request) bool {
	c, ok := r.Context().Value(connKey{}).(*conn)
	if !ok {
		return false
	}
	return c.served.Add(1) == c.ambiguous.Load()
}

// slogErrorLog sends net/http's own error lines (a TLS handshake that
// failed, a panic it recovered) to l at debug level: a hostile client can
// cause them at will.
func slogErrorLog(l *slog.Logger) *log.Logger {
	return slog.NewLogLogger(l.Handler(), slog.LevelDebug)
}
