package redisgraph

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/rueidis"

	fg "github.com/followgraph/followgraph"
)

// The outbox holds the event of every change, written by the script that
// makes the change, so that a change without its event cannot happen. On a
// standalone Redis it is one stream, <prefix>:outbox. On a Cluster a
// script can only write keys of one slot, so there is one stream per slot,
// <prefix>:outbox:{<tag>}, with a tag chosen to hash to that slot; the
// event of a change of u→t goes to the stream of u's slot. Within a stream
// events are in the order of their changes, so those of one user (and of
// one edge) are in order. Each stream is bounded (WithOutboxLimit): a change
// that finds its stream full is refused rather than dropping events.
//
// A relay lists the streams that hold events (PendingOutboxStreams), reads
// each in order (ReadOutbox), settles what it read (SettleOutbox), publishes
// it, and only then trims it (TrimOutbox).
//
// A stream entry has the fields u (user, decimal), t (target, decimal),
// op ("follow" or "unfollow") and v (the version, 16 hex digits).

// outbox returns the key of the outbox stream that takes the events of
// user's changes.
func (g *Graph) outbox(user fg.UserID) string {
	if !g.cluster {
		return g.prefix + ":outbox"
	}
	return g.outboxOfSlot(slotOf(user))
}

func (g *Graph) outboxOfSlot(slot uint16) string {
	return g.prefix + ":outbox:{" + g.outboxTags[slot] + "}"
}

// PendingOutboxStreams returns the keys of the outbox streams that hold
// events: on a Cluster it asks each slot's stream for its length, 1024 a
// round trip.
func (g *Graph) PendingOutboxStreams(ctx context.Context) ([]string, error) {
	var pending []string
	err := g.eachOutbox(g.perStream(ctx, func(key string) rueidis.Completed {
		return g.c.B().Xlen().Key(key).Build()
	}), func(key string, n int64) {
		if n > 0 {
			pending = append(pending, key)
		}
	})
	if err != nil {
		return nil, unavailable("listing the outbox", err)
	}
	return pending, nil
}

// OutboxEntry is one event of an outbox stream, with its stream entry id.
type OutboxEntry struct {
	ID    string
	Event fg.Event
}

// ReadOutbox returns up to count events of outbox stream key, in order,
// after the entry id after ("" for the start of the stream).
func (g *Graph) ReadOutbox(ctx context.Context, key, after string, count int) ([]OutboxEntry, error) {
	start := "-"
	if after != "" {
		start = "(" + after
	}
	xs, err := g.c.Do(ctx, g.c.B().Xrange().Key(key).Start(start).End("+").Count(int64(count)).Build()).AsXRange()
	if err != nil {
		return nil, unavailable("reading the outbox", err)
	}
	out := make([]OutboxEntry, len(xs))
	for i, x := range xs {
		e, err := decodeEvent(x.FieldValues)
		if err != nil {
			return nil, fmt.Errorf("redisgraph: outbox %s entry %s: %w", key, x.ID, err)
		}
		out[i] = OutboxEntry{ID: x.ID, Event: e}
	}
	return out, nil
}

func decodeEvent(f map[string]string) (fg.Event, error) {
	user, err := fg.ParseUserID(f["u"])
	if err != nil {
		return fg.Event{}, err
	}
	target, err := fg.ParseUserID(f["t"])
	if err != nil {
		return fg.Event{}, err
	}
	var op fg.Op
	switch f["op"] {
	case "follow":
		op = fg.OpFollow
	case "unfollow":
		op = fg.OpUnfollow
	default:
		return fg.Event{}, fmt.Errorf("unknown op %q", f["op"])
	}
	v, err := strconv.ParseUint(f["v"], 16, 64)
	if err != nil {
		return fg.Event{}, fmt.Errorf("version %q: %w", f["v"], err)
	}
	e := fg.NewEvent(user, target, op, fg.Version(v))
	return e, e.Validate()
}

// TrimOutbox removes the entries of outbox stream key up to and including
// the entry id through, and returns how many it removed.
func (g *Graph) TrimOutbox(ctx context.Context, key, through string) (int64, error) {
	next, err := nextStreamID(through)
	if err != nil {
		return 0, fmt.Errorf("redisgraph: trimming the outbox: %w", err)
	}
	n, err := g.c.Do(ctx, g.c.B().Xtrim().Key(key).Minid().Threshold(next).Build()).AsInt64()
	if err != nil {
		return 0, unavailable("trimming the outbox", err)
	}
	return n, nil
}

// nextStreamID returns the smallest stream entry id after id.
func nextStreamID(id string) (string, error) {
	msPart, seqPart, ok := strings.Cut(id, "-")
	ms, err1 := strconv.ParseUint(msPart, 10, 64)
	seq, err2 := strconv.ParseUint(seqPart, 10, 64)
	if !ok || err1 != nil || err2 != nil {
		return "", fmt.Errorf("%q is not a stream entry id", id)
	}
	if seq == 1<<64-1 {
		return strconv.FormatUint(ms+1, 10) + "-0", nil
	}
	return msPart + "-" + strconv.FormatUint(seq+1, 10), nil
}

// SettleOutbox makes sure that the change of each event, taken from the
// outbox, is complete: on a Cluster it applies again the second step of
// each (the followee's side), pipelined; on a standalone Redis both sides
// change in one step and there is nothing to do. Second steps are
// idempotent and version-conditional, so those already done change
// nothing, and an old one never undoes a newer change.
//
// The outbox is the record of the second steps that may be pending, so a
// relay settles the events it read before it trims them.
func (g *Graph) SettleOutbox(ctx context.Context, events []fg.Event) error {
	if !g.cluster || len(events) == 0 {
		return nil
	}
	if _, err := g.applySecondSteps(ctx, events); err != nil {
		return unavailable("settling the outbox", err)
	}
	return nil
}

// Repair settles every event in the outbox (see SettleOutbox) and returns
// how many second steps changed something: those that had been left
// undone. It is safe at any time, also while writes go on.
func (g *Graph) Repair(ctx context.Context) (int, error) {
	if !g.cluster {
		return 0, nil
	}
	streams, err := g.PendingOutboxStreams(ctx)
	if err != nil {
		return 0, err
	}
	repaired := 0
	for _, key := range streams {
		for after := ""; ; {
			entries, err := g.ReadOutbox(ctx, key, after, rangeChunk)
			if err != nil {
				return repaired, err
			}
			if len(entries) == 0 {
				break
			}
			events := make([]fg.Event, len(entries))
			for i, e := range entries {
				events[i] = e.Event
			}
			n, err := g.applySecondSteps(ctx, events)
			repaired += n
			if err != nil {
				return repaired, unavailable("repair", err)
			}
			after = entries[len(entries)-1].ID
		}
	}
	return repaired, nil
}
