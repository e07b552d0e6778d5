package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/followgraph/followgraph/internal/testenv"
	"github.com/redis/rueidis"
)

// testRedis returns the test Redis's URL and a key prefix of the test's
// own, whose keys it deletes at the end; or skips the test (fails it in
// CI).
func testRedis(t *testing.T) (url, prefix string) {
	t.Helper()
	url = testenv.Server(t, testenv.Redis, testenv.RedisHint)
	prefix = fmt.Sprintf("fgtest-e2e-%x", rand.Uint64())
	t.Cleanup(func() {
		opt, err := rueidis.ParseURL(url)
		if err != nil {
			t.Error(err)
			return
		}
		c, err := rueidis.NewClient(opt)
		if err != nil {
			t.Error(err)
			return
		}
		defer c.Close()
		ctx := context.Background()
		for cursor := uint64(0); ; {
			e, err := c.Do(ctx, c.B().Scan().Cursor(cursor).Match(prefix+"*").Count(1000).Build()).AsScanEntry()
			if err != nil {
				t.Error(err)
				return
			}
			if len(e.Elements) > 0 {
				c.Do(ctx, c.B().Unlink().Key(e.Elements...).Build())
			}
			if cursor = e.Cursor; cursor == 0 {
				return
			}
		}
	})
	return url, prefix
}

// TestServe_RedisKillNine: on Redis, every acknowledged write reaches the
// durable store although the server is killed while writing: the change
// and its event are written to Redis in one step, and the restarted
// server relays what the outbox still held into the log, then the store.
func TestServe_RedisKillNine(t *testing.T) {
	url, prefix := testRedis(t)
	data := t.TempDir()
	args := []string{"--redis", url, "--redis-prefix", prefix}
	const workers, perWorker, targets = 16, 10, 300
	ws := newWriters(workers, perWorker)
	for round := range 2 {
		// Held back, the persister leaves events in the log, and the
		// relay in the outbox, at the kill.
		s := start(t, data, append(args, "--persist-rate", "500", "--persist-batch", "100")...)
		writeThenKill(s, ws, int64(round*1000), targets)

		s = start(t, data, args...)
		total := 0
		for _, w := range ws {
			total += w.oks
			verify(t, s.client, w)
			w.settle(t, s.client)
		}
		s.stop(t) // drains the outbox into the log, and the log into the store
		if n := logPending(t, data); n != 0 {
			t.Fatalf("%d events still in the log after a clean stop", n)
		}
		agree(t, ws, storeState(t, "", data))
		t.Logf("round %d: %d acknowledged writes so far, all in Redis and in the store after kill -9", round, total)
	}
}
