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
// a second process). With a URL it connects to an external server or
// cluster. Everything else is the same code.
//
// # Message format
//
// One event per message, on subject "<prefix>.follow" or
// "<prefix>.unfollow" (prefix is Config.Subject, default
// "followgraph.edges"), with header Nats-Msg-Id set to Event.ID()
// ("<user>-<target>-<version>") and this JSON body:
//
//	{"user":"1","target":"2","op":"follow","time":"2026-11-30T15:04:05.123Z","version":"1234567"}
//
// Ids and the version are decimal strings, because JSON numbers lose
// precision above 2^53 in many readers. The time is RFC 3339 in UTC with
// milliseconds and is always the version's millisecond part. Readers
// ignore unknown fields.
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
// Pending reports and Replay returns.
//
// The alternative, limits retention with the persister deleting what it
// has stored, was rejected: the persister would have to compute a safe
// deletion point (its ack floor, and that of any other consumer), and a
// mistake there drops events silently. With workqueue the server enforces
// the rule, and refuses a second consumer that would take events from the
// persister. The price: no other consumer may read the stream, so Replay
// reads it with batched direct gets (one round trip per event on servers
// before 2.11).
//
// # Durability: what an acknowledged Publish survives
//
// Kill -9 of the process, under both sync policies, although the embedded
// server dies with the process: a stream of one replica writes each
// message to the operating system (write(2), nothing buffered in the
// process) before acknowledging it, and the kernel keeps the page cache of
// a dead process. TestLog_SurvivesKill measures it: a child process
// publishes from 32 goroutines and prints each acknowledged id until the
// parent kills it with SIGKILL; after each of three kills per policy, on
// the same Dir, every acknowledged id was in the stream (0 lost, in
// several runs, of 11,000 to 27,000 under SyncInterval and about 10,000
// under SyncAlways). The test does detect loss: with the stream in async
// persist mode, which acknowledges before writing, it found 180 to 400
// acknowledged events missing after each kill — which is why Open refuses
// such a stream.
//
// Power loss or a kernel crash: only under SyncAlways, which opens the
// store with O_SYNC. SyncInterval fsyncs every two minutes; events
// acknowledged since the last fsync and not yet in the durable store can
// be lost, and their sequence numbers reissued.
//
// The price of SyncAlways is one synchronous disk write per event, with no
// group commit. BenchmarkPublish, on a shared 2-core virtual machine with
// ext4 on a virtual disk, 1 / 8 / 64 concurrent publishers: SyncAlways
// 3.9k / 6.4k / 6.4k events/s, SyncInterval 37k / 60k / 83k events/s
// (a busier run of the same machine: 1.6k–2.4k against 26k–47k). DefaultSync
// is therefore SyncInterval: it keeps the architecture's promise (an
// acknowledged write survives the serving process being killed) at 9 to
// 20 times the throughput. Choose SyncAlways where a power loss must not
// lose acknowledged writes.
//
// Sync applies to the embedded server. An external server's fsync is its
// own configuration; with more than one replica, an acknowledgement means
// a quorum of replicas stored the event.
//
// # Ambiguous failures
//
// When Publish fails after the message left (ctx ended before the
// acknowledgement, the connection dropped), the event may still have been
// stored, and will then be persisted although the engine dropped the
// change. Publishing the same event again within DuplicateWindow is safe;
// otherwise the reconciler finds the difference.
package eventlog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/internal/lockfile"
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

// DefaultSync is the policy of a zero Config.Sync (see the package
// documentation for the measurements behind the choice).
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
	// stored on "<Subject>.follow" and "<Subject>.unfollow".
	Subject string
	// Replicas is the stream's replica count when Open creates it, 1 to 5
	// (more than 1 needs an external cluster); default 1.
	Replicas int
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
	// MustExist makes Open fail with ErrNoStream rather than create the
	// stream when it is missing: for a log that has stored events before
	// (the durable store says so), a missing stream means they are lost.
	MustExist bool
}

