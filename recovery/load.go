package recovery

import (
	"context"
	"fmt"
	"iter"
	"slices"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/eventlog"
	"github.com/followgraph/followgraph/memgraph"
)

// Events is what Load reads of the durable store: the state of every
// edge, in key order.
type Events interface {
	Events(ctx context.Context) iter.Seq2[fg.Event, error]
}

// Load loads the durable store into g, then applies the events still in
// the log. The log keeps an event until the persister has stored it
// (work-queue retention), so what it holds is exactly what the store may
// lack; it is replayed whole rather than from the store's last sequence,
// which a log that lost its unsynced tail in a power cut could reissue.
// Events the store already has change nothing (versions).
//
// The log is read first, the store second: a persister may be running
// (another node, while rebuild or reconcile read), and an event it stores
// and then removes from the log between the two reads is then in the
// store's read, whereas read the other way round it would be in neither.
// The log's tail is applied in batches as it is read; the store's events
// whose versions are older change nothing over it.
func Load(ctx context.Context, g *memgraph.Graph, store Events, log *eventlog.Log) error {
	var tail []fg.Event
	if err := log.Replay(ctx, func(m eventlog.Message) error {
		tail = append(tail, m.Event)
		return nil
	}); err != nil {
		return fmt.Errorf("recovery: read the log: %w", err)
	}
	var loadErr error
	if err := g.Load(ctx, events(store.Events(ctx), &loadErr)); err != nil {
		return fmt.Errorf("recovery: load: %w", err)
	}
	if loadErr != nil {
		return fmt.Errorf("recovery: read store: %w", loadErr)
	}
	for batch := range slices.Chunk(tail, 4096) {
		if err := g.Apply(ctx, batch); err != nil {
			return fmt.Errorf("recovery: replay the log: %w", err)
		}
	}
	return nil
}

// events adapts a fallible sequence, stopping at and keeping the first error.
func events(seq iter.Seq2[fg.Event, error], errp *error) iter.Seq[fg.Event] {
	return func(yield func(fg.Event) bool) {
		for e, err := range seq {
			if err != nil {
				*errp = err
				return
			}
			if !yield(e) {
				return
			}
		}
	}
}
