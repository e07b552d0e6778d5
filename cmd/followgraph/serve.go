package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/auth"
	"github.com/followgraph/followgraph/console"
	"github.com/followgraph/followgraph/eventlog"
	"github.com/followgraph/followgraph/horizon"
	"github.com/followgraph/followgraph/httpapi"
	"github.com/followgraph/followgraph/internal/secret"
	"github.com/followgraph/followgraph/internal/tlsfiles"
	"github.com/followgraph/followgraph/pipeline"
	"github.com/followgraph/followgraph/recovery"
)

// Config is everything `followgraph serve` is told.
type Config struct {
	servers
	Addr         string
	NATSReplicas int           // 0: natsReplicas's default
	StartTimeout time.Duration // longest the start waits for the event log

	Fsync        string  // always | interval
	PersistRate  float64 // rows per second into the durable store; 0 = unlimited
	PersistBatch int     // most events per batch
	PersistWait  time.Duration
	MaxFollowing int
	WriteRate    float64 // writes per second per user; 0 = unlimited
	WriteBurst   int
	JobsRate     int // edges per second the account-state jobs change, over all jobs; 0 = as fast as the engine allows
	Pprof        bool
	LogLevel     string

	// TombstoneRetention is how long before the oldest change not yet in
	// the durable store a tombstone is kept (horizon.Config.Retention);
	// 0 keeps tombstones for good.
	TombstoneRetention time.Duration

	Limits          httpapi.Limits // deadlines and bounds on clients
	MemoryLimit     string         // the Go runtime's soft memory limit, such as 2GiB; "" leaves it as GOMEMLIMIT says
	ShutdownTimeout time.Duration  // longest a clean stop waits for requests in flight and the drain
	AcceptDataLoss  bool           // start although the store and the log lost acknowledged events (logging what was lost)
	DiskReserve     string         // free space the embedded log's disk keeps, such as 64MiB; "0" for none

	TLSCert, TLSKey string // PEM files of the server's certificate and key: HTTPS; reloaded when they change
	TLSClientCA     string // PEM file of the CAs whose client certificates are required (mutual TLS)

	Auth           auth.Config // service tokens and users' token keys; none: no authentication
	InsecureNoAuth bool        // serve a non-loopback address without authentication
	AdminAddr      string      // the operator port: /metrics, /debug/pprof/, /healthz, /readyz, /console/; "": on the API port
}

// authenticated reports whether authentication is configured.
func (c Config) authenticated() bool { return c.Auth.TokensFile != "" || c.Auth.JWTKeysFile != "" }

