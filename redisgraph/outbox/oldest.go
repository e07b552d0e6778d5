package outbox

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/rueidis"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/redisgraph/internal/errs"
	"github.com/followgraph/followgraph/redisgraph/internal/layout"
	"github.com/followgraph/followgraph/redisgraph/internal/topology"
)

// Oldest returns the lowest version among the first entries of the
// streams that hold events: the events the relay has yet to move into the
// event log begin there, stream by stream (within a stream, entries are
// in the order of their changes; between streams, and between users of
// one stream, versions are not in any order, which the caller allows
// for). ok is false when the outbox is empty. It reads each stream's
// first entry, topology.Round a round trip.
func (s *Streams) Oldest(ctx context.Context) (v fg.Version, ok bool, err error) {
	keys, err := s.Pending(ctx)
	if err != nil || len(keys) == 0 {
		return 0, false, err
	}
	err = topology.Each(ctx, s.c, keys, func(key string) rueidis.Completed {
		return s.c.B().Xrange().Key(key).Start("-").End("+").Count(1).Build()
	}, func(i int, r rueidis.RedisResult) error {
		xs, err := r.AsXRange()
		if err != nil {
			return errs.Wrap("reading the outbox", err)
		}
		if len(xs) == 0 {
			return nil // trimmed meanwhile
		}
		first, err := strconv.ParseUint(xs[0].FieldValues[layout.EventVersion], 16, 64)
		if err != nil {
			return fmt.Errorf("redisgraph: outbox %s entry %s: version: %w", keys[i], xs[0].ID, err)
		}
		if !ok || fg.Version(first) < v {
			v, ok = fg.Version(first), true
		}
		return nil
	})
	if err != nil {
		return 0, false, err
	}
	return v, ok, nil
}

// Oldest returns the lowest version among the first entries of the
// outbox's streams (see Streams.Oldest).
func (o *Outbox) Oldest(ctx context.Context) (fg.Version, bool, error) { return o.s.Oldest(ctx) }
