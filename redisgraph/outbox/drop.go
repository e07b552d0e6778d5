package outbox

import (
	"context"
	"sync"

	"github.com/redis/rueidis"
)

// The deletes of outbox entries that acknowledged writes leave (see
// WithHook) wait in a queue of dropQueue entries for one goroutine, which
// sends what has queued up, up to dropBatch entries, in one pipeline.
const (
	dropQueue = 4096
	dropBatch = 256
)

// droppedEntry names one entry of an outbox stream to delete.
type droppedEntry struct{ stream, id string }

// Dropper deletes outbox entries off the writes' path: a bounded queue
// and one goroutine, started by the first entry and stopped by Close.
type Dropper struct {
	c       rueidis.Client
	mu      sync.RWMutex // held to read closed and send; Close takes it to set closed and close queue
	started sync.Once    // makes queue, stop and done, and starts the goroutine
	closed  bool
	queue   chan droppedEntry
	stop    context.CancelFunc // cancels the goroutine's commands
	done    chan struct{}      // closed when the goroutine has returned
}

// NewDropper returns the deleter of outbox entries through c.
func NewDropper(c rueidis.Client) *Dropper { return &Dropper{c: c} }

// Drop deletes the entry id of outbox stream, a change's that the hook
// has taken care of (its event is in the log, and on a Cluster its second
// step is done), so that the relay does not publish it a second time.
// Best effort, and off the write's path: the write is acknowledged
// without waiting for it. When the queue is full (Redis slow) or the
// Dropper is closed, the entry is left where it is: the relay publishes
// every entry it finds and trims the stream only after the log
// acknowledged them (pipeline.Relay), and the log drops the repeated
// event as a duplicate.
func (d *Dropper) Drop(stream, id string) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.closed {
		return
	}
	d.started.Do(func() {
		ctx, stop := context.WithCancel(context.Background())
		d.queue, d.stop, d.done = make(chan droppedEntry, dropQueue), stop, make(chan struct{})
		go d.loop(ctx, d.queue, d.done)
	})
	select {
	case d.queue <- droppedEntry{stream, id}:
	default: // full: left to the relay
	}
}

// loop deletes the entries of queue until it is closed, then closes
// done. What has queued up goes in one pipeline of one XDEL per stream,
// naming all of that stream's entries: Redis's work outside a command's
// own (reading, parsing, replying) is paid once per command, not per entry.
func (d *Dropper) loop(ctx context.Context, queue <-chan droppedEntry, done chan<- struct{}) {
	defer close(done)
	ids := map[string][]string{} // by stream, in the order they queued
	var streams []string
	for e := range queue {
		clear(ids)
		streams = streams[:0]
		add := func(e droppedEntry) {
			if ids[e.stream] == nil {
				streams = append(streams, e.stream)
			}
			ids[e.stream] = append(ids[e.stream], e.id)
		}
		add(e)
	more:
		for n := 1; n < dropBatch; n++ {
			select {
			case e, ok := <-queue:
				if !ok {
					break more
				}
				add(e)
			default:
				break more
			}
		}
		if ctx.Err() != nil {
			continue // closing: drain without sending
		}
		// New slices each time: rueidis may still read those of a
		// pipeline whose wait was cancelled.
		cmds := make(rueidis.Commands, 0, len(streams))
		for _, s := range streams {
			cmds = append(cmds, d.c.B().Xdel().Key(s).Id(ids[s]...).Build())
		}
		// ctx has no deadline, so that Close's cancellation ends the wait
		// for replies at once (rueidis ends the wait of a context with a
		// deadline at the connection's deadline alone). A connection
		// rueidis dials meanwhile is bounded by its dial timeout alone.
		d.c.DoMulti(ctx, cmds...)
	}
}

// Close stops taking entries, abandons those not yet deleted, and waits
// for the goroutine to return.
func (d *Dropper) Close() {
	d.mu.Lock()
	if !d.closed {
		d.closed = true
		if d.queue != nil {
			d.stop()
			close(d.queue)
		}
	}
	done := d.done
	d.mu.Unlock()
	if done != nil {
		<-done
	}
}