// loopback reports whether addr (host:port) listens on loopback only.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Validate reports a configuration that cannot run.
func (c Config) Validate() error {
	if err := c.check(); err != nil {
		return err
	}
	switch {
	case c.NATSReplicas < 0 || c.NATSReplicas > 5:
		return fmt.Errorf("--nats-replicas %d: want 1 to 5", c.NATSReplicas)
	case c.NATS == "" && c.NATSCluster == "" && natsReplicas(c.servers, c.NATSReplicas) != 1:
		return errors.New("--nats-replicas: needs --nats or --nats-cluster (the embedded NATS server is a single node)")
	case c.StartTimeout <= 0:
		return errors.New("--start-timeout must be positive")
	case c.Fsync != "always" && c.Fsync != "interval":
		return fmt.Errorf("--fsync %q: want always or interval", c.Fsync)
	case c.PersistBatch < 1:
		return fmt.Errorf("--persist-batch %d: want at least 1", c.PersistBatch)
	case c.PersistRate < 0 || c.WriteRate < 0:
		return errors.New("rates cannot be negative")
	case c.MaxFollowing < 0:
		return errors.New("--max-following cannot be negative")
	case c.JobsRate < 0:
		return fmt.Errorf("--jobs-rate %d: want 0 (as fast as the engine allows) or more edges a second", c.JobsRate)
	case c.TombstoneRetention < 0:
		return fmt.Errorf("--tombstone-retention %s: want a positive duration, such as 168h, or 0 to keep tombstones for good", c.TombstoneRetention)
	case c.TombstoneRetention > 0 && c.TombstoneRetention < c.Limits.WriteRequestTimeout:
		return fmt.Errorf("--tombstone-retention %s is shorter than --write-request-timeout %s: a write's change may take that long to reach "+
			"the event log, and the tombstones it could meet must outlast it; give at least that (a week is the default), or 0 to keep tombstones for good",
			c.TombstoneRetention, c.Limits.WriteRequestTimeout)
	case c.ShutdownTimeout <= 0:
		return errors.New("--shutdown-timeout must be positive")
	case (c.TLSCert == "") != (c.TLSKey == ""):
		return errors.New("--tls-cert and --tls-key go together")
	case c.TLSClientCA != "" && c.TLSCert == "":
		return errors.New("--tls-client-ca needs --tls-cert and --tls-key")
	case (c.Auth.Issuer != "" || c.Auth.Audience != "") && c.Auth.JWTKeysFile == "":
		return errors.New("--auth-jwt-issuer and --auth-jwt-audience need --auth-jwt-keys")
	case !loopback(c.Addr) && !c.authenticated() && !c.InsecureNoAuth:
		return fmt.Errorf("refusing to serve %s without authentication: anyone who reaches it could write as any user. "+
			"Give --auth-tokens and/or --auth-jwt-keys (docs/SECURITY.md), listen on 127.0.0.1, "+
			"or say --insecure-no-auth if only trusted clients can reach the network", c.Addr)
	}
	if err := c.checkCluster(natsReplicas(c.servers, c.NATSReplicas), c.InsecureNoAuth); err != nil {
		return err
	}
	if err := c.Regions.check(c.NATS == "", c.TombstoneRetention); err != nil {
		return err
	}
	if err := c.Limits.Validate(); err != nil {
		return fmt.Errorf("--write-timeout %s, --request-timeout %s, --write-request-timeout %s: %w",
			c.Limits.WriteTimeout, c.Limits.RequestTimeout, c.Limits.WriteRequestTimeout, err)
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
	cmd := readsEnv(&cobra.Command{
		Use:   "serve",
		Short: "Serve the HTTP API (no flags: everything embedded, under ./data)",
		Long: `Serve the HTTP API (docs/API.md) and, at /console/, the operator's console.
With no flags everything is embedded under ./data and the API listens on
127.0.0.1:8080; --redis, --nats and --db put the graph, the event log and
the durable store on servers, which several serve nodes share. Its log is JSON
lines on stderr: "followgraph ready" says where the console is.

Docs, in the source: README.md (the topologies), docs/OPERATIONS.md (the log,
the console, what to do when something goes wrong), docs/DEPLOY.md
(production, HA), docs/SECURITY.md (tokens, TLS).`,
		Example: `  # One machine: everything embedded under ./data, on 127.0.0.1:8080
	followgraph serve
  # Production: Redis, a NATS cluster and PostgreSQL; every client needs a token
  followgraph serve --addr 0.0.0.0:8080 --admin-addr 10.0.0.5:9090 \
    --auth-tokens /etc/followgraph/tokens \
    --redis redis://redis:6379 --redis-password-file /etc/followgraph/redis.pw \
    --nats nats://nats1:4222,nats://nats2:4222,nats://nats3:4222 \
    --nats-replicas 3 --db postgres://followgraph@db:5432/followgraph \
    --db-password-file /etc/followgraph/db.pw`,
		Args: cobra.NoArgs,
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
	})
	f := cmd.Flags()
	f.StringVar(&cfg.Addr, "addr", "127.0.0.1:8080", "listen address")
	cfg.flags(f, "folder of the embedded store and log (followgraph.db, nats/), made and locked only when one of them is used (no --db, or no --nats)",
		"Redis URL (redis://[:password@]host:port, or redis+cluster://h1:p1,h2:p2 for a Cluster); replaces the embedded graph engine")
	f.StringVar(&cfg.RedisReplicas, "redis-replicas", "", "replicas that reads go to: redis://host:port[,...] (the replicas of a standalone --redis; the password is --redis's when a URL has none), or cluster (a Cluster's, as it lists them); a read there sees every change acknowledged before it")
	f.IntVar(&cfg.NATSReplicas, "nats-replicas", 0, "replicas of the event stream when serve creates it on a NATS cluster, 1 to 5 (default 1; 3 with --nats-cluster)")
	clusterFlags(f, &cfg.servers, &cfg.StartTimeout)
	serveRegionFlags(f, &cfg.Regions)
	f.StringVar(&cfg.Fsync, "fsync", "interval", "event log sync: interval (the default: survives a killed process) or always (also survives power loss, ~10x slower writes)")
	f.Float64Var(&cfg.PersistRate, "persist-rate", 0, "most rows per second the persister writes into the durable store, to spare a shared database (0: unlimited); below the rate of writes, the log's backlog grows")
	f.IntVar(&cfg.PersistBatch, "persist-batch", 1000, "most events the persister writes in one transaction")
	f.DurationVar(&cfg.PersistWait, "persist-wait", 50*time.Millisecond, "longest the persister waits to fill a batch")
	f.IntVar(&cfg.MaxFollowing, "max-following", 0, "most users one user may follow (0: no limit)")
	f.Float64Var(&cfg.WriteRate, "write-rate", 0, "writes per second per user (0: unlimited)")
	f.IntVar(&cfg.WriteBurst, "write-burst", 20, "burst of writes per user over --write-rate")
	f.IntVar(&cfg.JobsRate, "jobs-rate", defaultJobsRate, "edges per second that the jobs of account states (hiding, restoring, deleting a user's edges) change, over all jobs (0: as fast as the engine allows)")
	f.DurationVar(&cfg.TombstoneRetention, "tombstone-retention", defaultTombstoneRetention, "how long an edge turned off (unfollowed, unblocked, unmuted, a request withdrawn) keeps its tombstone, counted from the oldest change the durable store has yet to apply: longer than any change can take to arrive (the nodes' clock skew, --write-request-timeout); then it is removed, and an older change to the edge is refused (0: keep tombstones for good)")
	d := httpapi.DefaultLimits
	f.DurationVar(&cfg.Limits.RequestTimeout, "request-timeout", d.RequestTimeout, "deadline of each read: its backend calls end by then, and it answers 503")
	f.DurationVar(&cfg.Limits.WriteRequestTimeout, "write-request-timeout", d.WriteRequestTimeout, "deadline of each write, as --request-timeout is a read's: long enough to wait out the election of a new leader of the event log's stream on a NATS cluster (4 to 9 s), or a Redis failover")
	f.DurationVar(&cfg.Limits.ReadTimeout, "read-timeout", d.ReadTimeout, "longest a client may take to send a request, head and body")
	f.DurationVar(&cfg.Limits.WriteTimeout, "write-timeout", d.WriteTimeout, "longest from the end of a request's head to the end of its answer (more than --request-timeout and --write-request-timeout)")
	f.DurationVar(&cfg.Limits.IdleTimeout, "idle-timeout", d.IdleTimeout, "longest a keep-alive connection may wait for its next request")
	f.IntVar(&cfg.Limits.MaxConns, "max-connections", defaultMaxConns(), "most connections served at once; beyond, a new one is answered 503 (200 on /healthz) and closed")
	f.StringVar(&cfg.MemoryLimit, "memory-limit", "", "soft memory limit of the Go runtime, such as 2GiB (default: GOMEMLIMIT, or none)")
	f.DurationVar(&cfg.ShutdownTimeout, "shutdown-timeout", 30*time.Second, "longest a clean stop (SIGTERM) waits for the requests in flight and for the outbox and the log to drain; what is left stays in the log for the next start")
	f.StringVar(&cfg.DiskReserve, "disk-reserve", "64MiB", "free space the data folder's disk keeps for the embedded log and store: below it, writes are refused at once (503) until space is back; 0 for none")
	f.BoolVar(&cfg.AcceptDataLoss, "accept-data-loss", false, "start even though the durable store and the event log no longer hold every acknowledged change (a file deleted, truncated or replaced), logging what is lost; without it serve refuses to start, naming the damage")
	f.StringVar(&cfg.TLSCert, "tls-cert", "", "PEM file of the server's certificate (chain): serve HTTPS; reloaded when the file changes")
	f.StringVar(&cfg.TLSKey, "tls-key", "", "PEM file of the certificate's private key")
	f.StringVar(&cfg.TLSClientCA, "tls-client-ca", "", "PEM file of the CAs that sign the clients' certificates: every client must present one (mutual TLS)")
	f.StringVar(&cfg.Auth.TokensFile, "auth-tokens", "", "file of service tokens, a line each: <token or sha256:HEX> <read,write,admin> [name]; re-read on SIGHUP")
	f.StringVar(&cfg.Auth.JWTKeysFile, "auth-jwt-keys", "", "file of the public keys (PEM or JWKS) that users' tokens are signed with (EdDSA, ES256, RS256); re-read on SIGHUP")
	f.StringVar(&cfg.Auth.Issuer, "auth-jwt-issuer", "", "the iss a user's token must have (default: any)")
	f.StringVar(&cfg.Auth.Audience, "auth-jwt-audience", "", "a value a user's token's aud must hold (default: any)")
	f.BoolVar(&cfg.InsecureNoAuth, "insecure-no-auth", false, "serve an address other than loopback without authentication (only where every client is trusted)")
	f.StringVar(&cfg.AdminAddr, "admin-addr", "", "the operator port: /metrics, /debug/pprof/ (with --pprof), /healthz, /readyz and the console (/console/, with the API's reads), which the API port then does not serve (metrics, profiles, console); default: on the API port")
	f.BoolVar(&cfg.Pprof, "pprof", false, "serve /debug/pprof/ (profiles shorter than --write-timeout)")
	f.StringVar(&cfg.LogLevel, "log-level", "info", "debug, info, warn or error")
	group(f, 0, "Backends: where the graph, the event log and the durable store live (each password can come from a file instead of the URL)",
		"data", "redis", "redis-prefix", "redis-replicas", "redis-max-key-members", "redis-password-file",
		"nats", "nats-stream", "nats-replicas", "nats-password-file", "fsync",
		"nats-cluster", "nats-cluster-listen", "nats-cluster-password-file", "nats-node-name",
		"db", "db-password-file")
	group(f, 1, "Regions: a deployment in several regions, each taking writes (docs/DEPLOY.md)",
		"region", "region-peers", "region-listen", "region-link", "region-retention", "region-max-offset")
	group(f, 2, "Security: who may call the API, over what (docs/SECURITY.md)",
		"auth-tokens", "auth-jwt-keys", "auth-jwt-issuer", "auth-jwt-audience", "tls-cert", "tls-key", "tls-client-ca", "insecure-no-auth")
	group(f, 3, "Limits: what clients and users may hold of the service",
		"request-timeout", "write-request-timeout", "read-timeout", "write-timeout", "idle-timeout", "max-connections",
		"max-following", "write-rate", "write-burst", "memory-limit", "disk-reserve")
	group(f, 4, "Tuning: the work in the background",
		"persist-rate", "persist-batch", "persist-wait", "jobs-rate", "tombstone-retention")
	group(f, 5, "Operations: the ports, the log, starting and stopping (docs/OPERATIONS.md)",
		"addr", "admin-addr", "log-level", "pprof", "start-timeout", "shutdown-timeout", "accept-data-loss")
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

// serve runs the service until ctx ends or its HTTP server fails.
func serve(ctx context.Context, cfg Config, scrub *secret.Scrubber) error {
	m := &Main{cfg: cfg, scrub: scrub}
	err := m.Run(ctx)
	if err == nil {
		err = m.Wait(ctx)
	}
	return errors.Join(err, m.Close())
}

// Main is the serve command's program. Run opens the parts in order (the
// listen addresses and the TLS and token files, the data folder's lock
// when the folder keeps the embedded store or log, the
// durable store, the event log, the engine, the HTTP server, then the
// graph's recovery, the persister, the relay, the engine's keeper and its
// account-state jobs) and starts them; Close stops taking requests,
// finishes those in flight, and closes the parts in the reverse order,
// draining the outbox into the log and the log into the store on the way.
type Main struct {
	cfg      Config
	scrub    *secret.Scrubber
	logger   *slog.Logger
	refusals *horizon.Refusals // of changes older than a tombstone horizon

	hup     chan os.Signal      // SIGHUP
	ln      net.Listener        // the API's, bound by bind (TLS on it with --tls-cert)
	adminLn net.Listener        // the operator port's (--admin-addr), or nil
	tokens  *auth.Authenticator // nil: no authentication
	http    *http.Server
	served  chan error              // the HTTP server's end
	closers []func(context.Context) // what Run opened, for Close, in the order opened
}

// opened records how to close a part Run opened.
func (m *Main) opened(close func(ctx context.Context)) { m.closers = append(m.closers, close) }

// started runs f in the background until Close, which cancels its context
// and waits for it to return.
func (m *Main) started(f func(ctx context.Context)) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(ctx)
	}()
	m.opened(func(context.Context) { cancel(); <-done })
}

