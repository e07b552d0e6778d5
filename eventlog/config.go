package eventlog

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"
)

// Defaults of Config.
const (
	DefaultStream  = "FOLLOWGRAPH"
	DefaultSubject = "followgraph.edges"
	// DuplicateWindow is how long the stream remembers message ids: a
	// publish of an event already stored within it is dropped.
	DuplicateWindow = 2 * time.Minute
)

// SyncPolicy is when the embedded server forces written events to disk.
type SyncPolicy uint8

const (
	// SyncDefault, the zero value, means DefaultSync.
	SyncDefault SyncPolicy = iota
	// SyncAlways writes every event with O_SYNC before acknowledging it:
	// an acknowledged event survives power loss.
	SyncAlways
	// SyncInterval writes every event to the operating system before
	// acknowledging it, and fsyncs every two minutes (the server's
	// default): an acknowledged event survives kill -9 of the process,
	// server included, but not a power loss or kernel crash within the
	// interval.
	SyncInterval
)

// DefaultSync is the policy of a zero Config.Sync (the package
// documentation says why; docs/BENCHMARKS.md has the figures).
const DefaultSync = SyncInterval

func (p SyncPolicy) String() string {
	switch p {
	case SyncDefault:
		return "default"
	case SyncAlways:
		return "always"
	case SyncInterval:
		return "interval"
	}
	return fmt.Sprintf("SyncPolicy(%d)", uint8(p))
}

// Config configures Open. The zero value, with Dir set, is the embedded
// single-machine log.
type Config struct {
	// Dir holds the embedded server's JetStream file store (such as
	// ./data/nats). Required when URL is "", ignored otherwise.
	Dir string
	// URL is an external NATS server or cluster (nats://host:4222, several
	// separated by commas). "" runs a server in-process that opens no port.
	URL string
	// Stream is the JetStream stream's name; default DefaultStream.
	Stream string
	// Subject is the subject prefix; default DefaultSubject. Events are
	// stored on "<Subject>.<op word>" ("<Subject>.follow",
	// "<Subject>.unblock", …; see Op.String), all under the stream's
	// "<Subject>.>".
	Subject string
	// Replicas is the stream's replica count when Open creates it, 1 to 5
	// (more than 1 needs a cluster: an external one, or Cluster); default
	// 1. With more than one, a publish is acknowledged once a majority of
	// the replicas stored it.
	Replicas int
	// Cluster, when not nil, makes the embedded server one node of a
	// JetStream cluster whose other nodes are the embedded servers of
	// other processes (see Cluster). Needs URL "".
	Cluster *Cluster
	// StartWait is how long Open (and recovery.OpenLog) keep trying while
	// the log is unavailable for now: NATS not up yet, a JetStream
	// cluster without a leader, a stream leader being elected, no
	// answer in time. Each failed try is logged. 0 tries once.
	StartWait time.Duration
	// Sync is the embedded server's sync policy; default DefaultSync. An
	// external server's policy is its own configuration (jetstream
	// { sync_interval: always }) and Sync does not change it.
	Sync SyncPolicy
	// Logger receives the log's and the embedded server's messages;
	// default slog.Default().
	Logger *slog.Logger
	// DiskReserve is the free space, in bytes, that the embedded server's
	// disk keeps: below it, publishes are refused at once (see disk.go).
	// 0 means DefaultDiskReserve; a negative value, none.
	DiskReserve int64
	// MustExist makes Open fail with a *NoStreamError (ErrNoStream)
	// rather than create the stream when it is missing: for a log that has
	// stored events before (the durable store says so), a missing stream
	// means they are lost, or that the log is configured under another
	// name than it has.
	MustExist bool
	// KeepApplied keeps the applied window (applied.go): the batches the
	// persister applied, for AppliedWindow, for a hot copy that may come
	// back behind the acknowledged changes (Redis after a failover).
	KeepApplied bool
	// Regions, when not nil, makes the log one region's of a deployment
	// in several regions, each taking writes (region.go): events are
	// published to the region's export stream, and the log sources both
	// that stream and the other regions'. Nil is a deployment in one
	// region, as before.
	Regions *Regions
}

// Validate returns an error naming the first field that Open cannot use,
// zero fields standing for their defaults. Open calls it.
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case c.URL == "" && c.Dir == "":
		return errors.New("eventlog: Dir is required for the embedded server (URL is empty)")
	case !validName(c.Stream):
		return fmt.Errorf("eventlog: invalid stream name %q: it must be non-empty, without spaces, '.', '*', '>', '/' or '\\'", c.Stream)
	case !validPrefix(c.Subject):
		return fmt.Errorf("eventlog: invalid subject prefix %q: it must be dot-separated non-empty tokens without spaces or wildcards", c.Subject)
	case c.Replicas < 1 || c.Replicas > 5:
		return fmt.Errorf("eventlog: replicas %d is out of range: it must be 1 to 5", c.Replicas)
	case c.URL != "" && c.Cluster != nil:
		return errors.New("eventlog: Cluster is for the embedded server: URL must be empty")
	case c.URL == "" && c.Cluster == nil && c.Replicas != 1:
		return fmt.Errorf("eventlog: replicas %d needs a NATS cluster (external, or Cluster): the embedded server is a single node", c.Replicas)
	case c.StartWait < 0:
		return fmt.Errorf("eventlog: StartWait %s is negative", c.StartWait)
	case c.Sync > SyncInterval:
		return fmt.Errorf("eventlog: unknown sync policy %d", c.Sync)
	}
	if c.Regions != nil {
		if err := c.Regions.Validate(c.URL == ""); err != nil {
			return err
		}
	}
	if c.Cluster != nil {
		if _, err := c.Cluster.options(); err != nil {
			return err
		}
		if n := len(c.Cluster.Routes); c.Replicas > n {
			return fmt.Errorf("eventlog: replicas %d is more than the cluster's %d nodes", c.Replicas, n)
		}
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.Stream == "" {
		c.Stream = DefaultStream
	}
	if c.Subject == "" {
		c.Subject = DefaultSubject
	}
	if c.Replicas == 0 {
		c.Replicas = 1
	}
	if c.Sync == SyncDefault {
		c.Sync = DefaultSync
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.DiskReserve == 0 {
		c.DiskReserve = DefaultDiskReserve
	}
	return c
}

func validName(s string) bool {
	return s != "" && !strings.ContainsAny(s, " \t\r\n.*>/\\")
}

func validPrefix(s string) bool {
	if s == "" || strings.ContainsAny(s, " \t\r\n*>") {
		return false
	}
	return !slices.Contains(strings.Split(s, "."), "")
}
