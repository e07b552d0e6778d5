package eventlog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/followgraph/followgraph/internal/pause"
)

// Start-up against a log that is not there yet: Open, SetFedStore and
// Consume's consumer try each step again while its failure is transient,
// within Config.StartWait of Open (Consume: until its context ends).

// tryTimeout bounds one try of a step, so that a request lost in a
// leader election is asked again instead of waited on.
const tryTimeout = 3 * time.Second

// The back-off between tries: startRetryBase, doubling up to
// startRetryMax.
const (
	startRetryBase = 250 * time.Millisecond
	startRetryMax  = 2 * time.Second
)

// StartRetryDelay is the wait after the tries-th failed try of a step
// of the start-up: with a random part, so that nodes that started
// together do not go on trying in step (two creating the stream at once,
// say). serve waits for its other backends with the same back-off.
func StartRetryDelay(tries int) time.Duration {
	d := startRetryBase
	for i := 1; i < tries && d < startRetryMax; i++ {
		d *= 2
	}
	d = min(d, startRetryMax)
	return d/2 + rand.N(d/2)
}

// JetStream's API error codes that mean "not now": incomplete results,
// no suitable peers (yet) for the replicas, the cluster temporarily
// unavailable, not the leader, insufficient resources, peer remap failed,
// stream offline, a message of the same id still in process (a publish
// sent again, or by the relay and a hook at once, while the first is
// being replicated), temporarily unavailable, too many requests.
var transientCodes = map[jetstream.ErrorCode]bool{
	10004: true, 10005: true, 10008: true, 10009: true, 10023: true, 10075: true, 10118: true,
	10158: true, 10163: true, 10167: true,
}

// transient reports whether err means that the log is unavailable for
// now, and the same request may succeed later: no answer in time, no
// connection (NATS not started yet, or restarting), no JetStream leader,
// not enough peers yet. Any other error is an answer that asking again
// would get again: a configuration refused, authentication, a stream
// that cannot be the log, JetStream not enabled.
func transient(err error) bool {
	if err == nil {
		return false
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		return transientCodes[apiErr.ErrorCode]
	}
	for _, t := range []error{
		context.DeadlineExceeded, nats.ErrTimeout, nats.ErrNoResponders, jetstream.ErrNoStreamResponse,
		jetstream.ErrAsyncPublishTimeout, nats.ErrNoServers, nats.ErrDisconnected, nats.ErrConnectionReconnecting,
		nats.ErrStaleConnection, nats.ErrReconnectBufExceeded, errNoLeader, io.EOF, syscall.ECONNREFUSED, syscall.ECONNRESET,
		// An update of the log's configuration answered with other sources
		// than it sent: another node changed them at the same moment.
		jetstream.ErrStreamSourceNotSupported,
	} {
		if errors.Is(err, t) {
			return true
		}
	}
	var netErr net.Error
	return errors.As(err, &netErr)
}

// final marks an error of a try as the answer, which retry returns as it
// is without trying again.
type final struct{ error }

// retry calls try until it returns nil or an error that is not transient,
// or until Config.StartWait has passed since Open began or ctx ended. Each
// try gets at most tryTimeout; each transient failure that is tried again
// is logged at warning level, naming what failed and when it is tried
// again. A transient failure retry gives up on returns EUnavailable; a
// final error is returned as it is, any other wrapped with what.
func (l *Log) retry(ctx context.Context, what string, try func(ctx context.Context) error) error {
	for tries := 1; ; tries++ {
		timeout := tryTimeout
		if left := time.Until(l.waitUntil); left > 0 {
			timeout = min(timeout, max(left, time.Second))
		}
		tctx, cancel := context.WithTimeout(ctx, timeout)
		err := try(tctx)
		cancel()
		var f final
		switch {
		case err == nil:
			if tries > 1 {
				l.log.Info("the event log is available", "step", what, "tries", tries)
			}
			return nil
		case errors.As(err, &f):
			return f.error
		case !transient(err):
			return fmt.Errorf("eventlog: %s: %w", what, err)
		}
		wait := min(StartRetryDelay(tries), time.Until(l.waitUntil))
		if ctx.Err() != nil || wait <= 0 {
			if tries > 1 {
				err = fmt.Errorf("still failing after %d tries in %s: %w", tries, time.Since(l.opening).Round(time.Second), err)
			}
			if errors.Is(err, nats.ErrNoResponders) {
				// The server answers, but nothing of JetStream in it.
				err = fmt.Errorf("%w (is JetStream enabled on the NATS server? nats-server -js)", err)
			}
			return unavailable(what, err)
		}
		l.log.Warn("the event log is unavailable; trying again", "step", what, "try", tries, "retry_in", wait.String(), "err", err)
		_ = pause.For(ctx, wait)
	}
}