// Run opens and starts the service, and returns once it serves everything
// (or the error of the part that failed: Close closes what was opened).
func (m *Main) Run(ctx context.Context) (err error) {
	cfg := m.cfg
	if m.logger, err = newLogger(cfg.LogLevel, m.scrub); err != nil {
		return err
	}
	m.refusals = horizon.NewRefusals(m.logger)
	// SIGHUP re-reads the token files (reloadOnHangup) and never ends the
	// process, from the start.
	m.hup = make(chan os.Signal, 1)
	signal.Notify(m.hup, syscall.SIGHUP)
	m.opened(func(context.Context) { signal.Stop(m.hup) })
	if limit, _ := parseBytes(cfg.MemoryLimit); limit > 0 {
		debug.SetMemoryLimit(limit)
	}
	if err := m.bind(); err != nil {
		return err
	}
	m.logStart()
	if cfg.embedded() {
		unlock, err := cfg.lockData()
		if err != nil {
			return err
		}
		m.opened(func(context.Context) { unlock() })
	}
	var store durableStore
	err = waitBackend(ctx, m.logger, "the durable store", cfg.StartTimeout, storeTransient, func(ctx context.Context) (err error) {
		store, err = openStore(ctx, cfg.DB, cfg.Data, m.refusals.Of("store"))
		return err
	})
	if err != nil {
		return err
	}
	m.opened(func(context.Context) { store.Close() })
	elog, err := m.openLog(ctx, store)
	if err != nil {
		return err
	}
	m.opened(func(context.Context) { elog.Close() })
	if err := m.checkHorizon(ctx, store, elog); err != nil {
		return err
	}
	if free, reserve, below := elog.BelowReserve(); below {
		m.logger.Warn("the data folder's disk has less free space than --disk-reserve: until it has, every write is refused "+
			"(503, nothing changed) and /readyz answers 503, not ready: eventlog. Free space on that disk, or lower --disk-reserve",
			"data", cfg.Data, "free", formatBytes(free), "disk_reserve", formatBytes(reserve))
	}
	m.started(func(ctx context.Context) { recovery.KeepLogPosition(ctx, store, elog, time.Second, m.logger) })

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	registerLogMetrics(reg, elog, cfg.Regions.Region != "")
	registerBuildInfo(reg)
	m.refusals.Register(reg)
	eng, err := m.engine(ctx, store, elog, reg)
	if err != nil {
		return err
	}
	m.opened(func(context.Context) { eng.close() })
	jobs, hasJobs := eng.graph.(fg.JobRunner)
	if hasJobs {
		registerJobMetrics(reg, jobs)
	}

	var loaded atomic.Bool
	if err := m.listen(eng, store, elog, reg, &loaded); err != nil {
		return err
	}

	// Recovery: the record, then the log's tail after what the record has.
	start := time.Now()
	if err := eng.recover(ctx); err != nil {
		return err
	}
	ready := append([]any{"recovery", time.Since(start).String(), "console", m.consoleURL()}, eng.stats()...)
	if _, _, below := elog.BelowReserve(); below {
		// Reads are served; writes wait for space, and so does /readyz.
		m.logger.Warn("followgraph ready", append(ready, "writes",
			"refused until the data folder's disk has --disk-reserve free; /readyz answers 503 until then")...)
	} else {
		m.logger.Info("followgraph ready", ready...)
	}

	m.startPersister(store, elog, eng, reg)
	if err := m.startPurge(store, eng, elog, reg); err != nil {
		return err
	}
	if eng.relay != nil {
		m.started(eng.relay.Run)
		// At a clean stop the outbox drains into the log, before the log
		// into the store.
		m.opened(func(shutdown context.Context) {
			if err := eng.relay.Drain(shutdown); err != nil {
				m.logger.Warn("stopping with events still in the outbox; the next start relays them", "err", err)
			}
		})
	}
	if eng.watch != nil {
		m.started(eng.watch)
	}
	if hasJobs {
		// After recovery, so that they start from the states it brought
		// back; they stop before anything they use closes.
		m.started(func(ctx context.Context) { runJobs(ctx, jobs, cfg.JobsRate, m.logger) })
	}
	loaded.Store(true)
	return nil
}

