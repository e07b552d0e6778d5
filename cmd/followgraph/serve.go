package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/eventlog"
	"github.com/followgraph/followgraph/httpapi"
	"github.com/followgraph/followgraph/internal/secret"
	"github.com/followgraph/followgraph/pipeline"
	"github.com/followgraph/followgraph/recovery"
)

// Config is everything `followgraph serve` is told.
type Config struct {
	servers
	Addr         string
	NATSReplicas int

	Fsync        string  // always | interval
	PersistRate  float64 // rows per second into the durable store; 0 = unlimited
	PersistBatch int     // most events per batch
	PersistWait  time.Duration
	MaxFollowing int
	WriteRate    float64 // writes per second per user; 0 = unlimited
	WriteBurst   int
	Pprof        bool
	LogLevel     string

	Limits          httpapi.Limits // deadlines and bounds on clients
	MemoryLimit     string         // the Go runtime's soft memory limit, such as 2GiB; "" leaves it as GOMEMLIMIT says
	ShutdownTimeout time.Duration  // longest a clean stop waits for requests in flight and the drain
	AcceptDataLoss  bool           // start although the store and the log lost acknowledged events (logging what was lost)
	DiskReserve     string         // free space the embedded log's disk keeps, such as 64MiB; "0" for none
}

// Validate reports a configuration that cannot run.
func (c Config) Validate() error {
	if err := c.check(); err != nil {
		return err
	}
	switch {
	case c.NATSReplicas < 1 || c.NATSReplicas > 5:
		return fmt.Errorf("--nats-replicas %d: want 1 to 5", c.NATSReplicas)
	case c.NATS == "" && c.NATSReplicas != 1:
		return errors.New("--nats-replicas: needs --nats (the embedded NATS server is a single node)")
	case c.Fsync != "always" && c.Fsync != "interval":
		return fmt.Errorf("--fsync %q: want always or interval", c.Fsync)
	case c.PersistBatch < 1:
		return fmt.Errorf("--persist-batch %d: want at least 1", c.PersistBatch)
	case c.PersistRate < 0 || c.WriteRate < 0:
		return errors.New("rates cannot be negative")
	case c.MaxFollowing < 0:
		return errors.New("--max-following cannot be negative")
	case c.ShutdownTimeout <= 0:
		return errors.New("--shutdown-timeout must be positive")
	}
	if err := c.Limits.Validate(); err != nil {
		return fmt.Errorf("--write-timeout %s, --request-timeout %s: %w", c.Limits.WriteTimeout, c.Limits.RequestTimeout, err)
	}
	if _, err := parseBytes(c.MemoryLimit); err != nil {
		return fmt.Errorf("--memory-limit: %w", err)
	}
	if _, err := c.diskReserve(); err != nil {
		return fmt.Errorf("--disk-reserve: %w", err)
	}
	return nil
}

// diskReserve is --disk-reserve in bytes, -1 for none.
func (c Config) diskReserve() (int64, error) {
	if c.DiskReserve == "0" {
		return -1, nil
	}
	return parseBytes(c.DiskReserve)
}

// natsSubject is the subject prefix of the stream named stream: the
// default's for the default stream, so that a stream created before the
// flag existed is found as it is.
func natsSubject(stream string) string {
	if stream == eventlog.DefaultStream {
		return eventlog.DefaultSubject
	}
	return strings.ToLower(stream) + ".edges"
}

