package recovery

import (
	"context"
	"fmt"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/eventlog"
)

// CheckHorizon returns a *Damage when the first event of the log that the
// persister (durable) has not acknowledged is older than the store's
// tombstone horizon (followgraph.TombstonePurger). A horizon is raised
// only to the retention before the oldest event the store lacks, so this
// means it went too far: a clock that jumped ahead, or a store or log
// restored from another time. The store may then have removed the
// tombstone of an edge such an event changes, and a change to an edge it
// keeps no record of is refused rather than applied, and lost.
func CheckHorizon(ctx context.Context, store fg.TombstonePurger, log *eventlog.Log, durable string) error {
	h, err := store.TombstoneHorizon(ctx)
	if err != nil || h == 0 {
		return err
	}
	v, ok, err := log.Oldest(ctx, durable)
	if err != nil || !ok || v >= h {
		return err
	}
	return &Damage{msg: fmt.Sprintf("the event log holds an event from %s that the durable store has yet to apply, older than the store's "+
		"tombstone horizon %s (its tombstones older than that may be gone): any such event changing an edge the store keeps "+
		"no record of will be refused, not applied (a clock that jumped ahead, or a store or log restored from another time)",
		v.Time().Format(fg.TimeFormat), h.Time().Format(fg.TimeFormat))}
}