// logStart logs serve's first line: the addresses it listens on, each
// backend (every secret masked), the sync policy and the version.
func (m *Main) logStart() {
	cfg := m.cfg
	natsDesc := "embedded at " + filepath.Join(cfg.Data, "nats")
	if cfg.NATS != "" {
		natsDesc = secret.Redact(cfg.NATS)
	} else if cfg.NATSCluster != "" {
		natsDesc = "embedded cluster node at " + filepath.Join(cfg.Data, "nats") + ", routes " + secret.Redact(cfg.NATSCluster)
	}
	attrs := []any{"addr", m.ln.Addr().String()}
	if m.adminLn != nil {
		attrs = append(attrs, "admin_addr", m.adminLn.Addr().String())
	}
	m.logger.Info("followgraph starting", append(attrs, "engine", engineDesc(cfg), "eventlog", "nats jetstream "+natsDesc,
		"store", storeDesc(cfg.DB, cfg.Data), "fsync", cfg.Fsync, "version", version())...)
}

// consoleURL is the console's URL: on the operator port with
// --admin-addr, else on the API's (HTTPS with --tls-cert). An address
// on every interface is given as localhost, which reaches it from the
// machine itself.
func (m *Main) consoleURL() string {
	scheme, ln := "http", m.ln
	if m.adminLn != nil {
		ln = m.adminLn
	} else if m.cfg.TLSCert != "" {
		scheme = "https"
	}
	host, port, _ := net.SplitHostPort(ln.Addr().String())
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "localhost"
	}
	return scheme + "://" + net.JoinHostPort(host, port) + "/console/"
}

