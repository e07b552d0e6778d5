package main

import (
	"encoding/json"
	"time"

	"github.com/spf13/cobra"

	"github.com/followgraph/followgraph/internal/tlsfiles"
	"github.com/followgraph/followgraph/loadgen"
)

func newBench() *cobra.Command {
	var cfg loadgen.Config
	var asJSON bool
	var ca, cert, key string
	cmd := readsEnv(&cobra.Command{
		Use:   "bench",
		Short: "Load a running server with a read or write mix; report latency",
		Long: `Drive a running server for --duration and report, per kind of request, the
answers (2xx, non-2xx, transport errors), the rate, and the p50/p90/p99/max
latency of the 2xx answers (histogram buckets: within 3%, rounded up).

reads:  40% following/followers pages of 20 (half of them second pages, by a
        cursor from a recent first page), 30% relations of 20 ids, 20% counts
        (of 10 ids, or of one user), 10% mutuals, common-following and
        known-followers.
writes: 63% follows, 30% unfollows (of a recent follow of this client if any),
        2% blocks, 5% follows of the last 8 ids, which the run makes private
        at its start (PUT settings): follow requests. A follow or request
        answered 403 blocked counts as answered, and as refused.

Ids are drawn from 1..--users by rand.Zipf: P(id) ∝ (9+id)^-skew, or uniformly
with --skew 0. With --rate the requests start on a fixed schedule whatever the
answers (open loop), and latency counts from the scheduled start.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := envDefaults(cmd.Flags()); err != nil {
				return err
			}
			if err := cfg.Validate(); err != nil {
				return err
			}
			if ca != "" || cert != "" || key != "" {
				tlsCfg, err := tlsfiles.Client(ca, cert, key)
				if err != nil {
					return err
				}
				cfg.TLS = tlsCfg
			}
			res, err := loadgen.Run(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(res)
			}
			res.Print(cmd.OutOrStdout())
			return nil
		},
	})
	f := cmd.Flags()
	f.StringVar(&cfg.URL, "url", "http://127.0.0.1:8080", "the server")
	f.DurationVar(&cfg.Duration, "duration", 20*time.Second, "how long to send requests")
	f.IntVar(&cfg.Concurrency, "concurrency", 64, "clients (connections) sending at once")
	f.Float64Var(&cfg.Rate, "rate", 0, "requests per second, on an open-loop schedule (0: as fast as possible)")
	f.StringVar(&cfg.Mix, "mix", "reads", "reads or writes")
	f.IntVar(&cfg.Users, "users", 200_000, "draw ids from 1..N (gen makes edges/50 users)")
	f.Float64Var(&cfg.Skew, "skew", 1.1, "Zipf exponent of the ids' popularity (0: uniform)")
	f.Uint64Var(&cfg.Seed, "seed", 1, "seed of the ids and the mix")
	f.BoolVar(&asJSON, "json", false, "print the results as JSON")
	f.StringVar(&cfg.Token, "token", "", "bearer token sent with every request (a service token with the read or write scope, or a user's JWT)")
	f.StringVar(&ca, "tls-ca", "", "PEM file of the CAs that sign an https:// server's certificate (default: the system's)")
	f.StringVar(&cert, "tls-client-cert", "", "PEM file of the client certificate, for a server that requires one (with --tls-client-key)")
	f.StringVar(&key, "tls-client-key", "", "PEM file of the client certificate's key")
	return cmd
}
