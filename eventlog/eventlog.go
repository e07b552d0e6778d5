// Package eventlog is the event log of followgraph on NATS JetStream: the
// write path's durability point. The graph engine hands each change to
// Log.Publish (a followgraph.Hook) before acknowledging it, and Publish
// returns only once the event is stored in the stream. The persister reads
// the stream with Log.Consume into the durable store; at start-up,
// Log.Replay brings an engine up to date with what the store lacks.
//
// # Modes
//
// With Config.URL empty, Open runs a NATS server in-process, listening on
// no port, with its JetStream file store under Config.Dir (locked against
// a second process). With Config.Cluster as well, that server is one node
// of a JetStream cluster whose other nodes are the servers of other
// processes (see Cluster): it listens for their routes, and Open waits
// for the cluster to elect a leader. With a URL it connects to an
// external server or cluster. Everything else is the same code.
//
// # Start-up
//
// Open (and recovery.OpenLog) may run before NATS is up, or while a
// JetStream cluster has no leader yet, and beside other processes opening
// the same log. Each step (connecting, finding or creating the stream,
// recording the store) is tried again while its failure is transient — no
// answer in time, no connection, no leader, not enough peers yet — for
// up to Config.StartWait, logging each failed try; then it returns
// EUnavailable. An answer (a configuration the server refuses, a stream
// that cannot be the log, a missing stream that must exist) is returned
// at once. A step that another node may race (creating the stream,
// recording the store in its metadata) reads the stream again on each
// try, and one that finds the work done is done.
//
// # Message format
//
// One event per message, on subject "<prefix>.<op word>" (prefix is
// Config.Subject, default "followgraph.edges"; the words are Op.String's:
// follow, unfollow, block, unblock, mute, unmute, request, unrequest,
// private, public, state), with header Nats-Msg-Id set to Event.ID()
// ("<user>-<target>-<version>", with "-<kind>" after it for kinds other
// than follow) and this JSON body:
//
//	{"user":"1","target":"2","op":"follow","time":"2026-11-30T15:04:05.123Z","version":"1234567"}
//
// Ids and the version are decimal strings, because JSON numbers lose
// precision above 2^53 in many readers. The time is RFC 3339 in UTC with
// milliseconds and is always the version's millisecond part. A mute also
// has "since" (when the mute began) and, when it ends, "expires", times
// of the same form; no other op has them. The per-user ops (private,
// public, state) have target "0". A state event also has "state", the
// new account state's word (active, deactivated, suspended, deleted):
//
//	{"user":"1","target":"0","op":"state","time":"2026-11-30T15:04:05.123Z","version":"1234567","state":"deactivated"}
//
// and no other op has it. Readers ignore unknown fields.
//
// A message that does not decode to an event passing Event.Validate, or
// whose subject does not name its op, is undecodable. It is logged at
// error level with its sequence, subject and the start of its body,
// counted (Log.Undecodable), and never applied: Replay skips it, Consume
// acknowledges it (which removes it) without handing it to handle.
//
// # The stream: workqueue retention
//
// Open creates the stream (default "FOLLOWGRAPH") with file storage,
// subjects "<prefix>.>", a DuplicateWindow of two minutes (a publish of an
// event id stored within it is acknowledged and dropped), no age, size or
// count limit, discard-new, direct gets allowed, and workqueue retention:
// an event leaves the stream only when the persister's consumer
// acknowledges it. So no event can be dropped before it is persisted, and
// the stream holds exactly the events not yet persisted — which is what
// Pending reports and Replay returns. The server refuses a second
// consumer, so Replay reads the stream with batched direct gets (one round
// trip per event on servers before 2.11). docs/design/eventlog.md says why not
// limits retention.
//
// # Durability: what an acknowledged Publish survives
//
// Kill -9 of the process, under both sync policies, although the embedded
// server dies with the process: a stream of one replica writes each
// message to the operating system (write(2), nothing buffered in the
// process) before acknowledging it, and the kernel keeps the page cache of
// a dead process (TestLog_SurvivesKill kills a publishing child and finds
// every acknowledged event). Open refuses a stream in async persist mode,
// which acknowledges before writing.
//
// Power loss or a kernel crash: only under SyncAlways, which opens the
// store with O_SYNC. SyncInterval fsyncs every two minutes; events
// acknowledged since the last fsync and not yet in the durable store can
// be lost, and their sequence numbers reissued.
//
// SyncAlways costs one synchronous disk write per event, with no group
// commit; DefaultSync is SyncInterval, which keeps the promise that an
// acknowledged write survives the serving process being killed at many
// times the throughput (docs/BENCHMARKS.md has the figures). Choose
// SyncAlways where a power loss must not lose acknowledged writes.
//
// Sync applies to the embedded server, each node's in a cluster. An
// external server's fsync is its own configuration. With more than one
// replica, an acknowledgement means a majority of the replicas stored the
// event, each under its own sync policy (docs/RELIABILITY.md, "What an
// acknowledgement means on a replicated stream").
//
// # Ambiguous failures
//
// A publish whose acknowledgement does not come (a stream leader killed
// with the message, a connection dropped and made again to another
// server of a cluster) or is a transient failure is sent again by
// Publish, with the same message id, until it is acknowledged, within
// the caller's deadline and the duplicate window: the stream stores it
// once. When Publish fails after the message left (ctx ended before the
// acknowledgement), the event may still have been stored, and will then
// be persisted although the engine dropped the change. Publishing the
// same event again within DuplicateWindow is safe; otherwise the
// reconciler finds the difference.
package eventlog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/followgraph/followgraph"
)