// bind listens on --addr and --admin-addr, and reads the TLS and token
// files, before any backend is touched or the data folder made: an
// address in use or a file that cannot be read is refused with nothing
// made. A connection that comes before the HTTP server serves waits for
// it (in the listen backlog).
func (m *Main) bind() error {
	cfg := m.cfg
	ln, err := listenOn("--addr", cfg.Addr)
	if err != nil {
		return err
	}
	m.opened(func(context.Context) { ln.Close() })
	if cfg.TLSCert != "" {
		tlsCfg, err := tlsfiles.Server(cfg.TLSCert, cfg.TLSKey, cfg.TLSClientCA, func(err error) {
			m.logger.Error("the renewed TLS certificate could not be loaded; serving the last good one", "err", err)
		})
		if err != nil {
			return err
		}
		// Below the framing check and the connection limit, so that both
		// see the requests in clear.
		ln = tls.NewListener(ln, tlsCfg)
	}
	m.ln = ln
	if cfg.AdminAddr != "" {
		if m.adminLn, err = listenOn("--admin-addr", cfg.AdminAddr); err != nil {
			return err
		}
		m.opened(func(context.Context) { m.adminLn.Close() })
	}
	if cfg.authenticated() {
		if m.tokens, err = auth.New(cfg.Auth); err != nil {
			return err
		}
	}
	return nil
}

