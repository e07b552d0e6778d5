package redisgraph

import (
	"context"
	"slices"

	"github.com/redis/rueidis"

	fg "github.com/followgraph/followgraph"
)

// A deployment's outbox streams exist from its first start on: trimming
// empties a stream but keeps it. Live writes add their event only to an
// existing stream (lua/change.lua), so the streams double as the mark
// that Redis still holds the graph: when Redis loses its data (restarted
// without persistence, a master of a Cluster replaced by an empty one),
// its streams go with it and writes are refused with errDataLost, instead
// of being made on what is left, until the graph is rebuilt (Rebuild,
// then InitOutbox). On a Cluster each slot has its stream, so a loss of
// some slots stops the writes of those slots' users only.

var errDataLost = &fg.Error{Code: fg.EUnavailable,
	Message: "Redis has lost the graph (its outbox stream is gone): writes wait for `followgraph rebuild`"}

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

// scriptCreateStream creates an empty stream where there is none: XADD
// with MAXLEN 0 adds an entry and trims it at once.
var scriptCreateStream = newScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('XADD', KEYS[1], 'MAXLEN', '0', '*', 'created', '1')
return 1`, false)

// InitOutbox creates every outbox stream that does not exist, and returns
// how many it created. Call it for a new deployment, and after Rebuild has
// restored a graph that Redis lost; never merely because streams are
// missing, which is how a loss shows (OutboxMissing).
func (g *Graph) InitOutbox(ctx context.Context) (int, error) {
	created := 0
	err := g.eachOutbox(func(batch []string) []rueidis.RedisResult {
		calls := make([]rueidis.LuaExec, len(batch))
		for i, key := range batch {
			calls[i] = rueidis.LuaExec{Keys: []string{key}}
		}
		return scriptCreateStream.execMulti(ctx, g.c, calls)
	}, func(_ string, n int64) { created += int(n) })
	if err != nil {
		return created, unavailable("creating the outbox", err)
	}
	return created, nil
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
