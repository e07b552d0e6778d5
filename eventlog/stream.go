package eventlog

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
)

// ErrNoStream is Open's error when Config.MustExist is set and the stream
// does not exist.
var ErrNoStream = errors.New("eventlog: the stream does not exist")

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
