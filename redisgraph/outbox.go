package redisgraph

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

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
// A relay reads the outbox through an Outbox (Graph.Outbox): it lists the
// streams that hold events, reads each from its start, settles what it
// read, publishes it, and only then trims it.
//
// A stream entry has the fields u (user, decimal), t (target, decimal; 0
// for a setting), op (the op's word: "follow", "block", …) and v (the
// version, 16 hex digits), a mute's s and x (its since and expiry, ms;
// x 0: none), and a state's word in state (lua/state.lua).

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

// pendingOutboxStreams returns the keys of the outbox streams that hold
// events: on a Cluster it asks each slot's stream for its length, 1024 a
// round trip.
func (g *Graph) pendingOutboxStreams(ctx context.Context) ([]string, error) {
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

// outboxEntry is one event of an outbox stream, with its stream entry id.
type outboxEntry struct {
	ID    string
	Event fg.Event
}

// readOutbox returns up to count events of outbox stream key, in order,
// after the entry id after ("" for the start of the stream).
func (g *Graph) readOutbox(ctx context.Context, key, after string, count int) ([]outboxEntry, error) {
	start := "-"
	if after != "" {
		start = "(" + after
	}
	xs, err := g.c.Do(ctx, g.c.B().Xrange().Key(key).Start(start).End("+").Count(int64(count)).Build()).AsXRange()
	if err != nil {
		return nil, unavailable("reading the outbox", err)
	}
	out := make([]outboxEntry, len(xs))
	for i, x := range xs {
		e, err := decodeEvent(x.FieldValues)
		if err != nil {
			return nil, fmt.Errorf("redisgraph: outbox %s entry %s: %w", key, x.ID, err)
		}
		out[i] = outboxEntry{ID: x.ID, Event: e}
	}
	return out, nil
}

func decodeEvent(f map[string]string) (fg.Event, error) {
	user, err := fg.ParseUserID(f["u"])
	if err != nil {
		return fg.Event{}, err
	}
	op, ok := fg.ParseOp(f["op"])
	if !ok {
		return fg.Event{}, fmt.Errorf("unknown op %q", f["op"])
	}
	var target fg.UserID
	if k := op.Kind(); k != fg.KindPrivate && k != fg.KindState {
		if target, err = fg.ParseUserID(f["t"]); err != nil {
			return fg.Event{}, err
		}
	}
	v, err := strconv.ParseUint(f["v"], 16, 64)
	if err != nil {
		return fg.Event{}, fmt.Errorf("version %q: %w", f["v"], err)
	}
	e := fg.NewEvent(user, target, op, fg.Version(v))
	if op == fg.OpState {
		s, ok := fg.ParseState(f["state"])
		if !ok {
			return fg.Event{}, fmt.Errorf("state %q of %s", f["state"], e.ID())
		}
		e.State = s
	}
	if op == fg.OpMute {
		since, err1 := strconv.ParseInt(f["s"], 10, 64)
		expires, err2 := strconv.ParseInt(f["x"], 10, 64)
		if err := errors.Join(err1, err2); err != nil {
			return fg.Event{}, fmt.Errorf("mute %s: %w", e.ID(), err)
		}
		e.Since = fg.Millis(since)
		if expires != 0 {
			e.Expires = fg.Millis(expires)
		}
	}
	return e, e.Validate()
}

// trimOutbox removes the entries of outbox stream key up to and including
// the entry id through, and returns how many it removed.
func (g *Graph) trimOutbox(ctx context.Context, key, through string) (int64, error) {
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

// settleOutbox makes sure that the change of each event, taken from the
// outbox, is complete: on a Cluster it applies again the effects of each
// on both users' sides (applySecondSteps), pipelined, undoing a follow or
// request that meets a block there; on a standalone Redis both sides
// change in one step and there is nothing to do. The effects are
// idempotent and version-conditional, so those already made change
// nothing, and an old one never undoes a newer change.
//
// The outbox is the record of the second steps that may be pending, so a
// relay settles the events it read before it trims them.
func (g *Graph) settleOutbox(ctx context.Context, events []fg.Event) error {
	if !g.cluster || len(events) == 0 {
		return nil
	}
	if _, err := g.applySecondSteps(ctx, events); err != nil {
		return unavailable("settling the outbox", err)
	}
	return nil
}

// Repair settles every event in the outbox (see Outbox.Settle) and returns
// how many second steps changed something: those that had been left
// undone. It is safe at any time, also while writes go on.
func (g *Graph) Repair(ctx context.Context) (int, error) {
	if !g.cluster {
		return 0, nil
	}
	streams, err := g.pendingOutboxStreams(ctx)
	if err != nil {
		return 0, err
	}
	repaired := 0
	for _, key := range streams {
		for after := ""; ; {
			entries, err := g.readOutbox(ctx, key, after, rangeChunk)
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

// Outbox is the graph's outbox as the relay of one serve node moves it
// into the event log (it is a pipeline.Outbox). It moves a stream only
// while its owner holds the stream's lease (see lease.go), so that the
// relays of several nodes share the streams, and gives its leases up at
// Release, so that another node takes them over at once rather than when
// they run out.
type Outbox struct {
	g     *Graph
	owner string
	ttl   time.Duration
	held  sync.Map // stream key → struct{}
}

// Outbox returns the outbox as owner's relay moves it, holding each
// stream's lease for ttl from its last renewal. owner must name the node
// among the nodes of the deployment, and stay the same across its
// restarts, so that a node started again takes its leases back at once.
func (g *Graph) Outbox(owner string, ttl time.Duration) *Outbox {
	return &Outbox{g: g, owner: owner, ttl: ttl}
}

// Streams returns the keys of the streams that hold events.
func (o *Outbox) Streams(ctx context.Context) ([]string, error) {
	return o.g.pendingOutboxStreams(ctx)
}

// Claim takes or renews the owner's lease of stream, and reports whether
// the owner holds it.
func (o *Outbox) Claim(ctx context.Context, stream string) (bool, error) {
	ok, err := o.g.claimOutbox(ctx, stream, o.owner, o.ttl)
	if ok {
		o.held.Store(stream, struct{}{})
	}
	return ok, err
}

// Read returns the first n events of stream, in order, and the entry id
// of the last of them (for Trim).
func (o *Outbox) Read(ctx context.Context, stream string, n int) ([]fg.Event, string, error) {
	entries, err := o.g.readOutbox(ctx, stream, "", n)
	if err != nil || len(entries) == 0 {
		return nil, "", err
	}
	events := make([]fg.Event, len(entries))
	for i, e := range entries {
		events[i] = e.Event
	}
	return events, entries[len(entries)-1].ID, nil
}

// Settle completes whatever the changes of events still lack: on a
// Cluster the other side of each (see settleOutbox); on a standalone
// Redis nothing.
func (o *Outbox) Settle(ctx context.Context, events []fg.Event) error {
	return o.g.settleOutbox(ctx, events)
}

// Trim removes the entries of stream up to and including the entry id
// through.
func (o *Outbox) Trim(ctx context.Context, stream, through string) error {
	_, err := o.g.trimOutbox(ctx, stream, through)
	return err
}

// Release gives up every lease the owner took through this Outbox.
func (o *Outbox) Release(ctx context.Context) error {
	var errs []error
	o.held.Range(func(stream, _ any) bool {
		if err := o.g.releaseOutbox(ctx, stream.(string), o.owner); err != nil {
			errs = append(errs, err)
		}
		o.held.Delete(stream)
		return true
	})
	return errors.Join(errs...)
}