// listenOn listens on addr, the value of flag, or says why it cannot.
func listenOn(flag, addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err == nil {
		return ln, nil
	}
	var op *net.OpError
	if errors.As(err, &op) {
		err = op.Err
	}
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, fmt.Errorf("%s %s: %w: another process listens there; stop it, or give %s another port", flag, addr, err, flag)
	}
	return nil, fmt.Errorf("%s %s: %w", flag, addr, err)
}

// openLog opens the event log, refusing to start when the store and the
// log no longer hold everything acknowledged (unless --accept-data-loss).
func (m *Main) openLog(ctx context.Context, store durableStore) (*eventlog.Log, error) {
	cfg := m.cfg
	reserve, _ := cfg.diskReserve()
	sync := eventlog.SyncAlways
	if cfg.Fsync == "interval" {
		sync = eventlog.SyncInterval
	}
	elog, err := recovery.OpenLog(ctx, store, eventlog.Config{Dir: filepath.Join(cfg.Data, "nats"), URL: cfg.NATS, Replicas: natsReplicas(cfg.servers, cfg.NATSReplicas),
		Cluster: cfg.natsCluster(), StartWait: cfg.StartTimeout,
		Stream: cfg.NATSStream, Subject: natsSubject(cfg.NATSStream), Sync: sync, Logger: m.logger, DiskReserve: reserve,
		KeepApplied: cfg.Redis != "", Regions: cfg.Regions.regions()}, cfg.AcceptDataLoss, m.logger)
	var other *recovery.OtherStream
	if errors.As(err, &other) {
		return nil, fmt.Errorf("refusing to start: %w.\nGive --nats-stream %s, the store's log (a store is fed by one log: a new stream needs a new store)", err, other.Fed)
	}
	var damage *recovery.Damage
	if errors.As(err, &damage) {
		hint := ""
		if damage.Replaced {
			hint = "; if --nats, --nats-stream or --data changed since the last start, give the ones the store was fed from"
		}
		return nil, fmt.Errorf("refusing to start: %w.\nRestore the missing data from a backup, or start with --accept-data-loss to go on without it%s", err, hint)
	}
	if fg.ErrorCode(err) == fg.EUnavailable {
		return nil, fmt.Errorf("the event log is still unavailable after --start-timeout %s: %w", cfg.StartTimeout, err)
	}
	return elog, err
}