// Tuning that callers have no reason to change.
const (
	closeTimeout  = 10 * time.Second       // waiting for in-flight publishes and the drain
	maxPubPending = 16384                  // async publishes in flight before Publish waits
	pubAckTimeout = 10 * time.Second       // forgets an ack that never comes
	reconnectWait = 500 * time.Millisecond // before trying a server again that dropped the connection
)

// Log is an open event log. Its methods are safe for concurrent use.
type Log struct {
	cfg     Config
	log     *slog.Logger
	subject string // "<prefix>.>"

	unlock   func() error           // releases Dir (embedded mode)
	srv      *server.Server         // nil in external mode
	jsConfig server.JetStreamConfig // the embedded server's, to reopen its store with
	nc       *nats.Conn
	ncClosed chan struct{}
	js       jetstream.JetStream
	stream   jetstream.Stream
	linked   chan struct{} // closed when linkPeers has returned; nil without Config.Regions
	// configMu serialises this process's changes of the log's stream
	// configuration (SetFedStore's metadata, link's sources): each reads
	// the configuration, changes one thing and writes it all back, and
	// two at once would undo each other's.
	configMu  sync.Mutex
	regionIDs map[string]int   // every region's number, by name (Regions.ID); nil without Config.Regions
	applied   jetstream.Stream // the applied window (applied.go); nil without Config.KeepApplied
	token     string           // the embedded cluster node's client token

	opening   time.Time     // when Open began
	waitUntil time.Time     // Config.StartWait after opening: retry tries until then
	dupWindow time.Duration // the stream's duplicate window: Publish sends again within it

	ackWait     time.Duration // of the consumers Consume creates; tests shorten it
	undecodable atomic.Uint64
	stored      atomic.Uint64 // the highest sequence a Publish of this Log was acknowledged with
	publishing  atomic.Int64  // Publish calls waiting for their answer

	// The embedded server's disk (disk.go).
	reserve     int64
	diskFree    atomic.Int64
	diskChecked atomic.Int64 // Unix nanoseconds
	storeFailed atomic.Bool  // a write of the store failed, not yet repaired
	repairing   sync.Mutex   // held while the store is looked at and reopened
	closing     chan struct{}
	watched     chan struct{} // closed when watchStore has returned
	closed      atomic.Bool
	closeOnce   sync.Once
	closeErr    error
}

var _ followgraph.Hook = (*Log)(nil).Publish

// errUnavailable is the domain error in the chain of every error that
// means the log could not be reached or did not answer in time.
var errUnavailable = &followgraph.Error{Code: followgraph.EUnavailable, Message: "the event log is unavailable, retry later"}

// errClosed is the cause of unavailable errors after Close.
var errClosed = errors.New("eventlog: log is closed")

// unavailable wraps cause so that followgraph.ErrorCode reports
// EUnavailable while errors.Is still finds cause.
func unavailable(op string, cause error) error {
	return fmt.Errorf("eventlog: %s: %w: %w", op, errUnavailable, cause)
}

