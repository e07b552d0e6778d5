package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/rueidis"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/eventlog"
	"github.com/followgraph/followgraph/horizon"
	"github.com/followgraph/followgraph/internal/redistime"
	"github.com/followgraph/followgraph/internal/secret"
	"github.com/followgraph/followgraph/memgraph"
	"github.com/followgraph/followgraph/pipeline"
	"github.com/followgraph/followgraph/recovery"
	"github.com/followgraph/followgraph/redisgraph"
)

// engine is the hot copy serve answers from, with what differs between
// the in-process engine and Redis.
type engine struct {
	graph fg.Graph
	// volatile: the engine keeps nothing across a restart (memgraph), so
	// that it is loaded at start, and with regions takes its own region's
	// events from the persister too (pipeline.Importer.Own).
	volatile bool
	// recover brings the engine up to date before the service is ready.
	recover func(ctx context.Context) error
	stats   func() []any // for the ready log line
	// relay, when not nil, moves the engine's change events from its
	// outbox into the log (Redis).
	relay *pipeline.Relay
	// ready, when not nil, is the engine's readiness check.
	ready func(ctx context.Context) error
	// watch, when not nil, runs while the service serves, until ctx ends:
	// it keeps the hot copy whole (Redis: rebuilds it after a loss).
	watch func(ctx context.Context)
	// backlog, when not nil, holds changes on their way to the log (the
	// outbox), which bound the tombstone horizon as the log's do.
	backlog horizon.Backlog
	close   func()
}

// memEngine is the default: memgraph, loaded from the store and the log's
// tail at start, whose hook publishes each change to the log before it is
// acknowledged.
// refused is what its Apply calls with each change it refuses for being
// older than its tombstone horizon.
func memEngine(cfg Config, store durableStore, elog *eventlog.Log, reg prometheus.Registerer, refused func(fg.Refusal)) *engine {
	g := memgraph.New(memgraph.WithHook(elog.Hook()), memgraph.WithMaxFollowing(cfg.MaxFollowing), memgraph.WithRefused(refused),
		memgraph.WithRegion(cfg.Regions.id()))
	reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "followgraph_engine_users", Help: "Users known to the graph engine."},
			func() float64 { return float64(g.Stats().Users) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "followgraph_engine_edges", Help: "Live follow edges in the graph engine."},
			func() float64 { return float64(g.Stats().Edges) }),
	)
	return &engine{
		graph:    g,
		volatile: true,
		recover:  func(ctx context.Context) error { return recovery.Load(ctx, g, store, elog) },
		stats: func() []any {
			st := g.Stats()
			return []any{"users", st.Users, "edges", st.Edges}
		},
		close: func() {},
	}
}

// redisEngine is redisgraph on the Redis at cfg.Redis. Redis keeps the
// graph itself, so there is nothing to load at start. Each change's event
// is written to Redis's outbox with the change, and the write is
// acknowledged once its event is also in the log (the hook), so that
// Redis losing its data (no persistence, a failover to a replica that had
// not caught up) loses nothing acknowledged: `followgraph rebuild` brings
// it back from the store and the log. A change whose event the hook put in
// the log leaves the outbox; the relay moves into the log what a crash or
// a failed hook left there, and the persister stores the log as in the
// default. refused is what its Apply calls with each change it refuses for
// being older than its tombstone horizon.
func redisEngine(ctx context.Context, cfg Config, store durableStore, elog *eventlog.Log, reg prometheus.Registerer, logger *slog.Logger,
	refused func(fg.Refusal)) (*engine, error) {
	lost, unvouched := make(chan struct{}, 1), make(chan struct{}, 1)
	signal := func(c chan struct{}) {
		select {
		case c <- struct{}{}:
		default:
		}
	}
	if err := waitBackend(ctx, logger, "Redis", cfg.StartTimeout, redisTransient, func(ctx context.Context) error {
		return probeRedis(ctx, cfg.Redis, cfg.RedisReplicas)
	}); err != nil {
		return nil, err
	}
	replicas, closeReplicas, err := replicaReads(cfg.Redis, cfg.RedisReplicas)
	if err != nil {
		return nil, err
	}
	g, closeRedis, err := openRedis(ctx, cfg.Redis, reg, append(replicas, redisgraph.WithPrefix(cfg.RedisPrefix), redisgraph.WithRegisterer(reg),
		redisgraph.WithMaxKeyMembers(cfg.RedisMaxKeyMembers),
		redisgraph.WithMaxFollowing(cfg.MaxFollowing), redisgraph.WithHook(elog.Hook()), redisgraph.WithWriteGate(elog.Writable),
		redisgraph.WithWriteRate(cfg.WriteRate, cfg.WriteBurst), // across the nodes, in Redis
		redisgraph.WithOnLoss(func() { signal(lost) }), redisgraph.WithRefused(refused),
		redisgraph.WithOnUnvouched(func(uint16) { signal(unvouched) }), redisgraph.WithRegion(cfg.Regions.id()))...)
	if err != nil {
		closeReplicas()
		return nil, err
	}
	keeper := &recovery.Redis{Graph: g, Store: store, Log: elog, Owner: nodeName(cfg), Logger: logger}
	reg.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "followgraph_cache_hits_total", Help: "Reads of hot keys answered from the client-side cache."},
			func() float64 { h, _ := g.CacheStats(); return float64(h) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "followgraph_cache_misses_total", Help: "Reads of hot keys that went to Redis."},
			func() float64 { _, m := g.CacheStats(); return float64(m) }),
	)
	mode, maxIdle := "standalone", 50*time.Millisecond
	if g.Cluster() {
		mode, maxIdle = "cluster", time.Second
	}
	outbox := g.Outbox(nodeName(cfg), leaseTTL)
	relay := pipeline.NewRelay(withFaults(outbox), elog.RelayHook(), reg,
		pipeline.WithRelayLogger(logger), pipeline.WithRelayIdle(5*time.Millisecond, maxIdle))
	return &engine{
		graph:   g,
		recover: keeper.Recover,
		stats:   func() []any { return []any{"redis_mode", mode} },
		relay:   relay,
		backlog: outbox.Oldest,
		ready: func(ctx context.Context) error {
			missing, total, err := g.OutboxMissing(ctx)
			if err == nil && missing > 0 {
				err = fmt.Errorf("Redis has lost the graph (%d of %d outbox streams missing): reads and writes wait for it to be rebuilt", missing, total)
			}
			return err
		},
		watch: func(ctx context.Context) {
			done := make(chan struct{})
			go func() {
				defer close(done)
				keeper.KeepCheckpoints(ctx, checkpointInterval)
			}()
			keeper.Watch(ctx, lost, unvouched, time.Second)
			<-done
		},
		close: func() {
			// At a clean stop another node takes the streams over at once.
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			outbox.Release(ctx)
			closeRedis()
			closeReplicas()
		},
	}, nil
}