// ErrNoStream is Open's error when Config.MustExist is set and the stream
// does not exist.
var ErrNoStream = errors.New("eventlog: the stream does not exist")

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
	case c.URL == "" && c.Replicas != 1:
		return fmt.Errorf("eventlog: replicas %d needs an external NATS cluster: the embedded server is a single node", c.Replicas)
	case c.Sync > SyncInterval:
		return fmt.Errorf("eventlog: unknown sync policy %d", c.Sync)
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

// Tuning that callers have no reason to change.
const (
	startTimeout   = 30 * time.Second // embedded server start-up, stream recovery included
	closeTimeout   = 10 * time.Second // waiting for in-flight publishes and the drain
	maxPubPending  = 16384            // async publishes in flight before Publish waits
	pubAckTimeout  = 30 * time.Second // forgets an ack that never comes
	defaultAckWait = 5 * time.Second  // Consume: redelivery of a batch whose consumer vanished (a crashed process); a slow handle reports progress every third of it
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

	ackWait     time.Duration // of the consumers Consume creates; tests shorten it
	undecodable atomic.Uint64
	stored      atomic.Uint64 // the highest sequence a Publish of this Log was acknowledged with
	publishing  atomic.Int64  // Publish calls waiting for their answer

	// The embedded server's disk (disk.go).
	reserve     int64
	diskFree    atomic.Int64
	diskChecked atomic.Int64 // Unix nanoseconds
	storeFailed atomic.Bool  // a write of the store failed, not yet repaired
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
	l := &Log{
		closing:  make(chan struct{}),
		reserve:  cfg.DiskReserve,
		cfg:      cfg,
		log:      cfg.Logger.With("component", "eventlog", "stream", cfg.Stream),
		subject:  cfg.Subject + ".>",
		ncClosed: make(chan struct{}),
		ackWait:  defaultAckWait,
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
	} else {
		opts = append(opts, nats.MaxReconnects(-1))
		if dl, ok := ctx.Deadline(); ok {
			opts = append(opts, nats.Timeout(time.Until(dl)))
		}
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return unavailable("connect", err)
	}
	l.nc = nc
	l.log.Debug("connected to NATS", "server_version", nc.ConnectedServerVersion(), "embedded", l.srv != nil)
	l.js, err = jetstream.New(nc,
		jetstream.WithPublishAsyncMaxPending(maxPubPending),
		jetstream.WithPublishAsyncTimeout(pubAckTimeout))
	if err != nil {
		return fmt.Errorf("eventlog: jetstream: %w", err)
	}
	return l.ensureStream(ctx)
}

func (l *Log) startServer() error {
	if err := os.MkdirAll(l.cfg.Dir, 0o750); err != nil {
		return fmt.Errorf("eventlog: %w", err)
	}
	unlock, err := lockfile.Lock(l.cfg.Dir)
	if err != nil {
		return fmt.Errorf("eventlog: lock: %w", err)
	}
	l.unlock = unlock
	srv, err := server.NewServer(&server.Options{
		ServerName: "followgraph",
		DontListen: true,
		JetStream:  true,
		StoreDir:   l.cfg.Dir,
		SyncAlways: l.cfg.Sync == SyncAlways,
		NoSigs:     true,
	})
	if err != nil {
		return fmt.Errorf("eventlog: embedded server: %w", err)
	}
	srv.SetLoggerV2(serverLogger{l: l.log.With("component", "nats-server"), failed: func() { l.storeFailed.Store(true) }}, false, false, false)
	l.srv = srv
	srv.Start()
	if !srv.ReadyForConnections(startTimeout) {
		return unavailable("embedded server", fmt.Errorf("not ready after %s", startTimeout))
	}
	if !srv.JetStreamEnabled() {
		return fmt.Errorf("eventlog: embedded server: JetStream did not start on %s (see the server's log)", l.cfg.Dir)
	}
	l.jsConfig = *srv.JetStreamConfig()
	l.jsConfig.StoreDir = l.cfg.Dir // EnableJetStream adds the "jetstream" folder to it
	l.measureSpace()
	l.watched = make(chan struct{})
	go l.watchStore()
	return nil
}

