package heal

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/rueidis"

	"github.com/followgraph/followgraph/redisgraph/internal/errs"
	"github.com/followgraph/followgraph/redisgraph/internal/guard"
	"github.com/followgraph/followgraph/redisgraph/internal/layout"
	"github.com/followgraph/followgraph/redisgraph/internal/scripts"
	"github.com/followgraph/followgraph/redisgraph/internal/topology"
)

// A deployment's outbox streams exist from its first start on: trimming
// empties a stream but keeps it. Live writes add their event only to an
// existing stream (lua/change.lua), so the streams double as the marker
// that Redis still holds the graph: when Redis loses its data (restarted
// without persistence, a master of a Cluster replaced by an empty one),
// its streams go with it and writes are refused with errs.DataLost, instead
// of being made on what is left, until the graph is rebuilt (Rebuild,
// then InitOutbox). On a Cluster each slot has its stream, so a loss of
// some slots stops the writes of those slots' users only.

// CheckLayout refuses a Redis whose graph under the prefix is written in
// a layout other than this one: reading it as this one would answer
// wrong data. A Redis without the record holds nothing, or a graph
// written before the record was kept, in layout 1: it has markers
// (the guard's Learn, which runs first).
func (h *Healer) CheckLayout(ctx context.Context) error {
	v, err := h.c.Do(ctx, h.c.B().Get().Key(h.ks.Layout()).Build()).ToString()
	if rueidis.IsRedisNil(err) {
		if h.guard.AnyKnown() {
			v, err = "1", nil
		}
		if v == "" {
			return nil
		}
	}
	switch {
	case err != nil:
		return errs.Wrap("reading the graph's layout", err)
	case v != strconv.Itoa(layout.Version):
		return fmt.Errorf("redisgraph: Redis holds the graph under prefix %q in layout %.20q, and this followgraph knows layout %d only: "+
			"run the followgraph that wrote it, or rebuild the graph into a new prefix (followgraph rebuild --redis-prefix)", h.ks.Prefix(), v, layout.Version)
	}
	return nil
}

// recordLayout records this layout's version where none is recorded.
func (h *Healer) recordLayout(ctx context.Context) error {
	err := h.c.Do(ctx, h.c.B().Set().Key(h.ks.Layout()).Value(strconv.Itoa(layout.Version)).Nx().Build()).Error()
	if err != nil && !rueidis.IsRedisNil(err) {
		return errs.Wrap("recording the graph's layout", err)
	}
	return nil
}

// InitOutbox creates every outbox stream that does not exist, each with
// its slot's graph marker under a new epoch, and returns how many it
// created. Call it for a new deployment, and after Rebuild has restored a
// graph that Redis lost; never merely because streams are missing, which
// is how a loss shows (OutboxMissing).
func (h *Healer) InitOutbox(ctx context.Context) (int, error) {
	if err := h.recordLayout(ctx); err != nil {
		return 0, err
	}
	n, err := h.eachSlotScript(ctx, scripts.CreateStream, guard.NewEpoch())
	if err != nil {
		return n, errs.Wrap("creating the outbox", err)
	}
	return n, h.guard.Learn(ctx)
}

// MarkIntact gives a graph marker (package guard) to every slot whose
// outbox stream exists and whose marker does not, as a graph written by
// a version without markers has, and returns how many it marked. A loss
// takes both, so this never marks a lost graph. Serve calls it at start.
func (h *Healer) MarkIntact(ctx context.Context) (int, error) {
	if err := h.recordLayout(ctx); err != nil {
		return 0, err
	}
	n, err := h.eachSlotScript(ctx, scripts.MarkIntact, guard.NewEpoch())
	if err != nil {
		return n, errs.Wrap("marking the graph", err)
	}
	if err := h.guard.Learn(ctx); err != nil {
		return n, err
	}
	return n, nil
}

// eachSlotScript runs script on every slot's outbox stream and marker,
// with epoch, topology.Round slots a round trip, and returns the sum of its replies.
func (h *Healer) eachSlotScript(ctx context.Context, script scripts.Def[scripts.MarkerKeys, scripts.MarkerArgs], epoch string) (int, error) {
	sum := 0
	err := topology.EachCall(ctx, h.lua, h.ks.Groups(), func(i int) scripts.Call {
		return script.Call(scripts.MarkerKeys{Stream: h.ks.OutboxOf(i), Marker: h.ks.Marker(i)}, scripts.MarkerArgs{Epoch: epoch})
	}, func(_ int, r rueidis.RedisResult) error {
		n, err := r.AsInt64()
		sum += int(n)
		return err
	})
	return sum, err
}
