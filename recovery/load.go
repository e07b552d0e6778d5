package recovery

import (
	"context"
	"fmt"
	"iter"

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
// The log's tail, which may be long (a persister down for hours), is
// spooled to a temporary file meanwhile rather than held in memory
// (42 bytes an event), and applied in batches after the store.
//
// A store that purges tombstones (followgraph.TombstonePurger) gives g its
// tombstone horizon, read after its events, before the tail: every
// tombstone the read lacks is below it, so g refuses as the store does an
// event of the tail older than a tombstone neither holds.
func Load(ctx context.Context, g *memgraph.Graph, store Events, log *eventlog.Log) error {
	tail, err := spool(ctx, log)
	if err != nil {
		return err
	}
	defer tail.close()
	var loadErr error
	if err := g.Load(ctx, events(store.Events(ctx), &loadErr)); err != nil {
		return fmt.Errorf("recovery: load: %w", err)
	}
	if loadErr != nil {
		return fmt.Errorf("recovery: read store: %w", loadErr)
	}
	if p, ok := store.(fg.TombstonePurger); ok {
		h, err := p.TombstoneHorizon(ctx)
		if err != nil {
			return fmt.Errorf("recovery: read store: %w", err)
		}
		if err := g.RaiseTombstoneHorizon(ctx, h); err != nil {
			return fmt.Errorf("recovery: load: %w", err)
		}
	}
	if err := tail.apply(ctx, g.Apply); err != nil {
		return fmt.Errorf("recovery: replay the log: %w", err)
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