// streamConfig is the configuration Open creates the stream with.
func (l *Log) streamConfig() jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:              l.cfg.Stream,
		Description:       "followgraph follow/unfollow events (package eventlog)",
		Subjects:          []string{l.subject},
		Retention:         jetstream.WorkQueuePolicy,
		Storage:           jetstream.FileStorage,
		Replicas:          l.cfg.Replicas,
		Duplicates:        DuplicateWindow,
		Discard:           jetstream.DiscardNew,
		MaxMsgs:           -1,
		MaxBytes:          -1,
		MaxMsgsPerSubject: -1,
		AllowDirect:       true,
	}
}

func (l *Log) ensureStream(ctx context.Context) error {
	want := l.streamConfig()
	s, err := l.js.Stream(ctx, want.Name)
	if errors.Is(err, jetstream.ErrStreamNotFound) && l.cfg.MustExist {
		return fmt.Errorf("%w: %s", ErrNoStream, want.Name)
	}
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		s, err = l.js.CreateStream(ctx, want)
		if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) { // created meanwhile by another node
			s, err = l.js.Stream(ctx, want.Name)
		}
		if err == nil {
			l.log.Info("created stream", "subjects", want.Subjects, "replicas", want.Replicas)
		}
	}
	if err != nil {
		return unavailable("stream "+want.Name, err)
	}
	got := s.CachedInfo().Config
	if err := checkStream(got, want); err != nil {
		return err
	}
	if got.Replicas != want.Replicas {
		l.log.Warn("stream replicas differ from the configuration; keeping the stream's", "stream_replicas", got.Replicas, "config_replicas", want.Replicas)
	}
	if !got.AllowDirect { // Replay reads with batched direct gets
		got.AllowDirect = true
		if s, err = l.js.UpdateStream(ctx, got); err != nil {
			return fmt.Errorf("eventlog: stream %s: enabling direct gets, which Replay needs: %w", want.Name, err)
		}
	}
	l.stream = s
	return nil
}

