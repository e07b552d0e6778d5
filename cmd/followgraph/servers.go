package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/followgraph/followgraph/eventlog"
	"github.com/followgraph/followgraph/internal/lockfile"
	"github.com/followgraph/followgraph/internal/secret"
	"github.com/followgraph/followgraph/redisgraph"
)

// servers names a deployment's backends, as every command takes them:
// serve, import, rebuild and reconcile.
type servers struct {
	Data        string
	Redis       string
	RedisPrefix string
	// RedisMaxKeyMembers bounds the entries of a key of a user's lists.
	RedisMaxKeyMembers int
	// RedisReplicas (serve only): the replicas reads go to, as URLs of a
	// standalone Redis's, or "cluster" for a Cluster's; "": none.
	RedisReplicas string
	NATS          string
	NATSStream    string
	DB            string

	// The deployment's regions (regions.go).
	Regions regionConfig

	// serve's embedded NATS cluster (natscluster.go).
	NATSCluster       string
	NATSClusterListen string
	// NATSClusterPasswordFile holds the password of the route URLs' user.
	NATSClusterPasswordFile string
	NATSNode                string

	// Files that hold the passwords of the URLs above, so that they need
	// not stand on a command line (where ps shows them) nor in the
	// environment.
	RedisPasswordFile string
	NATSPasswordFile  string
	DBPasswordFile    string
}

// flags registers the servers' flags; dataHelp and redisHelp say what
// --data and --redis are to the command.
func (s *servers) flags(f *pflag.FlagSet, dataHelp, redisHelp string) {
	f.StringVar(&s.Data, "data", "./data", dataHelp)
	f.StringVar(&s.Redis, "redis", "", redisHelp)
	f.StringVar(&s.RedisPrefix, "redis-prefix", "fg", "prefix of every Redis key, so that several deployments can share a Redis")
	f.IntVar(&s.RedisMaxKeyMembers, "redis-max-key-members", redisgraph.DefaultMaxKeyMembers, "most entries a Redis key of a user's list holds: a longer list is split into chunks of its user's slot; give every node the same")
	f.StringVar(&s.NATS, "nats", "", "NATS URL of the event log (nats://[user:password@]host:4222, or nats://token@host; a cluster's URLs comma separated); replaces the embedded NATS server")
	f.StringVar(&s.NATSStream, "nats-stream", eventlog.DefaultStream, "name of the event stream, so that several deployments can share a NATS (its subjects are <lowercase name>.edges.*)")
	f.StringVar(&s.DB, "db", "", "postgres:// or mysql:// URL of the durable store; replaces embedded SQLite")
	f.StringVar(&s.RedisPasswordFile, "redis-password-file", "", "file holding the Redis password (instead of putting it in --redis)")
	f.StringVar(&s.NATSPasswordFile, "nats-password-file", "", "file holding the NATS password of --nats's user, or its token when --nats names no user")
	f.StringVar(&s.DBPasswordFile, "db-password-file", "", "file holding the database password of --db's user")
	regionFlags(f, &s.Regions)
}

// check reports a Redis prefix, replicas or a --db that cannot work.
func (s *servers) check() error {
	if s.RedisReplicas != "" && s.Redis == "" {
		return errors.New("--redis-replicas needs --redis")
	}
	if s.Redis != "" {
		if err := checkRedisURL(s.Redis); err != nil {
			return fmt.Errorf("--redis: %w", err)
		}
	}
	if s.RedisReplicas != "" && s.RedisReplicas != "cluster" {
		for _, u := range strings.Split(s.RedisReplicas, ",") {
			if err := checkRedisURL(u); err != nil {
				return fmt.Errorf("--redis-replicas: %w", err)
			}
		}
	}
	if s.Redis != "" && (s.RedisPrefix == "" || strings.ContainsAny(s.RedisPrefix, "{}")) {
		return fmt.Errorf("--redis-prefix %q: want a non-empty prefix without '{' or '}'", s.RedisPrefix)
	}
	if s.Redis != "" && s.RedisMaxKeyMembers < 2 {
		return fmt.Errorf("--redis-max-key-members %d: want at least 2", s.RedisMaxKeyMembers)
	}
	if s.DB != "" {
		return checkDB(s.DB)
	}
	return nil
}

// checkRedisURL reports a Redis URL that cannot name a server: one
// redisgraph.ParseURL refuses, or an address whose port is not a number
// from 1 to 65535, which would otherwise be found out only by dialling.
func checkRedisURL(u string) error {
	opt, err := redisgraph.ParseURL(u)
	if err != nil {
		return err
	}
	for _, addr := range opt.InitAddress {
		_, port, err := net.SplitHostPort(addr)
		if n, perr := strconv.Atoi(port); err != nil || perr != nil || n < 1 || n > 65535 {
			return fmt.Errorf("address %q: want host:port, the port a number from 1 to 65535", addr)
		}
	}
	return nil
}

// resolve puts the passwords of the password files into the URLs, and
// returns a scrubber of every secret the URLs hold, for the logger and
// the command's errors.
func (s *servers) resolve() (*secret.Scrubber, error) {
	var secrets []string
	for _, u := range []struct {
		flag string
		url  *string
		file string
	}{
		{"--redis", &s.Redis, s.RedisPasswordFile},
		{"--nats", &s.NATS, s.NATSPasswordFile},
		{"--db", &s.DB, s.DBPasswordFile},
		{"--nats-cluster", &s.NATSCluster, s.NATSClusterPasswordFile},
	} {
		if u.file != "" {
			if *u.url == "" {
				return nil, fmt.Errorf("%s-password-file: needs %s", u.flag, u.flag)
			}
			b, err := os.ReadFile(u.file)
			if err != nil {
				return nil, fmt.Errorf("%s-password-file: %w", u.flag, err)
			}
			pw := strings.TrimRight(string(b), "\r\n")
			if pw == "" {
				return nil, fmt.Errorf("%s-password-file %s: the file is empty", u.flag, u.file)
			}
			secrets = append(secrets, pw)
			if *u.url, err = secret.WithPassword(*u.url, pw); err != nil {
				return nil, fmt.Errorf("%s: %w", u.flag, err)
			}
		}
		secrets = append(secrets, secret.Values(*u.url)...)
	}
	for _, u := range strings.Split(s.RedisReplicas, ",") {
		secrets = append(secrets, secret.Values(u)...)
	}
	return secret.NewScrubber(secrets...), nil
}

// lockData takes the data folder's lock, which serve holds while it
// runs when it keeps the embedded store or log there (embedded), so that
// an operator command cannot write them under a running service (which
// would never see the change) nor two services share one folder. The
// folder is made if missing. A command that keeps nothing there neither
// makes the folder nor locks it.
func (s *servers) lockData() (unlock func() error, err error) {
	if err := os.MkdirAll(s.Data, 0o755); err != nil {
		return nil, err
	}
	unlock, err = lockfile.Lock(s.Data)
	if err != nil {
		return nil, fmt.Errorf("the data folder %w: stop the followgraph serve that uses it first", err)
	}
	return unlock, nil
}

// embedded reports whether the command uses the data folder: the
// embedded store or the embedded log (a node of --nats-cluster's
// embedded cluster included, which has no --nats).
func (s *servers) embedded() bool { return s.DB == "" || s.NATS == "" }

// errNoRedis is the error of an operator command that needs --redis.
var errNoRedis = errors.New("--redis is required: the hot copy to work on")