// engineDesc describes the engine of cfg for the start-up log line, its
// password masked.
func engineDesc(cfg Config) string {
	if cfg.Redis == "" {
		return "memgraph (in-process)"
	}
	return fmt.Sprintf("redis %s (prefix %q)", secret.Redact(cfg.Redis), cfg.RedisPrefix)
}

// replicaReads returns the options of redisgraph that send reads to the
// replicas named by replicas (serve's --redis-replicas) of the Redis at
// primary, and what closes their clients.
func replicaReads(primary, replicas string) ([]redisgraph.Option, func(), error) {
	if replicas == "" {
		return nil, func() {}, nil
	}
	base, err := redisgraph.ParseURL(primary)
	if err != nil {
		return nil, nil, err
	}
	own := func(o rueidis.ClientOption) rueidis.ClientOption {
		o.DisableCache, o.ForceSingleClient, o.ShuffleInit = true, true, false
		return o
	}
	if replicas == "cluster" {
		return []redisgraph.Option{redisgraph.WithClusterReplicas(func(addr string) (rueidis.Client, error) {
			o := own(base)
			o.InitAddress = []string{addr}
			return rueidis.NewClient(o)
		})}, func() {}, nil
	}
	var clients []rueidis.Client
	closeAll := func() {
		for _, c := range clients {
			c.Close()
		}
	}
	for _, u := range strings.Split(replicas, ",") {
		o, err := redisgraph.ParseURL(u)
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("--redis-replicas: %w", err)
		}
		if o.Password == "" {
			o.Username, o.Password = base.Username, base.Password
		}
		c, err := rueidis.NewClient(own(o))
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("--redis-replicas %s: %w", secret.Redact(u), err)
		}
		clients = append(clients, c)
	}
	return []redisgraph.Option{redisgraph.WithReplicaClients(clients...)}, closeAll, nil
}

// openRedis connects to the Redis at url (a redis:// or redis+cluster://
// URL) and returns redisgraph on it with opts, and what closes the
// connection. With a registerer (serve's), its round trips are timed there
// (followgraph_redis_roundtrip_seconds); nil times nothing.
func openRedis(ctx context.Context, url string, reg prometheus.Registerer, opts ...redisgraph.Option) (*redisgraph.Graph, func(), error) {
	opt, err := redisgraph.ParseURL(url)
	if err != nil {
		return nil, nil, err
	}
	client, err := rueidis.NewClient(opt)
	if err != nil {
		return nil, nil, fmt.Errorf("redis %s: %w", secret.Redact(url), err)
	}
	if reg != nil {
		client = redistime.Wrap(client, reg)
	}
	g, err := redisgraph.New(ctx, client, opts...)
	if err != nil {
		client.Close()
		return nil, nil, err
	}
	return g, func() { g.Close(); client.Close() }, nil
}

// checkpointInterval is how often the Redis servers' checkpoints move
// along the log (recovery.Redis.KeepCheckpoints): what a heal replays
// after a failover begins at most this long before it, plus the time the
// replica lagged.
const checkpointInterval = 250 * time.Millisecond

// leaseTTL is how long an outbox stream waits for a new relay after its
// node died.
const leaseTTL = 5 * time.Second

// nodeName names this node among the nodes of a deployment, the same
// across a restart, so that a node killed and started again takes its
// leases back at once instead of waiting for them to run out (its relay
// would otherwise find nothing it may move, and a clean stop soon after
// would leave the outbox undrained). It is the host and the data folder,
// which serve's lock keeps to one process; when serve keeps nothing in a
// data folder (and so takes no lock), the host and the listen address,
// which one process at a time can listen on (with the process id for a
// port the system picks).
func nodeName(cfg Config) string {
	host, _ := os.Hostname()
	if !cfg.embedded() {
		name := host + " " + cfg.Addr
		if _, port, _ := net.SplitHostPort(cfg.Addr); port == "0" {
			name += fmt.Sprintf(" pid %d", os.Getpid())
		}
		return name
	}
	data := cfg.Data
	if abs, err := filepath.Abs(data); err == nil {
		data = abs
	}
	return host + ":" + data
}
