package redistime

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/rueidis"

	"github.com/followgraph/followgraph/internal/testenv"
)

// testClient returns a client of the test Redis and a key of the test's
// own, deleted at the end; or skips the test (fails it in CI).
func testClient(tb testing.TB) (rueidis.Client, string) {
	tb.Helper()
	url := testenv.Server(tb, testenv.Redis, testenv.RedisHint)
	opt, err := rueidis.ParseURL(url)
	if err != nil {
		tb.Fatal(err)
	}
	c, err := rueidis.NewClient(opt)
	if err != nil {
		tb.Fatal(err)
	}
	key := fmt.Sprintf("fgtest-redistime-%x", rand.Uint64())
	tb.Cleanup(func() {
		c.Do(context.Background(), c.B().Del().Key(key).Build())
		c.Close()
	})
	if err := c.Do(context.Background(), c.B().Set().Key(key).Value("v").Build()).Error(); err != nil {
		tb.Fatal(err)
	}
	return c, key
}

// roundTrips is how many round trips reg's histogram has observed.
func roundTrips(tb testing.TB, reg *prometheus.Registry) uint64 {
	tb.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "followgraph_redis_roundtrip_seconds" {
			return mf.GetMetric()[0].GetHistogram().GetSampleCount()
		}
	}
	tb.Fatal("followgraph_redis_roundtrip_seconds is not registered")
	return 0
}

func TestClient(t *testing.T) {
	raw, key := testClient(t)
	reg := prometheus.NewRegistry()
	c := Wrap(raw, reg)
	ctx := context.Background()
	get := func() rueidis.Completed { return c.B().Get().Key(key).Build() }
	cached := func() rueidis.Cacheable { return c.B().Get().Key(key).Cache() }

	for _, step := range []struct {
		name string
		do   func() error
		want uint64 // round trips observed after the step
	}{
		{"Do", func() error { return c.Do(ctx, get()).Error() }, 1},
		{"DoMultiIsOneRoundTrip", func() error {
			for _, r := range c.DoMulti(ctx, get(), get(), get()) {
				if err := r.Error(); err != nil {
					return err
				}
			}
			return nil
		}, 2},
		{"DoCacheMiss", func() error { return c.DoCache(ctx, cached(), time.Minute).Error() }, 3},
		{"DoCacheHitNotCounted", func() error {
			r := c.DoCache(ctx, cached(), time.Minute)
			if !r.IsCacheHit() {
				return fmt.Errorf("the second DoCache of %s was not a cache hit", key)
			}
			return r.Error()
		}, 3},
		{"DoMultiCacheAllHitsNotCounted", func() error {
			return c.DoMultiCache(ctx, rueidis.CT(cached(), time.Minute))[0].Error()
		}, 3},
		{"AnErrorIsARoundTrip", func() error {
			if err := c.Do(ctx, c.B().Incr().Key(key).Build()).Error(); err == nil {
				return fmt.Errorf("INCR of a non-number answered no error")
			}
			return nil
		}, 4},
	} {
		if err := step.do(); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if got := roundTrips(t, reg); got != step.want {
			t.Fatalf("after %s: %d round trips observed, want %d", step.name, got, step.want)
		}
	}
}
