// Package outbox is the graph's outbox in Redis: the event of every
// change, written by the script that makes the change, so that a change
// without its event cannot happen. On a standalone Redis it is one stream;
// on a Cluster a script can only write keys of one slot, so there is one
// stream per slot (keyspace.Outbox), and the event of a change of u→t goes
// to the stream of u's slot. Within a stream events are in the order of
// their changes, so those of one user (and of one edge) are in order.
// Each stream is bounded: a change that finds its stream full is refused
// rather than dropping events.
//
// A relay reads the outbox through an Outbox (Streams.For): it lists the
// streams that hold events, reads each from its start, settles what it
// read, publishes it, and only then trims it. The entries of acknowledged
// writes are deleted off the writes' path (Dropper).
//
// A stream entry has the fields of layout.Event*: the user and target
// (decimal; target 0 for a setting or a state), the op's word, the
// version (16 hex digits), a mute's since and expiry (ms; expiry 0: none),
// and a state's word.
package outbox

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
	"github.com/followgraph/followgraph/redisgraph/internal/effects"
	"github.com/followgraph/followgraph/redisgraph/internal/errs"
	"github.com/followgraph/followgraph/redisgraph/internal/keyspace"
	"github.com/followgraph/followgraph/redisgraph/internal/layout"
	"github.com/followgraph/followgraph/redisgraph/internal/lease"
	"github.com/followgraph/followgraph/redisgraph/internal/scripts"
	"github.com/followgraph/followgraph/redisgraph/internal/topology"
)

// readBatch is how many entries Repair reads at a time.
const readBatch = 1000

// Streams are the outbox streams of a graph.
type Streams struct {
	c   rueidis.Client
	ks  keyspace.Space
	lua *scripts.Runner
	fx  *effects.Effects
}

// New returns the outbox streams of the graph of ks, settled by fx.
func New(c rueidis.Client, ks keyspace.Space, lua *scripts.Runner, fx *effects.Effects) *Streams {
	return &Streams{c: c, ks: ks, lua: lua, fx: fx}
}

// Pending returns the keys of the streams that hold events: on a Cluster
// it asks each slot's stream for its length, topology.Round a round trip.
func (s *Streams) Pending(ctx context.Context) ([]string, error) {
	keys := s.ks.Outboxes()
	var pending []string
	err := topology.Each(ctx, s.c, keys, func(key string) rueidis.Completed { return s.c.B().Xlen().Key(key).Build() },
		func(i int, r rueidis.RedisResult) error {
			n, err := r.AsInt64()
			if n > 0 {
				pending = append(pending, keys[i])
			}
			return err
		})
	if err != nil {
		return nil, errs.Wrap("listing the outbox", err)
	}
	return pending, nil
}

// Missing reports how many outbox streams are missing: 0 when Redis
// holds the deployment's graph as far as it can tell; all of them for a
// Redis that never held it (or lost everything).
func (s *Streams) Missing(ctx context.Context) (missing, total int, err error) {
	err = topology.Each(ctx, s.c, s.ks.Outboxes(), func(key string) rueidis.Completed { return s.c.B().Exists().Key(key).Build() },
		func(_ int, r rueidis.RedisResult) error {
			n, err := r.AsInt64()
			total++
			if n == 0 {
				missing++
			}
			return err
		})
	if err != nil {
		return 0, 0, errs.Wrap("checking the outbox", err)
	}
	return missing, total, nil
}

// Entry is one event of an outbox stream, with its stream entry id.
type Entry struct {
	ID    string
	Event fg.Event
}

// Read returns up to count events of stream key, in order, after the
// entry id after ("" for the start of the stream).
func (s *Streams) Read(ctx context.Context, key, after string, count int) ([]Entry, error) {
	start := "-"
	if after != "" {
		start = "(" + after
	}
	xs, err := s.c.Do(ctx, s.c.B().Xrange().Key(key).Start(start).End("+").Count(int64(count)).Build()).AsXRange()
	if err != nil {
		return nil, errs.Wrap("reading the outbox", err)
	}
	out := make([]Entry, len(xs))
	for i, x := range xs {
		e, err := Decode(x.FieldValues)
		if err != nil {
			return nil, fmt.Errorf("redisgraph: outbox %s entry %s: %w", key, x.ID, err)
		}
		out[i] = Entry{ID: x.ID, Event: e}
	}
	return out, nil
}

