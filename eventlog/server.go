package eventlog

import (
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/followgraph/followgraph/internal/lockfile"
)

// startTimeout bounds the embedded server's start-up, stream recovery
// included.
const startTimeout = 30 * time.Second

func (l *Log) startServer() error {
	if err := os.MkdirAll(l.cfg.Dir, 0o750); err != nil {
		return fmt.Errorf("eventlog: %w", err)
	}
	unlock, err := lockfile.Lock(l.cfg.Dir)
	if err != nil {
		return fmt.Errorf("eventlog: lock: %w", err)
	}
	l.unlock = unlock
	opts := &server.Options{
		ServerName: "followgraph",
		DontListen: true,
		JetStream:  true,
		StoreDir:   l.cfg.Dir,
		SyncAlways: l.cfg.Sync == SyncAlways,
		NoSigs:     true,
	}
	if c := l.cfg.Cluster; c != nil {
		o, err := c.options()
		if err != nil {
			return err
		}
		if l.token, err = o.apply(opts); err != nil {
			return fmt.Errorf("eventlog: embedded server: %w", err)
		}
	}
	if r := l.cfg.Regions; r != nil {
		if err := r.apply(opts); err != nil {
			return fmt.Errorf("eventlog: embedded server: %w", err)
		}
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		return fmt.Errorf("eventlog: embedded server: %w", err)
	}
	srv.SetLoggerV2(serverLogger{l: l.cfg.Logger.With("component", "nats-server"),
		starting: func() bool { return l.cfg.Cluster != nil && time.Now().Before(l.waitUntil) },
		failed:   func() { l.storeFailed.Store(true) }}, false, false, false)
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

// serverLogger sends the embedded server's log to slog. Its notices
// (start-up banner, recoveries) are Debug: the log reports what matters;
// but those of a cluster's leaders (elected, lost) are Info, so that a
// leader change shows in the log. An error that says a write of the store
// failed calls failed.
//
// While starting reports true (a cluster node, within Config.StartWait
// of Open), what the node says while its peers come up is not a fault:
// its errors connecting a route (a peer not listening yet) are Debug, and
// its warnings of peers not there yet (startupWarnings) Info. A route
// still failing after it is reported as an error again, as the server
// repeats it (Cluster's ReconnectErrorReports). A connection whose other
// end went away mid-write (peerGone) is a warning.
type serverLogger struct {
	l        *slog.Logger
	starting func() bool
	failed   func()
}

func (s serverLogger) Noticef(format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	if strings.Contains(msg, "leader") {
		s.l.Info(msg)
		return
	}
	s.l.Debug(msg)
}

// startupWarnings begin the warnings of a cluster node whose peers are
// not all there yet, or not all answering yet.
var startupWarnings = []string{
	"Waiting for routing to be established",
	"JetStream has not established contact with a meta leader",
	"Did not receive all ", // stream or consumer info results
}

func (s serverLogger) Warnf(format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	if s.starting() && slices.ContainsFunc(startupWarnings, func(w string) bool { return strings.HasPrefix(msg, w) }) {
		s.l.Info(msg)
		return
	}
	s.l.Warn(msg)
}

func (s serverLogger) Fatalf(format string, v ...any) { s.error(fmt.Sprintf(format, v...)) }
func (s serverLogger) Errorf(format string, v ...any) { s.error(fmt.Sprintf(format, v...)) }

func (s serverLogger) error(msg string) {
	if isWriteFailure(msg) {
		s.failed()
		s.l.Error(msg)
		return
	}
	if s.starting() && strings.HasPrefix(msg, "Error trying to connect to route") {
		s.l.Debug(msg)
		return
	}
	if slices.ContainsFunc(peerGone, func(p string) bool { return strings.Contains(msg, p) }) ||
		strings.HasPrefix(msg, "Error trying to connect as leafnode") {
		s.l.Warn(msg)
		return
	}
	s.l.Error(msg)
}

// A leafnode link that cannot be made is another region out of reach (a
// link cut, that region down, or started after this one): this region goes
// on, and followgraph_region_source_silent_seconds and its alert say it, so
// the server's error is a warning.
//
// peerGone are in the errors the server logs when the other end of one of
// its connections went away mid-write (a peer killed, a client gone): the
// server drops that connection and goes on, a cluster elects around a lost
// peer, so they are warnings. A peer that stays away shows as its route's
// connect errors.
var peerGone = []string{"broken pipe", "connection reset by peer"}

func (s serverLogger) Debugf(format string, v ...any) { s.l.Debug(fmt.Sprintf(format, v...)) }
func (s serverLogger) Tracef(format string, v ...any) { s.l.Debug(fmt.Sprintf(format, v...)) }