func newServe() *cobra.Command {
	var cfg Config
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the HTTP API (with no flags: embedded everything under ./data)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := envDefaults(cmd.Flags()); err != nil {
				return err
			}
			scrub, err := cfg.resolve()
			if err != nil {
				return err
			}
			if err := cfg.Validate(); err != nil {
				return scrub.Error(err)
			}
			return scrub.Error(serve(cmd.Context(), cfg, scrub))
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Addr, "addr", "127.0.0.1:8080", "listen address")
	cfg.flags(f, "folder for embedded data (the SQLite store and the NATS log)",
		"Redis URL (redis://[:password@]host:port, or redis+cluster://h1:p1,h2:p2 for a Cluster); replaces the embedded graph engine")
	f.IntVar(&cfg.NATSReplicas, "nats-replicas", 1, "replicas of the event stream when serve creates it on an external NATS cluster (1 to 5)")
	f.StringVar(&cfg.Fsync, "fsync", "interval", "event log sync: interval (the default: survives a killed process) or always (also survives power loss, ~10x slower writes)")
	f.Float64Var(&cfg.PersistRate, "persist-rate", 0, "rows per second into the durable store (0: unlimited)")
	f.IntVar(&cfg.PersistBatch, "persist-batch", 1000, "most events the persister writes in one transaction")
	f.DurationVar(&cfg.PersistWait, "persist-wait", 50*time.Millisecond, "longest the persister waits to fill a batch")
	f.IntVar(&cfg.MaxFollowing, "max-following", 0, "most users one user may follow (0: no limit)")
	f.Float64Var(&cfg.WriteRate, "write-rate", 0, "writes per second per user (0: unlimited)")
	f.IntVar(&cfg.WriteBurst, "write-burst", 20, "burst of writes per user over --write-rate")
	d := httpapi.DefaultLimits
	f.DurationVar(&cfg.Limits.RequestTimeout, "request-timeout", d.RequestTimeout, "deadline of each request: its backend calls end by then, and it answers 503")
	f.DurationVar(&cfg.Limits.ReadTimeout, "read-timeout", d.ReadTimeout, "longest a client may take to send a request, head and body")
	f.DurationVar(&cfg.Limits.WriteTimeout, "write-timeout", d.WriteTimeout, "longest from the end of a request's head to the end of its answer (more than --request-timeout)")
	f.DurationVar(&cfg.Limits.IdleTimeout, "idle-timeout", d.IdleTimeout, "longest a keep-alive connection may wait for its next request")
	f.IntVar(&cfg.Limits.MaxConns, "max-connections", defaultMaxConns(), "most connections served at once; beyond, a new one is answered 503 (200 on /healthz) and closed")
	f.StringVar(&cfg.MemoryLimit, "memory-limit", "", "soft memory limit of the Go runtime, such as 2GiB (default: GOMEMLIMIT, or none)")
	f.DurationVar(&cfg.ShutdownTimeout, "shutdown-timeout", 30*time.Second, "longest a clean stop (SIGTERM) waits for the requests in flight and for the outbox and the log to drain; what is left stays in the log for the next start")
	f.StringVar(&cfg.DiskReserve, "disk-reserve", "64MiB", "free space the data folder's disk keeps for the embedded log and store: below it, writes are refused at once (503) until space is back; 0 for none")
	f.BoolVar(&cfg.AcceptDataLoss, "accept-data-loss", false, "start even though the durable store and the event log no longer hold every acknowledged change (a file deleted, truncated or replaced), logging what is lost; without it serve refuses to start, naming the damage")
	f.BoolVar(&cfg.Pprof, "pprof", false, "serve /debug/pprof/ (profiles shorter than --write-timeout)")
	f.StringVar(&cfg.LogLevel, "log-level", "info", "debug, info, warn or error")
	return cmd
}

// newLogger returns the JSON logger on stderr at level, from whose lines
// scrub masks every secret of the configured URLs.
func newLogger(level string, scrub *secret.Scrubber) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	return slog.New(scrub.Handler(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: l}))), nil
}