// engine opens the hot copy: Redis with --redis, memgraph otherwise.
func (m *Main) engine(ctx context.Context, store durableStore, elog *eventlog.Log, reg prometheus.Registerer) (*engine, error) {
	if m.cfg.Redis != "" {
		return redisEngine(ctx, m.cfg, store, elog, reg, m.logger, m.refusals.Of("engine"))
	}
	return memEngine(m.cfg, store, elog, reg, m.refusals.Of("engine")), nil
}

// errLoading answers API requests until the graph is loaded.
var errLoading = &fg.Error{Code: fg.EUnavailable, Message: "the graph is still loading"}

// listen starts the HTTP server on the address bind took: health,
// readiness and metrics at once, the API once loaded is set; and the
// operator port, with --admin-addr.
func (m *Main) listen(eng *engine, store durableStore, elog *eventlog.Log, reg *prometheus.Registry, loaded *atomic.Bool) error {
	cfg := m.cfg
	opts := []httpapi.Option{
		httpapi.WithLimits(cfg.Limits),
		httpapi.WithRegistry(reg),
		httpapi.WithLogger(m.logger),
		httpapi.WithGate(func() error {
			if !loaded.Load() {
				return errLoading
			}
			return nil
		}),
		httpapi.WithReadiness("recovery", func(context.Context) error {
			if !loaded.Load() {
				return errors.New("loading the graph")
			}
			return nil
		}),
		httpapi.WithReadiness("eventlog", elog.Ready),
		// Writes need the log only; the persister waits out the store.
		httpapi.WithDegradable("store", store.Ready),
	}
	if cfg.Redis == "" { // with Redis, the rate is Redis's, across the nodes
		opts = append(opts, httpapi.WithWriteRate(cfg.WriteRate, cfg.WriteBurst))
	}
	if eng.ready != nil {
		opts = append(opts, httpapi.WithReadiness("redis", eng.ready))
	}
	if m.tokens != nil {
		opts = append(opts, httpapi.WithAuth(m.tokens))
	}
	m.started(func(ctx context.Context) { m.reloadOnHangup(ctx, m.tokens) })
	if cfg.AdminAddr != "" {
		opts = append(opts, httpapi.WithOperatorPort())
	}
	// The console's charts open with the last minutes of these samples.
	history := console.NewHistory(reg)
	m.started(history.Run)
	opts = append(opts, httpapi.WithMetricsHistory(console.HistoryPath, history))
	api := httpapi.NewServer(eng.graph, opts...)
	// The API routes itself; a mux in front only when pprof shares the
	// port, so a request is not routed once more for nothing. The console
	// is on the operator port when there is one.
	var handler http.Handler = api
	if cfg.AdminAddr != "" {
		if err := m.serveOperators(api); err != nil {
			return err
		}
	} else {
		if cfg.Pprof {
			handler = withPprof(api)
		}
		handler = console.Mount(handler)
	}
	m.http = api.HTTPServer(handler)
	m.served = make(chan error, 1)
	go func() { m.served <- m.http.Serve(api.Listen(m.ln)) }()
	return nil
}

// withPprof serves /debug/pprof/ beside h.
func withPprof(h http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", h)
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	return mux
}

// serveOperators serves the operator port (--admin-addr): metrics, health,
// readiness, profiles with --pprof, and the console with the API's reads
// it asks for. It asks for no token but the API's own: it belongs on a
// network only operators reach. It closes last, so that the metrics
// answer while the service drains.
func (m *Main) serveOperators(api *httpapi.Server) error {
	ln := m.adminLn
	var h http.Handler = api.OperatorHandler()
	if m.cfg.Pprof {
		h = withPprof(h)
	}
	h = console.OnOperatorPort(h, api)
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute}
	go srv.Serve(ln)
	m.logger.Info("operator port", "addr", ln.Addr().String(), "pprof", m.cfg.Pprof)
	m.opened(func(shutdown context.Context) { srv.Shutdown(shutdown) })
	return nil
}

