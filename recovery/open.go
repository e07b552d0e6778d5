package recovery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/eventlog"
)

// Store is what recovery needs of the durable store: its log position
// (store/sqlite's LogPosition, SaveLogPosition and ResetLogPosition are
// the contract).
type Store interface {
	LogPosition(ctx context.Context) (fg.LogPosition, error)
	SaveLogPosition(ctx context.Context, p fg.LogPosition) error
	ResetLogPosition(ctx context.Context, p fg.LogPosition) error
}

// OtherStream is OpenLog's error when the stream cfg names does not
// exist but the log the store was fed from does, under another name: the
// log's configuration changed, and nothing is lost.
type OtherStream struct {
	Stream  string // the stream cfg names
	Fed     string // the stream the store was fed from
	Created int64  // its identity
}

func (e *OtherStream) Error() string {
	return fmt.Sprintf("the durable store was fed from the event log's stream %s (created at %s), which NATS holds, and there is no stream %s",
		e.Fed, stamp(e.Created), e.Stream)
}

// OpenLog opens the event log of cfg for store and checks that the two
// still hold every event up to the last sequence the store knows of (see
// Check). It returns a *Damage error (the log closed) when they do not,
// unless accept is set: the loss is then logged as accepted, and the
// store's log position moved to the log as it is, so that the next start
// is clean. A log whose stream is missing although the store was fed from
// one is such a damage, not a new log.
//
// On success the store's log position names the log and its last
// sequence, which a store that never had one (a new deployment, an
// import) takes on.
//
// Other nodes may open the same log and store at the same time. While the
// log or the store is unavailable for now (fg.EUnavailable), OpenLog
// tries again, logging each try, for up to cfg.StartWait (which
// eventlog.Open waits, too); a damage is never tried again.
func OpenLog(ctx context.Context, store Store, cfg eventlog.Config, accept bool, logger *slog.Logger) (*eventlog.Log, error) {
	until := time.Now().Add(cfg.StartWait)
	rec, err := store.LogPosition(ctx)
	if err != nil {
		return nil, fmt.Errorf("recovery: %w", err)
	}
	cfg.MustExist = rec.Log != 0 && !accept
	log, err := eventlog.Open(ctx, cfg)
	var noStream *eventlog.NoStreamError
	if errors.As(err, &noStream) {
		if name, ok := noStream.Others[rec.Log]; ok {
			return nil, &OtherStream{Stream: noStream.Stream, Fed: name, Created: rec.Log}
		}
		lost := sub(rec.Seen, rec.Applied)
		msg := fmt.Sprintf("the event log is gone (%v): the durable store was fed from a log created at %s, had applied it up to sequence %d and seen it reach %d, ",
			err, stamp(rec.Log), rec.Applied, rec.Seen)
		if lost > 0 {
			msg += fmt.Sprintf("so at least %d acknowledged events not yet in the store are lost", lost)
		} else {
			msg += "so no acknowledged event is known to be lost (those acknowledged in the second before the log went may be)"
		}
		return nil, &Damage{Lost: lost, Replaced: true, msg: msg}
	}
	if err != nil {
		return nil, err
	}
	for tries := 1; ; tries++ {
		err := verify(ctx, store, log, rec, accept, logger)
		if err == nil {
			return log, nil
		}
		wait := min(time.Duration(tries)*250*time.Millisecond, 2*time.Second, time.Until(until))
		if fg.ErrorCode(err) != fg.EUnavailable || wait <= 0 || ctx.Err() != nil {
			log.Close()
			return nil, err
		}
		logger.Warn("checking the event log against the durable store failed; trying again", "try", tries, "retry_in", wait.String(), "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
	}
}

func verify(ctx context.Context, store Store, log *eventlog.Log, rec fg.LogPosition, accept bool, logger *slog.Logger) error {
	// The log is read before the store, so that events a persister
	// elsewhere applies and drops meanwhile are counted as held; its last
	// sequence again after, as events stored meanwhile may be applied.
	st, err := log.State(ctx)
	if err != nil {
		return fmt.Errorf("recovery: %w", err)
	}
	if rec, err = store.LogPosition(ctx); err != nil {
		return fmt.Errorf("recovery: %w", err)
	}
	if rec.Applied > st.Last || rec.Seen > st.Last {
		again, err := log.State(ctx)
		if err != nil {
			return fmt.Errorf("recovery: %w", err)
		}
		st.Last = max(st.Last, again.Last)
	}
	id := log.Identity()
	damage, realign := Check(rec, Log{State: st, ID: id, FedStore: log.FedStore()})
	if damage != nil && !accept {
		return damage
	}
	if damage != nil {
		logger.Warn("starting with acknowledged events lost, as --accept-data-loss says", "lost_at_least", damage.Lost, "damage", damage.Error())
	} else if realign {
		logger.Warn("the event log's sequence went back below the store's, with nothing lost (the store had applied everything the log had): the store's log position follows the log",
			"store_applied", rec.Applied, "log_last", st.Last)
	}
	if damage != nil || realign {
		err = store.ResetLogPosition(ctx, fg.LogPosition{Log: id, Applied: min(rec.Applied, st.Last), Seen: st.Last})
	} else {
		err = store.SaveLogPosition(ctx, fg.LogPosition{Log: id, Seen: st.Last})
	}
	if err != nil {
		return fmt.Errorf("recovery: %w", err)
	}
	if kept, err := log.SetFedStore(ctx, rec.Store); err != nil {
		return fmt.Errorf("recovery: %w", err)
	} else if !kept {
		logger.Debug("the NATS server keeps no stream metadata (before 2.10): a store replaced under the log is noticed by its sequences only")
	}
	return nil
}

// KeepLogPosition notes in the store, every interval and once more when
// ctx ends, the highest sequence the log has acknowledged to this process
// (eventlog.Log.LastStored), so that the store knows how far the log got:
// a log that loses events is then noticed at the next start (OpenLog),
// for all but those of the last interval before a crash. It returns when
// ctx ends. A store that cannot be written is tried again at the next
// tick.
func KeepLogPosition(ctx context.Context, store Store, log *eventlog.Log, interval time.Duration, logger *slog.Logger) {
	id := log.Identity()
	var noted uint64
	note := func(ctx context.Context) {
		if seq := log.LastStored(); seq > noted {
			if err := store.SaveLogPosition(ctx, fg.LogPosition{Log: id, Seen: seq}); err != nil {
				logger.Debug("noting the log's last sequence in the store failed; will try again", "err", err)
				return
			}
			noted = seq
		}
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			note(ctx)
		case <-ctx.Done():
			final, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			note(final)
			cancel()
			return
		}
	}
}