// Decode returns the event of an entry's fields.
func Decode(f map[string]string) (fg.Event, error) {
	user, err := fg.ParseUserID(f[layout.EventUser])
	if err != nil {
		return fg.Event{}, err
	}
	op, ok := fg.ParseOp(f[layout.EventOp])
	if !ok {
		return fg.Event{}, fmt.Errorf("unknown op %q", f[layout.EventOp])
	}
	var target fg.UserID
	if k := op.Kind(); k != fg.KindPrivate && k != fg.KindState {
		if target, err = fg.ParseUserID(f[layout.EventTarget]); err != nil {
			return fg.Event{}, err
		}
	}
	v, err := strconv.ParseUint(f[layout.EventVersion], 16, 64)
	if err != nil {
		return fg.Event{}, fmt.Errorf("version %q: %w", f[layout.EventVersion], err)
	}
	e := fg.NewEvent(user, target, op, fg.Version(v))
	if op == fg.OpState {
		s, ok := fg.ParseState(f[layout.EventState])
		if !ok {
			return fg.Event{}, fmt.Errorf("state %q of %s", f[layout.EventState], e.ID())
		}
		e.State = s
	}
	if op == fg.OpMute {
		since, err1 := strconv.ParseInt(f[layout.EventSince], 10, 64)
		expires, err2 := strconv.ParseInt(f[layout.EventExpires], 10, 64)
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

// Trim removes the entries of stream key up to and including the entry
// id through, and returns how many it removed.
func (s *Streams) Trim(ctx context.Context, key, through string) (int64, error) {
	next, err := nextStreamID(through)
	if err != nil {
		return 0, fmt.Errorf("redisgraph: trimming the outbox: %w", err)
	}
	n, err := s.c.Do(ctx, s.c.B().Xtrim().Key(key).Minid().Threshold(next).Build()).AsInt64()
	if err != nil {
		return 0, errs.Wrap("trimming the outbox", err)
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

// Settle makes sure that the change of each event, taken from the
// outbox, is complete: on a Cluster it applies again the effects of each
// on both users' sides (effects.Settle), pipelined, undoing a follow or
// request that meets a block there; on a standalone Redis both sides
// change in one step and there is nothing to do. The effects are
// idempotent and version-conditional, so those already made change
// nothing, and an old one never undoes a newer change.
//
// The outbox is the record of the second steps that may be pending, so a
// relay settles the events it read before it trims them.
func (s *Streams) Settle(ctx context.Context, events []fg.Event) error {
	if !s.ks.Cluster() || len(events) == 0 {
		return nil
	}
	if _, err := s.fx.Settle(ctx, events); err != nil {
		return errs.Wrap("settling the outbox", err)
	}
	return nil
}

// Repair settles every event in the outbox (see Settle) and returns how
// many second steps changed something: those that had been left undone.
// It is safe at any time, also while writes go on.
func (s *Streams) Repair(ctx context.Context) (int, error) {
	if !s.ks.Cluster() {
		return 0, nil
	}
	streams, err := s.Pending(ctx)
	if err != nil {
		return 0, err
	}
	repaired := 0
	for _, key := range streams {
		for after := ""; ; {
			entries, err := s.Read(ctx, key, after, readBatch)
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
			n, err := s.fx.Settle(ctx, events)
			repaired += n
			if err != nil {
				return repaired, errs.Wrap("repair", err)
			}
			after = entries[len(entries)-1].ID
		}
	}
	return repaired, nil
}

// Outbox is the graph's outbox as the relay of one serve node moves it
// into the event log (it is a pipeline.Outbox). It moves a stream only
// while its owner holds the stream's lease (package lease), so that the
// relays of several nodes share the streams, and gives its leases up at
// Release, so that another node takes them over at once rather than when
// they run out.
type Outbox struct {
	s     *Streams
	owner string
	ttl   time.Duration
	held  sync.Map // stream key → struct{}
}

// For returns the outbox as owner's relay moves it, holding each
// stream's lease for ttl from its last renewal. owner must name the node
// among the nodes of the deployment, and stay the same across its
// restarts, so that a node started again takes its leases back at once.
func (s *Streams) For(owner string, ttl time.Duration) *Outbox {
	return &Outbox{s: s, owner: owner, ttl: ttl}
}

// Streams returns the keys of the streams that hold events.
func (o *Outbox) Streams(ctx context.Context) ([]string, error) { return o.s.Pending(ctx) }

// Claim takes or renews the owner's lease of stream, and reports whether
// the owner holds it.
func (o *Outbox) Claim(ctx context.Context, stream string) (bool, error) {
	ok, err := lease.Claim(ctx, o.s.lua, "outbox lease", o.s.ks.OutboxLease(stream), o.owner, o.ttl)
	if ok {
		o.held.Store(stream, struct{}{})
	}
	return ok, err
}

// Read returns the first n events of stream, in order, and the entry id
// of the last of them (for Trim).
func (o *Outbox) Read(ctx context.Context, stream string, n int) ([]fg.Event, string, error) {
	entries, err := o.s.Read(ctx, stream, "", n)
	if err != nil || len(entries) == 0 {
		return nil, "", err
	}
	events := make([]fg.Event, len(entries))
	for i, e := range entries {
		events[i] = e.Event
	}
	return events, entries[len(entries)-1].ID, nil
}

// Settle completes whatever the changes of events still lack (see
// Streams.Settle).
func (o *Outbox) Settle(ctx context.Context, events []fg.Event) error { return o.s.Settle(ctx, events) }

// Trim removes the entries of stream up to and including the entry id
// through.
func (o *Outbox) Trim(ctx context.Context, stream, through string) error {
	_, err := o.s.Trim(ctx, stream, through)
	return err
}

// Release gives up every lease the owner took through this Outbox.
func (o *Outbox) Release(ctx context.Context) error {
	var fails []error
	o.held.Range(func(stream, _ any) bool {
		if err := lease.Release(ctx, o.s.lua, "outbox lease", o.s.ks.OutboxLease(stream.(string)), o.owner); err != nil {
			fails = append(fails, err)
		}
		o.held.Delete(stream)
		return true
	})
	return errors.Join(fails...)
}