// serve runs the service until ctx ends, then shuts down in order: stop
// taking requests and finish those in flight, let the persister drain the
// log into the store, close the log, close the store.
func serve(ctx context.Context, cfg Config, scrub *secret.Scrubber) error {
	logger, err := newLogger(cfg.LogLevel, scrub)
	if err != nil {
		return err
	}
	if limit, _ := parseBytes(cfg.MemoryLimit); limit > 0 {
		debug.SetMemoryLimit(limit)
	}
	unlock, err := cfg.lockData()
	if err != nil {
		return err
	}
	defer unlock()
	store, storeDesc, err := openStore(ctx, cfg.DB, cfg.Data)
	if err != nil {
		return err
	}
	defer store.Close()

	reserve, _ := cfg.diskReserve()
	sync := eventlog.SyncAlways
	if cfg.Fsync == "interval" {
		sync = eventlog.SyncInterval
	}
	// The store and the log must still hold everything acknowledged.
	elog, err := recovery.OpenLog(ctx, store, eventlog.Config{Dir: filepath.Join(cfg.Data, "nats"), URL: cfg.NATS, Replicas: cfg.NATSReplicas,
		Stream: cfg.NATSStream, Subject: natsSubject(cfg.NATSStream), Sync: sync, Logger: logger, DiskReserve: reserve}, cfg.AcceptDataLoss, logger)
	var damage *recovery.Damage
	if errors.As(err, &damage) {
		return fmt.Errorf("refusing to start: %w.\nRestore the missing data from a backup, or start with --accept-data-loss to go on without it", err)
	}
	if err != nil {
		return err
	}
	defer elog.Close()
	mctx, stopMark := context.WithCancel(context.Background())
	marked := make(chan struct{})
	go func() {
		defer close(marked)
		recovery.KeepMark(mctx, store, elog, time.Second, logger)
	}()
	defer func() { stopMark(); <-marked }() // a last note before the log and the store close

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	registerLogMetrics(reg, elog)
	registerBuildInfo(reg)
	var eng *engine
	if cfg.Redis != "" {
		if eng, err = redisEngine(cfg, store, elog, reg, logger); err != nil {
			return err
		}
	} else {
		eng = memEngine(cfg, store, elog, reg)
	}
	defer eng.close()
	g := eng.graph
	var ready atomic.Bool
	opts := []httpapi.Option{
		httpapi.WithLimits(cfg.Limits),
		httpapi.WithRegistry(reg),
		httpapi.WithLogger(logger),
		httpapi.WithWriteRate(cfg.WriteRate, cfg.WriteBurst),
		httpapi.WithReadiness("recovery", func(context.Context) error {
			if !ready.Load() {
				return errors.New("loading the graph")
			}
			return nil
		}),
		httpapi.WithReadiness("eventlog", elog.Ready),
		// Writes need the log only; the persister waits out the store.
		httpapi.WithDegradable("store", store.Ready),
	}
	if eng.ready != nil {
		opts = append(opts, httpapi.WithReadiness("redis", eng.ready))
	}
	api := httpapi.NewServer(g, opts...)
	// The API routes itself; a mux in front only when pprof shares the
	// port, so a request is not routed once more for nothing.
	handler := gate(&ready, api)
	if cfg.Pprof {
		mux := http.NewServeMux()
		mux.Handle("/", handler)
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		handler = mux
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return err
	}
	srv := api.HTTPServer(handler)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(api.Listen(ln)) }()

	natsDesc := "embedded at " + filepath.Join(cfg.Data, "nats")
	if cfg.NATS != "" {
		natsDesc = secret.Redact(cfg.NATS)
	}
	logger.Info("followgraph serving", "addr", ln.Addr().String(), "engine", eng.desc,
		"eventlog", "nats jetstream "+natsDesc, "store", storeDesc, "fsync", cfg.Fsync, "version", version())

	// Recovery: the record, then the log's tail after what the record has.
	start := time.Now()
	if err := eng.recover(ctx); err != nil {
		srv.Close()
		return err
	}
	logger.Info("followgraph ready", append([]any{"recovery", time.Since(start).String()}, eng.stats()...)...)

	persister := pipeline.New(store, reg, pipeline.WithRate(cfg.PersistRate, max(cfg.PersistBatch, int(cfg.PersistRate))), pipeline.WithLogger(logger))
	pctx, stopPersister := context.WithCancel(context.Background())
	persisted := make(chan error, 1)
	go func() {
		persisted <- elog.Consume(pctx, "persister", cfg.PersistBatch, cfg.PersistWait, func(ctx context.Context, batch []eventlog.Message, last uint64) error {
			return persister.Handle(ctx, messages(batch), last)
		})
	}()
	rctx, stopRelay := context.WithCancel(context.Background())
	relayed := make(chan struct{})
	go func() {
		defer close(relayed)
		if eng.relay != nil {
			eng.relay.Run(rctx)
		}
	}()
	wctx, stopWatch := context.WithCancel(context.Background())
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		if eng.watch != nil {
			eng.watch(wctx)
		}
	}()
	defer func() { stopWatch(); <-watched }()
	ready.Store(true)

	select {
	case <-ctx.Done():
	case err := <-served:
		stopRelay()
		stopPersister()
		return fmt.Errorf("http: %w", err)
	}
	logger.Info("followgraph stopping", "shutdown_timeout", cfg.ShutdownTimeout.String())
	shutdown, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		logger.Error("http shutdown", "err", err)
	}
	stopRelay()
	<-relayed
	if eng.relay != nil {
		if err := eng.relay.Drain(shutdown); err != nil {
			logger.Warn("stopping with events still in the outbox; the next start relays them", "err", err)
		}
	}
	drain(shutdown, elog, logger)
	stopPersister()
	if err := <-persisted; err != nil && !errors.Is(err, context.Canceled) {
		logger.Error("persister", "err", err)
	}
	logger.Info("followgraph stopped")
	return nil
}

// publishTimeout bounds how long a write waits for the event log when
// its context has no deadline (the relay's publishes).
const publishTimeout = 10 * time.Second