// checkStream returns an error if an existing stream could lose or
// misplace events.
func checkStream(got, want jetstream.StreamConfig) error {
	var bad []string
	if !slices.Equal(got.Subjects, want.Subjects) {
		bad = append(bad, fmt.Sprintf("subjects %q, want %q", got.Subjects, want.Subjects))
	}
	if got.Storage != jetstream.FileStorage {
		bad = append(bad, fmt.Sprintf("storage %s, want file", got.Storage))
	}
	if got.Retention != jetstream.WorkQueuePolicy {
		bad = append(bad, fmt.Sprintf("retention %s, want workqueue (only the persister's ack may remove an event)", got.Retention))
	}
	if got.MaxAge > 0 {
		bad = append(bad, fmt.Sprintf("max age %s would drop events not yet persisted", got.MaxAge))
	}
	if (got.MaxMsgs > 0 || got.MaxBytes > 0) && got.Discard != jetstream.DiscardNew {
		bad = append(bad, "a message or byte limit with discard old would drop events not yet persisted")
	}
	if got.MaxMsgsPerSubject > 0 {
		bad = append(bad, "a per-subject limit would drop events not yet persisted")
	}
	if got.PersistMode == jetstream.AsyncPersistMode {
		bad = append(bad, "async persist mode acknowledges events before writing them (kill -9 loses them)")
	}
	if got.Sealed || got.NoAck || got.Mirror != nil {
		bad = append(bad, "sealed, no-ack and mirror streams cannot take publishes")
	}
	if len(bad) == 0 {
		return nil
	}
	return fmt.Errorf("eventlog: stream %s exists but cannot be the event log: %s; delete it or configure another stream name",
		want.Name, strings.Join(bad, "; "))
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

// Identity returns the identity of the log's stream: its creation time,
// in Unix nanoseconds. A stream deleted and created again, or another
// deployment's, has another; the durable store records it, so that a log
// replaced under it is noticed.
func (l *Log) Identity() int64 { return l.stream.CachedInfo().Created.UnixNano() }

// storeKey is the stream metadata key of the store the log feeds.
const storeKey = "followgraph_store"

// FedStore returns the identity of the durable store the log feeds, as the
// stream's metadata records it (SetFedStore): 0 when none is recorded, or
// when the server keeps no stream metadata (before 2.10).
func (l *Log) FedStore() int64 {
	id, _ := strconv.ParseInt(l.stream.CachedInfo().Config.Metadata[storeKey], 10, 64)
	return id
}

// SetFedStore records id as the identity of the durable store the log
// feeds, in the stream's metadata, so that a store replaced under the log
// is noticed. It reports false when the server keeps no stream metadata
// (a server before 2.10 drops it): then only the sequences can tell.
func (l *Log) SetFedStore(ctx context.Context, id int64) (bool, error) {
	cfg := l.stream.CachedInfo().Config
	want := strconv.FormatInt(id, 10)
	if cfg.Metadata[storeKey] == want {
		return true, nil
	}
	cfg.Metadata = maps.Clone(cfg.Metadata)
	if cfg.Metadata == nil {
		cfg.Metadata = map[string]string{}
	}
	cfg.Metadata[storeKey] = want
	s, err := l.js.UpdateStream(ctx, cfg)
	if err != nil {
		return false, unavailable("recording the store", err)
	}
	l.stream = s
	return s.CachedInfo().Config.Metadata[storeKey] == want, nil
}

// State is the stream as it stands: the sequences of its first and last
// messages, how many it holds, and which sequences between them it no
// longer holds.
type State struct {
	First, Last uint64   // First is Last+1 when the stream holds nothing
	Msgs        uint64   // messages held
	Deleted     []uint64 // sequences between First and Last no longer held, in order
	Lost        uint64   // messages the server found lost in its files (damage it repaired by dropping them)
}

// State returns the stream's state, or EUnavailable when the log cannot
// be read.
func (l *Log) State(ctx context.Context) (State, error) {
	if l.closed.Load() {
		return State{}, unavailable("state", errClosed)
	}
	info, err := l.stream.Info(ctx, jetstream.WithDeletedDetails(true))
	if err != nil {
		return State{}, unavailable("state", err)
	}
	st := info.State
	out := State{First: st.FirstSeq, Last: st.LastSeq, Msgs: st.Msgs}
	if out.First == 0 || st.Msgs == 0 { // an empty stream reports its first sequence as 0 or Last+1
		out.First = out.Last + 1
	}
	for _, seq := range st.Deleted {
		if seq >= out.First && seq <= out.Last {
			out.Deleted = append(out.Deleted, seq)
		}
	}
	slices.Sort(out.Deleted)
	if st.Lost != nil {
		out.Lost = uint64(len(st.Lost.Msgs))
	}
	return out, nil
}

// LastStored returns the highest sequence any Publish of this Log was
// acknowledged with: the log is known to have stored everything up to it.
// 0 before the first.
func (l *Log) LastStored() uint64 { return l.stored.Load() }

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

// serverLogger sends the embedded server's log to slog. Its notices
// (start-up banner, recoveries) are Debug: the log reports what matters.
// An error that says a write of the store failed calls failed.
type serverLogger struct {
	l      *slog.Logger
	failed func()
}

func (s serverLogger) Noticef(format string, v ...any) { s.l.Debug(fmt.Sprintf(format, v...)) }
func (s serverLogger) Warnf(format string, v ...any)   { s.l.Warn(fmt.Sprintf(format, v...)) }
func (s serverLogger) Fatalf(format string, v ...any)  { s.error(fmt.Sprintf(format, v...)) }
func (s serverLogger) Errorf(format string, v ...any)  { s.error(fmt.Sprintf(format, v...)) }

func (s serverLogger) error(msg string) {
	if isWriteFailure(msg) {
		s.failed()
	}
	s.l.Error(msg)
}
func (s serverLogger) Debugf(format string, v ...any) { s.l.Debug(fmt.Sprintf(format, v...)) }
func (s serverLogger) Tracef(format string, v ...any) { s.l.Debug(fmt.Sprintf(format, v...)) }
