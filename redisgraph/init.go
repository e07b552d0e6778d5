package redisgraph

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/redis/rueidis"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/redisgraph/internal/layout"
)

// A deployment's outbox streams exist from its first start on: trimming
// empties a stream but keeps it. Live writes add their event only to an
// existing stream (lua/change.lua), so the streams double as the marker
// that Redis still holds the graph: when Redis loses its data (restarted
// without persistence, a master of a Cluster replaced by an empty one),
// its streams go with it and writes are refused with errDataLost, instead
// of being made on what is left, until the graph is rebuilt (Rebuild,
// then InitOutbox). On a Cluster each slot has its stream, so a loss of
// some slots stops the writes of those slots' users only.

var errDataLost = &fg.Error{Code: fg.EUnavailable,
	Message: "Redis has lost the graph (its outbox stream is gone): writes wait for `followgraph rebuild`"}

// layoutKey is the key that records the version of the layout the graph
// under the prefix is written in (layout.Version).
func (g *Graph) layoutKey() string { return g.prefix + ":layout" }

// checkLayout refuses a Redis whose graph under the prefix is written in
// a layout other than this one: reading it as this one would answer
// wrong data. A Redis without the record holds nothing, or a graph
// written before the record was kept, in layout 1: it has markers
// (learnMarkers, which runs first).
func (g *Graph) checkLayout(ctx context.Context) error {
	v, err := g.c.Do(ctx, g.c.B().Get().Key(g.layoutKey()).Build()).ToString()
	if rueidis.IsRedisNil(err) {
		for i := range g.guard.slots {
			if g.guard.slots[i].state.Load() != nil {
				v, err = "1", nil
				break
			}
		}
		if v == "" {
			return nil
		}
	}
	switch {
	case err != nil:
		return unavailable("reading the graph's layout", err)
	case v != strconv.Itoa(layout.Version):
		return fmt.Errorf("redisgraph: Redis holds the graph under prefix %q in layout %.20q, and this followgraph knows layout %d only: "+
			"run the followgraph that wrote it, or rebuild the graph into a new prefix (followgraph rebuild --redis-prefix)", g.prefix, v, layout.Version)
	}
	return nil
}

// recordLayout records this layout's version where none is recorded.
func (g *Graph) recordLayout(ctx context.Context) error {
	err := g.c.Do(ctx, g.c.B().Set().Key(g.layoutKey()).Value(strconv.Itoa(layout.Version)).Nx().Build()).Error()
	if err != nil && !rueidis.IsRedisNil(err) {
		return unavailable("recording the graph's layout", err)
	}
	return nil
}

// outboxKeys returns the keys of every outbox stream.
func (g *Graph) outboxKeys() []string {
	if !g.cluster {
		return []string{g.outbox(0)}
	}
	keys := make([]string, slots)
	for s := range keys {
		keys[s] = g.outboxOfSlot(uint16(s))
	}
	return keys
}

// scriptCreateStream creates an empty stream where there is none (XADD
// with MAXLEN 0 adds an entry and trims it at once), and with it the
// slot's graph marker (guard.go) with the epoch ARGV[1]. KEYS[1] is the
// stream, KEYS[2] the marker.
var scriptCreateStream = newScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('XADD', KEYS[1], 'MAXLEN', '0', '*', 'created', '1')
redis.call('SET', KEYS[2], ARGV[1])
return 1`, false)

// scriptMarkIntact sets the marker KEYS[2] to ARGV[1] where the stream
// KEYS[1] exists and the marker does not (a graph written before markers
// were), and returns 1 then.
var scriptMarkIntact = newScript(`
if redis.call('EXISTS', KEYS[1]) == 0 or redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
redis.call('SET', KEYS[2], ARGV[1])
return 1`, false)

// InitOutbox creates every outbox stream that does not exist, each with
// its slot's graph marker under a new epoch, and returns how many it
// created. Call it for a new deployment, and after Rebuild has restored a
// graph that Redis lost; never merely because streams are missing, which
// is how a loss shows (OutboxMissing).
func (g *Graph) InitOutbox(ctx context.Context) (int, error) {
	if err := g.recordLayout(ctx); err != nil {
		return 0, err
	}
	n, err := g.eachSlotScript(ctx, scriptCreateStream, newEpoch())
	if err != nil {
		return n, unavailable("creating the outbox", err)
	}
	return n, g.learnMarkers(ctx)
}

// MarkIntact gives a graph marker (see guard.go) to every slot whose
// outbox stream exists and whose marker does not, as a graph written by
// a version without markers has, and returns how many it marked. A loss
// takes both, so this never marks a lost graph. Serve calls it at start.
func (g *Graph) MarkIntact(ctx context.Context) (int, error) {
	if err := g.recordLayout(ctx); err != nil {
		return 0, err
	}
	n, err := g.eachSlotScript(ctx, scriptMarkIntact, newEpoch())
	if err != nil {
		return n, unavailable("marking the graph", err)
	}
	if err := g.learnMarkers(ctx); err != nil {
		return n, err
	}
	return n, nil
}

// eachSlotScript runs script on every slot's outbox stream and marker,
// with epoch, 1024 slots a round trip, and returns the sum of its replies.
func (g *Graph) eachSlotScript(ctx context.Context, script *script, epoch string) (int, error) {
	keys := g.outboxKeys()
	sum := 0
	for start := 0; start < len(keys); start += 1024 {
		calls := make([]rueidis.LuaExec, min(1024, len(keys)-start))
		for i := range calls {
			calls[i] = rueidis.LuaExec{Keys: []string{keys[start+i], g.markerKey(start + i)}, Args: []string{epoch}}
		}
		for _, r := range g.execMulti(ctx, script, calls) {
			n, err := r.AsInt64()
			if err != nil {
				return sum, err
			}
			sum += int(n)
		}
	}
	return sum, nil
}

// OutboxMissing reports how many outbox streams are missing: 0 when Redis
// holds the deployment's graph as far as it can tell; all of them for a
// Redis that never held it (or lost everything).
func (g *Graph) OutboxMissing(ctx context.Context) (missing, total int, err error) {
	err = g.eachOutbox(g.perStream(ctx, func(key string) rueidis.Completed {
		return g.c.B().Exists().Key(key).Build()
	}), func(_ string, n int64) {
		total++
		if n == 0 {
			missing++
		}
	})
	if err != nil {
		return 0, 0, unavailable("checking the outbox", err)
	}
	return missing, total, nil
}

// eachOutbox sends do's commands for every outbox stream, 1024 streams a
// round trip (do returns one reply a key of batch), and calls each with
// every stream's key and integer reply, until a reply is an error.
func (g *Graph) eachOutbox(do func(batch []string) []rueidis.RedisResult, each func(key string, n int64)) error {
	for batch := range slices.Chunk(g.outboxKeys(), 1024) {
		for i, r := range do(batch) {
			n, err := r.AsInt64()
			if err != nil {
				return err
			}
			each(batch[i], n)
		}
	}
	return nil
}

// perStream is a do for eachOutbox that sends the command cmd makes for
// each stream.
func (g *Graph) perStream(ctx context.Context, cmd func(key string) rueidis.Completed) func([]string) []rueidis.RedisResult {
	return func(batch []string) []rueidis.RedisResult {
		cmds := make(rueidis.Commands, len(batch))
		for i, key := range batch {
			cmds[i] = cmd(key)
		}
		return g.c.DoMulti(ctx, cmds...)
	}
}
