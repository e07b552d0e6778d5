package recovery

import (
	"context"
	"log/slog"
	"time"

	"github.com/followgraph/followgraph/eventlog"
)

// drainPoll is how often Drain asks the log for its backlog.
const drainPoll = 20 * time.Millisecond

// Drain waits until the persister (the log's consumer named durable) has
// taken everything in the log, or ctx ends, logging what is left once a
// second, and returns how many events are left as last seen (0: drained).
// What is left stays in the log for the next start. A log that cannot
// say its backlog ends the wait at once: the next start's recovery
// covers what is left.
func Drain(ctx context.Context, log *eventlog.Log, durable string, logger *slog.Logger) (left uint64) {
	said := time.Now()
	t := time.NewTicker(drainPoll)
	defer t.Stop()
	for {
		n, _, err := log.Pending(ctx, durable)
		switch {
		case err != nil && ctx.Err() == nil:
			logger.Warn("stopping without knowing whether the log is drained into the store; what is left stays in the log for the next start", "err", err)
			return left
		case err == nil && n == 0:
			return 0
		case err == nil:
			left = n
		}
		if ctx.Err() == nil && time.Since(said) >= time.Second {
			logger.Info("draining the log into the store", "events_left", left)
			said = time.Now()
		}
		select {
		case <-ctx.Done():
			logger.Warn("stopping with events not yet in the store; they stay in the log for the next start", "events", left)
			return left
		case <-t.C:
		}
	}
}
