package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/followgraph/followgraph/eventlog"
	"github.com/followgraph/followgraph/internal/secret"
	"github.com/followgraph/followgraph/memgraph"
	"github.com/followgraph/followgraph/recovery"
	"github.com/followgraph/followgraph/redisgraph"
)

// The operator commands, rebuild and reconcile, work on the hot copy in
// Redis against the expected graph: the durable store plus the event
// log's tail, loaded into memory as serve's recovery loads it (memgraph,
// ~31 bytes an edge). The service may keep serving and writing meanwhile.

// opsConfig is what rebuild and reconcile are told: where the deployment's
// servers are, as serve is told.
type opsConfig struct {
	servers
	scrub *secret.Scrubber // of the servers' secrets, once resolved
}

func (c *opsConfig) flags(cmd *cobra.Command) {
	readsEnv(cmd) // prepare calls envDefaults
	c.servers.flags(cmd.Flags(), "folder for embedded data (the SQLite store and NATS log when --db and --nats are not given; serve must not be running then)",
		"Redis URL of the hot copy, as serve --redis")
}

// prepare reads the environment's settings and the password files,
// checks the servers (with needRedis, --redis is required), and takes the
// data folder's lock when the command uses it; done releases it.
func (c *opsConfig) prepare(cmd *cobra.Command, needRedis bool) (done func(), err error) {
	if err := envDefaults(cmd.Flags()); err != nil {
		return nil, err
	}
	if c.scrub, err = c.resolve(); err != nil {
		return nil, err
	}
	if needRedis && c.Redis == "" {
		return nil, errNoRedis
	}
	if err := c.check(); err != nil {
		return nil, c.scrub.Error(err)
	}
	if !c.embedded() {
		return func() {}, nil
	}
	unlock, err := c.lockData()
	if err != nil {
		return nil, err
	}
	return func() { unlock() }, nil
}

// expected loads the graph Redis should hold: the store, then the events
// of the log it may lack. Changes relayed into the log after this are not
// in it; reconcile reports Redis states newer than it as "ahead". It also
// returns a log sequence up to which every event is in it.
func (c *opsConfig) expected(ctx context.Context, out io.Writer) (*memgraph.Graph, uint64, error) {
	start := time.Now()
	store, err := openStore(ctx, c.DB, c.Data, nil)
	if err != nil {
		return nil, 0, err
	}
	defer store.Close()
	discard := slog.New(slog.DiscardHandler)
	elog, err := recovery.OpenLog(ctx, store, eventlog.Config{Dir: filepath.Join(c.Data, "nats"), URL: c.NATS,
		Stream: c.NATSStream, Subject: natsSubject(c.NATSStream), Logger: discard, Regions: c.Regions.regions()}, false, discard)
	if err != nil {
		return nil, 0, err
	}
	defer elog.Close()
	seq, err := elog.LastSeq(ctx) // before the log is read: see recovery.Load
	if err != nil {
		return nil, 0, err
	}
	g := memgraph.New()
	if err := recovery.Load(ctx, g, store, elog); err != nil {
		return nil, 0, err
	}
	st := g.Stats()
	fmt.Fprintf(out, "expected graph: %d users, %d edges, read from the store and the log in %s\n",
		st.Users, st.Edges, time.Since(start).Round(time.Millisecond))
	return g, seq, nil
}

// both returns the expected graph and the hot copy in Redis, and what
// closes the connection to Redis.
func (c *opsConfig) both(ctx context.Context, out io.Writer) (*memgraph.Graph, uint64, *redisgraph.Graph, func(), error) {
	src, seq, err := c.expected(ctx, out)
	if err != nil {
		return nil, 0, nil, nil, err
	}
	g, closeRedis, err := openRedis(ctx, c.Redis, nil, redisgraph.WithPrefix(c.RedisPrefix), redisgraph.WithMaxKeyMembers(c.RedisMaxKeyMembers))
	if err != nil {
		return nil, 0, nil, nil, err
	}
	return src, seq, g, closeRedis, nil
}

// rebuild writes the expected graph into Redis, then marks Redis as
// holding it again (the outbox streams, whose absence stops the writes
// after a loss) and vouches for every server (redisgraph's vouch.go).
func (c *opsConfig) rebuild(ctx context.Context, out io.Writer, opts redisgraph.RebuildOptions) error {
	src, seq, g, closeRedis, err := c.both(ctx, out)
	if err != nil {
		return err
	}
	defer closeRedis()
	start := time.Now()
	st, err := g.Rebuild(ctx, src, opts)
	if err != nil {
		return err
	}
	created, err := g.InitOutbox(ctx)
	if err != nil {
		return err
	}
	if err := g.VouchAll(ctx, seq); err != nil {
		return err
	}
	fmt.Fprintf(out, "rebuilt: %d users, %d edges, %d sides written, %d outbox streams created, in %s\n",
		st.Users, st.Edges, st.Written, created, time.Since(start).Round(time.Millisecond))
	if st.Refused > 0 {
		fmt.Fprintf(out, "refused: %d sides of live edges older than Redis's tombstone horizon, of which Redis keeps no record: "+
			"Redis purged their tombstones, so the store and log are older than Redis (a restored backup?); they were not written\n", st.Refused)
	}
	return nil
}