// Open opens the log: it starts the embedded server when cfg.URL is "",
// connects, and creates the stream if it is missing (see the package
// documentation for its configuration). An existing stream is checked:
// one whose subjects, storage, retention or limits could lose or misplace
// events is refused with an error that says what differs. Failures to
// reach NATS return EUnavailable.
func Open(ctx context.Context, cfg Config) (*Log, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	now := time.Now()
	l := &Log{
		opening:   now,
		waitUntil: now.Add(cfg.StartWait),
		closing:   make(chan struct{}),
		reserve:   cfg.DiskReserve,
		cfg:       cfg,
		log:       cfg.Logger.With("component", "eventlog", "stream", cfg.Stream),
		subject:   cfg.Subject + ".>",
		ncClosed:  make(chan struct{}),
		ackWait:   defaultAckWait,
	}
	if cfg.Regions != nil {
		l.regionIDs = cfg.Regions.ids()
	}
	if err := l.open(ctx); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

func (l *Log) open(ctx context.Context) error {
	opts := []nats.Option{
		nats.Name("followgraph-eventlog"),
		// Never buffer publishes while disconnected: a Publish then fails
		// at once with EUnavailable instead of waiting for a reconnect.
		nats.ReconnectBufSize(-1),
		nats.ClosedHandler(func(*nats.Conn) { close(l.ncClosed) }),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil && !l.closed.Load() {
				l.log.Warn("disconnected from NATS", "err", err)
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			l.log.Info("reconnected to NATS", "url", nc.ConnectedUrlRedacted())
		}),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			l.log.Error("NATS error", "err", err)
		}),
	}
	url := l.cfg.URL
	if url == "" {
		if err := l.startServer(); err != nil {
			return err
		}
		url = nats.DefaultURL // unused: the connection is in-process
		opts = append(opts, nats.InProcessServer(l.srv), nats.NoReconnect())
		if l.token != "" {
			opts = append(opts, nats.Token(l.token))
		}
	} else {
		// Another server of a cluster is tried at once; the one that
		// dropped the connection, after reconnectWait.
		opts = append(opts, nats.MaxReconnects(-1), nats.ReconnectWait(reconnectWait))
	}
	err := l.retry(ctx, "connect", func(ctx context.Context) error {
		o := opts
		if dl, ok := ctx.Deadline(); ok && l.srv == nil {
			o = append(o, nats.Timeout(time.Until(dl)))
		}
		nc, err := nats.Connect(url, o...)
		if err != nil {
			return err
		}
		l.nc = nc
		return nil
	})
	if err != nil {
		return err
	}
	l.log.Debug("connected to NATS", "server_version", l.nc.ConnectedServerVersion(), "embedded", l.srv != nil)
	l.js, err = jetstream.New(l.nc,
		jetstream.WithPublishAsyncMaxPending(maxPubPending),
		jetstream.WithPublishAsyncTimeout(pubAckTimeout))
	if err != nil {
		return fmt.Errorf("eventlog: jetstream: %w", err)
	}
	if l.cfg.Cluster != nil {
		if err := l.waitForCluster(ctx); err != nil {
			return err
		}
	}
	if err := l.ensureStream(ctx); err != nil {
		return err
	}
	if l.cfg.Regions != nil {
		l.linked = make(chan struct{})
		go l.linkPeers()
	}
	if l.cfg.KeepApplied {
		return l.ensureApplied(ctx)
	}
	return nil
}

// Ready returns nil when the log is connected and JetStream answers for
// the stream, and an EUnavailable error otherwise.
func (l *Log) Ready(ctx context.Context) error {
	if l.closed.Load() {
		return unavailable("ready", errClosed)
	}
	if err := l.Writable(ctx); err != nil {
		return err
	}
	if _, err := l.stream.Info(ctx); err != nil {
		return unavailable("ready", err)
	}
	return nil
}

// Writable returns nil when the log can be expected to take a publish,
// and an EUnavailable error that says nothing was changed when it is
// known that it cannot: closed, or not connected to NATS. It makes no
// round trip, so it can be asked before every write.
func (l *Log) Writable(ctx context.Context) error {
	switch {
	case l.closed.Load():
		return unavailable("writable", errClosed)
	case !l.nc.IsConnected():
		return fmt.Errorf("eventlog: %w: NATS connection is %s", errNotWritable, l.nc.Status())
	}
	return l.storeError()
}

// errNotWritable and errDiskFull are Writable's errors: the write is
// refused before anything changed.
var (
	errNotWritable = &followgraph.Error{Code: followgraph.EUnavailable,
		Message: "the event log is unavailable: the write was refused and nothing was changed; retry later"}
	errDiskFull = &followgraph.Error{Code: followgraph.EUnavailable,
		Message: "the event log's disk is full: the write was refused and nothing was changed; retry later"}
)

// Undecodable returns how many stored messages were not events (see the
// package documentation): each was logged, and skipped or acknowledged,
// never applied. It counts every time such a message is met.
func (l *Log) Undecodable() uint64 { return l.undecodable.Load() }

// Close waits up to ten seconds for the Publish calls in flight to get
// their answer, drains the connection, and shuts the embedded server down
// cleanly, which flushes its store. After Close every method returns
// EUnavailable. Close is idempotent.
func (l *Log) Close() error {
	l.closeOnce.Do(func() { l.closeErr = l.close() })
	return l.closeErr
}

func (l *Log) close() error {
	l.closed.Store(true)
	close(l.closing)
	if l.watched != nil {
		<-l.watched
	}
	if l.linked != nil {
		<-l.linked
	}
	var errs []error
	// Publishes whose callers still wait get their answer first. A publish
	// its caller gave up on (its deadline passed) is not waited for: its
	// acknowledgement may never come (a store that failed its write).
	for deadline := time.Now().Add(closeTimeout); l.publishing.Load() > 0; {
		if time.Now().After(deadline) {
			l.log.Warn("closing with publishes unacknowledged", "waiting", l.publishing.Load())
			break
		}
		select {
		case <-l.ncClosed: // no acknowledgement can come any more
			deadline = time.Time{}
		case <-time.After(5 * time.Millisecond):
		}
	}
	if l.nc != nil {
		if err := l.nc.Drain(); err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
			errs = append(errs, err)
		}
		select {
		case <-l.ncClosed:
		case <-time.After(closeTimeout):
			l.nc.Close()
		}
	}
	if l.srv != nil {
		l.srv.Shutdown()
		l.srv.WaitForShutdown()
	}
	if l.unlock != nil {
		errs = append(errs, l.unlock())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("eventlog: close: %w", err)
	}
	return nil
}