// durable is the engine's hook: a change is acknowledged only once its
// event is stored in the log. The wait does not end when the client goes
// away: an event already sent may still be stored, and the engine must not
// drop a change the log keeps. Only the log's own failure or the request's
// deadline ends it early; then the write answers 503 and its outcome is
// unknown, as for any write that was not acknowledged (a repeat of it is
// idempotent).
func durable(elog *eventlog.Log) fg.Hook {
	return func(ctx context.Context, e fg.Event) error {
		deadline, ok := ctx.Deadline()
		if !ok {
			deadline = time.Now().Add(publishTimeout)
		}
		ctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), deadline)
		defer cancel()
		return elog.Publish(ctx, e)
	}
}

// gate answers 503 to API requests until the graph is loaded; health,
// readiness and metrics are served from the start.
func gate(ready *atomic.Bool, api http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/healthz", "/readyz", "/metrics":
		default:
			if !ready.Load() {
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(http.StatusServiceUnavailable)
				fmt.Fprintln(w, `{"error":{"code":"unavailable","message":"the graph is still loading"}}`)
				return
			}
		}
		api.ServeHTTP(w, r)
	})
}

func messages(batch []eventlog.Message) []pipeline.Message {
	out := make([]pipeline.Message, len(batch))
	for i, m := range batch {
		out[i] = pipeline.Message{Seq: m.Seq, Event: m.Event}
	}
	return out
}

// drain waits until the persister has taken everything in the log, or ctx
// ends, logging what is left once a second; what is left stays in the log
// for the next start.
func drain(ctx context.Context, elog *eventlog.Log, logger *slog.Logger) {
	said := time.Now()
	for {
		n, _, err := elog.Pending(ctx, "persister")
		if err != nil || n == 0 {
			return
		}
		if time.Since(said) >= time.Second {
			logger.Info("draining the log into the store", "events_left", n)
			said = time.Now()
		}
		select {
		case <-ctx.Done():
			logger.Warn("stopping with events not yet in the store; they stay in the log for the next start", "events", n)
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// registerLogMetrics exports how far the durable store is behind the log,
// and how many messages of the log were not events (each is logged, and
// skipped: never applied).
func registerLogMetrics(reg prometheus.Registerer, elog *eventlog.Log) {
	reg.MustRegister(backlog{elog},
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "followgraph_eventlog_undecodable_total", Help: "Messages met in the event log that were not events: logged and skipped, never applied."},
			func() float64 { return float64(elog.Undecodable()) }))
}

// backlog exports the log's backlog, the events not yet in the durable
// store, when the log can say it. While it cannot (unreachable), the
// gauges are left out rather than read 0, which would say "all stored";
// followgraph_backend_up{backend="eventlog"} says why.
type backlog struct{ elog *eventlog.Log }

var (
	pendingEventsDesc  = prometheus.NewDesc("followgraph_persister_pending_events", "Events in the log not yet in the durable store (absent while the log cannot say).", nil, nil)
	pendingSecondsDesc = prometheus.NewDesc("followgraph_persister_pending_seconds", "Age of the oldest event not yet in the durable store, 0 when none (absent while the log cannot say).", nil, nil)
)

func (b backlog) Describe(ch chan<- *prometheus.Desc) {
	ch <- pendingEventsDesc
	ch <- pendingSecondsDesc
}

func (b backlog) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	n, oldest, err := b.elog.Pending(ctx, "persister")
	if err != nil {
		return
	}
	age := 0.0
	if n > 0 && !oldest.IsZero() {
		age = time.Since(oldest).Seconds()
	}
	ch <- prometheus.MustNewConstMetric(pendingEventsDesc, prometheus.GaugeValue, float64(n))
	ch <- prometheus.MustNewConstMetric(pendingSecondsDesc, prometheus.GaugeValue, age)
}

// registerBuildInfo exports followgraph_build_info: the version, the Go
// version and the VCS revision of the binary, as labels of a constant 1.
func registerBuildInfo(reg prometheus.Registerer) {
	goVersion, revision := "unknown", "unknown"
	if info, ok := debug.ReadBuildInfo(); ok {
		goVersion = info.GoVersion
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" {
				revision = s.Value
			}
		}
	}
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name:        "followgraph_build_info",
		Help:        "The build of the binary: version, Go version and VCS revision as labels; always 1.",
		ConstLabels: prometheus.Labels{"version": version(), "goversion": goVersion, "revision": revision},
	}, func() float64 { return 1 }))
}