// reloadOnHangup re-reads the token files on SIGHUP (a nil a: there is
// nothing to re-read), keeping the connections; a file that is not valid
// keeps the tokens as they were, and says so. The certificate reloads by
// itself when its files change.
func (m *Main) reloadOnHangup(ctx context.Context, a *auth.Authenticator) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-m.hup:
		}
		if a == nil {
			m.logger.Info("SIGHUP: no authentication configured, nothing to re-read")
		} else if err := a.Reload(); err != nil {
			m.logger.Error("SIGHUP: the token files could not be re-read; the tokens stay as they were", "err", err)
		} else {
			m.logger.Info("SIGHUP: the token files were re-read")
		}
	}
}

// startPersister stores the log into the durable store, batch by batch,
// until Close, which first lets it drain the log.
func (m *Main) startPersister(store durableStore, elog *eventlog.Log, eng *engine, reg prometheus.Registerer) {
	cfg := m.cfg
	opts := []pipeline.Option{pipeline.WithRate(cfg.PersistRate, max(cfg.PersistBatch, int(cfg.PersistRate))), pipeline.WithLogger(m.logger)}
	if cfg.Regions.Region != "" {
		// The other regions' events reach the engine through the
		// persister (and its own region's, for an engine that keeps
		// nothing across a restart: pipeline.Importer.Own).
		// Each region mends what the others' concurrent changes break
		// of the rules between kinds (followgraph.Mend).
		mend := func(ctx context.Context, events []fg.Event) (int, error) { return fg.Mend(ctx, eng.graph, events) }
		opts = append(opts, pipeline.WithImport(pipeline.Importer{Apply: eng.graph.(fg.Applier).Apply, Mend: mend, Own: eng.volatile, MaxOffset: cfg.Regions.MaxOffset}))
	}
	persister := pipeline.New(store, reg, opts...)
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		err := elog.Consume(ctx, persisterName, cfg.PersistBatch, cfg.PersistWait, func(ctx context.Context, batch []eventlog.Message, last uint64) error {
			if err := persister.Handle(ctx, messages(batch), last); err != nil {
				return err
			}
			// Into the applied window (with Redis) before the batch leaves
			// the log.
			return elog.KeepApplied(ctx, batch)
		})
		if err != nil && !errors.Is(err, context.Canceled) {
			m.logger.Error("persister", "err", err)
		}
	}()
	m.opened(func(shutdown context.Context) {
		recovery.Drain(shutdown, elog, persisterName, m.logger)
		stop()
		<-done
	})
}

// persisterName is the durable name of the log's consumer that stores it.
const persisterName = "persister"

// Wait returns when ctx ends (nil), or with the HTTP server's error.
func (m *Main) Wait(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return nil
	case err := <-m.served:
		return fmt.Errorf("http: %w", err)
	}
}

// Close stops taking requests and finishes those in flight, then closes
// what Run opened in the reverse order, all within --shutdown-timeout:
// what is not drained by then stays in the log for the next start.
func (m *Main) Close() error {
	if m.logger == nil {
		return nil
	}
	shutdown, cancel := context.WithTimeout(context.Background(), m.cfg.ShutdownTimeout)
	defer cancel()
	if m.http != nil {
		m.logger.Info("followgraph stopping", "shutdown_timeout", m.cfg.ShutdownTimeout.String())
		if err := m.http.Shutdown(shutdown); err != nil {
			m.logger.Error("http shutdown", "err", err)
		}
	}
	for i := len(m.closers) - 1; i >= 0; i-- {
		m.closers[i](shutdown)
	}
	m.closers = nil
	if m.http != nil {
		m.logger.Info("followgraph stopped")
	}
	return nil
}

func messages(batch []eventlog.Message) []pipeline.Message {
	out := make([]pipeline.Message, len(batch))
	for i, m := range batch {
		out[i] = pipeline.Message{Seq: m.Seq, Event: m.Event, Foreign: m.Foreign}
	}
	return out
}

// registerLogMetrics exports how far the durable store is behind the log,
// and how many messages of the log were not events (each is logged, and
// skipped: never applied).
func registerLogMetrics(reg prometheus.Registerer, elog *eventlog.Log, regions bool) {
	reg.MustRegister(pipeline.NewBacklog(func(ctx context.Context) (uint64, time.Time, error) { return elog.Pending(ctx, persisterName) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "followgraph_eventlog_undecodable_total", Help: "Messages met in the event log that were not events: logged and skipped, never applied."},
			func() float64 { return float64(elog.Undecodable()) }))
	if regions {
		reg.MustRegister(sourcesCollector{elog})
	}
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
