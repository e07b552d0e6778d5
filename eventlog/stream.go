package eventlog

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/followgraph/followgraph/internal/pause"
)

// createJitter is the most Open waits, at random, before it creates the
// stream (see ensureStream).
const createJitter = time.Second

// ErrNoStream is Open's error when Config.MustExist is set and the stream
// does not exist; the error is a *NoStreamError.
var ErrNoStream = errors.New("eventlog: the stream does not exist")

// NoStreamError is Open's error when Config.MustExist is set and the
// stream does not exist. It names the server's other streams by identity
// (see Identity), so that a caller can tell a log it knows by identity
// that is there under another name from one that is gone.
type NoStreamError struct {
	Stream string
	Others map[int64]string // the identity of each other stream: its name
}

func (e *NoStreamError) Error() string { return fmt.Sprintf("%v: %s", ErrNoStream, e.Stream) }

// Is reports ErrNoStream as e.
func (e *NoStreamError) Is(target error) bool { return target == ErrNoStream }

// noStream returns the NoStreamError of the stream name, listing the
// server's streams.
func (l *Log) noStream(ctx context.Context, name string) error {
	e := &NoStreamError{Stream: name, Others: map[int64]string{}}
	list := l.js.ListStreams(ctx)
	for info := range list.Info() {
		e.Others[info.Created.UnixNano()] = info.Config.Name
	}
	if err := list.Err(); err != nil {
		return err // tried again: the list is the point of the error
	}
	return final{e}
}

// streamConfig is the configuration Open creates the stream with.
func (l *Log) streamConfig() jetstream.StreamConfig {
	cfg := jetstream.StreamConfig{
		Name:              l.name(),
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
	if l.cfg.Regions != nil { // it takes no publishes: it copies (region.go)
		cfg.Subjects, cfg.Sources = nil, []*jetstream.StreamSource{l.localSource()}
		cfg.Description = "followgraph events of every region, for the persister (package eventlog)"
	}
	return cfg
}

// ensureStream finds or creates the stream and checks it, trying again
// (retry) while the log is unavailable. Another node may create or
// change the stream meanwhile: each try starts from the stream as it is.
func (l *Log) ensureStream(ctx context.Context) error {
	if l.cfg.Regions != nil {
		if err := l.ensureExport(ctx); err != nil {
			return err
		}
	}
	want := l.streamConfig()
	return l.retry(ctx, "stream "+want.Name, func(ctx context.Context) error {
		s, err := l.js.Stream(ctx, want.Name)
		if errors.Is(err, jetstream.ErrStreamNotFound) && l.cfg.MustExist {
			return l.noStream(ctx, want.Name)
		}
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			// Nodes that start together should not create the stream at
			// the same moment: a server before 2.10 takes a second
			// creation while the first is in flight as another, with
			// another creation time (Identity), which replicas may keep
			// instead of the first's.
			_ = pause.For(ctx, rand.N(createJitter))
			s, err = l.js.Stream(ctx, want.Name)
			if errors.Is(err, jetstream.ErrStreamNotFound) {
				s, err = l.js.CreateStream(ctx, want)
				if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) { // created meanwhile by another node
					s, err = l.js.Stream(ctx, want.Name)
				} else if err == nil {
					l.log.Info("created stream", "subjects", want.Subjects, "replicas", want.Replicas)
				}
			}
		}
		if err != nil {
			return err
		}
		got := s.CachedInfo().Config
		err = checkStream(got, want)
		if err == nil && l.cfg.Regions != nil {
			if err = l.checkSources(got.Sources); err != nil {
				err = fmt.Errorf("eventlog: stream %s exists but cannot be the region's log: %w; delete it or configure another stream name", want.Name, err)
			}
		}
		if err != nil {
			return final{err}
		}
		if !got.AllowDirect { // Replay reads with batched direct gets
			got.AllowDirect = true
			if s, err = l.js.UpdateStream(ctx, got); err != nil {
				return fmt.Errorf("enabling direct gets, which Replay needs: %w", err)
			}
		}
		if got.Replicas != want.Replicas {
			l.log.Warn("stream replicas differ from the configuration; keeping the stream's", "stream_replicas", got.Replicas, "config_replicas", want.Replicas)
		}
		l.dupWindow = DuplicateWindow
		if d := got.Duplicates; d > 0 && d < l.dupWindow {
			l.dupWindow = d
		}
		l.stream = s
		return nil
	})
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
	if len(got.Sources) > 0 && len(want.Sources) == 0 {
		bad = append(bad, "a stream that sources others takes no publishes: it is a region's (--region)")
	}
	if len(bad) == 0 {
		return nil
	}
	return fmt.Errorf("eventlog: stream %s exists but cannot be the event log: %s; delete it or configure another stream name",
		want.Name, strings.Join(bad, "; "))
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
// (servers before 2.10 drop it; then only the sequences can tell, and
// nothing is sent). Several nodes may record the same store at once:
// each try reads the stream again, and one that finds id recorded is
// done. It tries again while the log is unavailable, as Open does
// (Config.StartWait, from Open), and then returns EUnavailable.
func (l *Log) SetFedStore(ctx context.Context, id int64) (bool, error) {
	want := strconv.FormatInt(id, 10)
	if l.stream.CachedInfo().Config.Metadata[storeKey] == want {
		return true, nil
	}
	if !l.keepsMetadata() {
		return false, nil
	}
	kept := false
	err := l.retry(ctx, "recording the store", func(ctx context.Context) error {
		l.configMu.Lock()
		defer l.configMu.Unlock()
		s, err := l.js.Stream(ctx, l.name())
		if err != nil {
			return err
		}
		cfg := s.CachedInfo().Config
		if cfg.Metadata[storeKey] != want {
			cfg.Metadata = maps.Clone(cfg.Metadata)
			if cfg.Metadata == nil {
				cfg.Metadata = map[string]string{}
			}
			cfg.Metadata[storeKey] = want
			if s, err = l.js.UpdateStream(ctx, cfg); err != nil {
				return err
			}
		}
		l.stream = s
		kept = s.CachedInfo().Config.Metadata[storeKey] == want
		return nil
	})
	return kept, err
}

// keepsMetadata reports whether the server connected to keeps stream
// metadata: version 2.10 or later.
func (l *Log) keepsMetadata() bool {
	var major, minor int
	if _, err := fmt.Sscanf(l.nc.ConnectedServerVersion(), "%d.%d", &major, &minor); err != nil {
		return true // an unknown version: try
	}
	return major > 2 || major == 2 && minor >= 10
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