func newRebuild() *cobra.Command {
	var cfg opsConfig
	var opts redisgraph.RebuildOptions
	cmd := &cobra.Command{
		Use:   "rebuild",
		Short: "Rebuild the hot copy in Redis from the store and the log",
		Long: `Rebuild the hot copy in Redis from the durable store and the event
log's tail: after Redis lost its data, or a failover to a replica that had
not caught up. Every edge, live or unfollowed, is written to both sides with
its version, only over an older state, so the service may keep serving and
writing meanwhile: a change it makes is never undone. Rebuild adds and
corrects; it removes nothing (reconcile --fix does).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			done, err := cfg.prepare(cmd, true)
			if err != nil {
				return err
			}
			defer done()
			return cfg.scrub.Error(cfg.rebuild(cmd.Context(), cmd.OutOrStdout(), opts))
		},
	}
	cfg.flags(cmd)
	cmd.Flags().IntVar(&opts.Concurrency, "concurrency", 0, "pipelines of writes in flight (0: the default, 8)")
	return cmd
}

func newReconcile() *cobra.Command {
	var cfg opsConfig
	var opts redisgraph.ReconcileOptions
	var show int
	var horizon time.Duration
	cmd := &cobra.Command{
		Use:   "reconcile",
		Short: "Compare Redis with the store and the log; repair with --fix",
		Long: `Compare the hot copy in Redis with the durable store plus the event
log's tail: both sides of every edge of every kind, follows, blocks, mutes
and follow requests (members, times, ended edges), each private setting, the
counters, the flags of the other kinds and each user's clock. Prints each
difference (up to --show), then "differences: N" (not counting states newer
than the store: changes made since, reported as ahead), by kind of
difference and by side. With --fix it repairs them, rate-limited (--rate),
never undoing a change the service makes meanwhile. Exits 1 when
differences remain.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			done, err := cfg.prepare(cmd, true)
			if err != nil {
				return err
			}
			defer done()
			return cfg.scrub.Error(cfg.reconcile(cmd.Context(), cmd.OutOrStdout(), opts, show, horizon))
		},
	}
	cfg.flags(cmd)
	f := cmd.Flags()
	f.BoolVar(&opts.Fix, "fix", false, "repair every difference (not the states newer than the store)")
	f.Float64Var(&opts.Rate, "rate", 1000, "most repairs per second, so production is not hurt (0: no limit)")
	f.IntVar(&show, "show", 100, "most differences printed")
	f.DurationVar(&horizon, "horizon", 0, "treat Redis states older than this long before the start as wrong even if newer than the store (only once the relay and persister have caught up; 0: never)")
	return cmd
}

// reconcile compares Redis with the expected graph and prints the
// differences (up to show), then their count; an error when some remain.
func (c *opsConfig) reconcile(ctx context.Context, out io.Writer, opts redisgraph.ReconcileOptions, show int, horizon time.Duration) error {
	read := time.Now()
	src, _, g, closeRedis, err := c.both(ctx, out)
	if err != nil {
		return err
	}
	defer closeRedis()
	if horizon > 0 {
		opts.Horizon = read.Add(-horizon)
	}
	shown := 0
	bySide := map[string]int{} // Report is called from one goroutine at a time
	opts.Report = func(d redisgraph.Diff) {
		if d.Kind == redisgraph.DiffAhead {
			return
		}
		bySide[d.Side.String()]++
		if shown < show {
			shown++
			fmt.Fprintln(out, d)
		}
	}
	start := time.Now()
	st, err := g.Reconcile(ctx, src, opts)
	if err != nil {
		return err
	}
	n := st.Differences()
	var kinds []string
	for k, c := range st.Diffs {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, c))
	}
	slices.Sort(kinds)
	var sides []string
	for s, c := range bySide {
		sides = append(sides, fmt.Sprintf("%s %d", s, c))
	}
	summary := strings.Join(kinds, ", ")
	if len(sides) > 0 {
		slices.Sort(sides)
		summary += "; by side: " + strings.Join(sides, ", ")
	}
	fmt.Fprintf(out, "differences: %d (%s); fixed %d; %d users, %d edge sides compared in %s\n",
		n, summary, st.Fixed, st.Users, st.Edges, time.Since(start).Round(time.Millisecond))
	if n > st.Fixed {
		return fmt.Errorf("%d differences remain", n-st.Fixed)
	}
	return nil
}
