// Package redistime times the round trips a rueidis client makes to Redis,
// for the metric followgraph_redis_roundtrip_seconds.
package redistime

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/rueidis"
)

// Client is a rueidis.Client whose Do, DoMulti, DoCache and DoMultiCache
// are timed: each observes, once, the time until Redis answered (a
// pipeline of DoMulti is one round trip). Answers from the client-side
// cache alone are not observed: no round trip was made. The clients of
// Nodes, Dedicated and the streams are not timed.
type Client struct {
	rueidis.Client
	roundTrip prometheus.Histogram
}

// Wrap returns c timed, with its histogram registered in reg. It panics if
// reg already has one (as prometheus.MustRegister does).
func Wrap(c rueidis.Client, reg prometheus.Registerer) *Client {
	h := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "followgraph_redis_roundtrip_seconds",
		Help:    "Time of each round trip to Redis: a command, or a pipeline of them (answers from the client-side cache alone are not counted).",
		Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, 1},
	})
	reg.MustRegister(h)
	return &Client{Client: c, roundTrip: h}
}

func (c *Client) since(start time.Time) { c.roundTrip.Observe(time.Since(start).Seconds()) }

// Do is rueidis.Client's Do, timed.
func (c *Client) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	defer c.since(time.Now())
	return c.Client.Do(ctx, cmd)
}

// DoMulti is rueidis.Client's DoMulti, timed as one round trip.
func (c *Client) DoMulti(ctx context.Context, multi ...rueidis.Completed) []rueidis.RedisResult {
	defer c.since(time.Now())
	return c.Client.DoMulti(ctx, multi...)
}

// DoCache is rueidis.Client's DoCache, timed unless the cache answered.
func (c *Client) DoCache(ctx context.Context, cmd rueidis.Cacheable, ttl time.Duration) rueidis.RedisResult {
	start := time.Now()
	res := c.Client.DoCache(ctx, cmd, ttl)
	if !res.IsCacheHit() {
		c.since(start)
	}
	return res
}

// DoMultiCache is rueidis.Client's DoMultiCache, timed as one round trip
// unless the cache answered every command.
func (c *Client) DoMultiCache(ctx context.Context, multi ...rueidis.CacheableTTL) []rueidis.RedisResult {
	start := time.Now()
	res := c.Client.DoMultiCache(ctx, multi...)
	for _, r := range res {
		if !r.IsCacheHit() {
			c.since(start)
			break
		}
	}
	return res
}
