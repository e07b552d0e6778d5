package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/followgraph/followgraph/internal/testenv"
)

// TestOutboxRate: with -outbox every change appends its event and has it
// deleted, a write that changes nothing appends none, and -rate holds the
// driver to the rate asked.
func TestOutboxRate(t *testing.T) {
	url := testenv.Server(t, testenv.Redis, testenv.RedisHint)
	opt, err := rueidis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	opt.DisableCache = true
	r, err := rueidis.NewClient(opt)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx := context.Background()
	s := seeds{r: r, prefix: fmt.Sprintf("sctest%d:", rand.Uint64()), outbox: true}
	defer func() {
		keys, _ := r.Do(ctx, r.B().Keys().Pattern(s.prefix+"*").Build()).AsStrSlice()
		for _, k := range keys {
			r.Do(ctx, r.B().Del().Key(k).Build())
		}
	}()
	const perSec, dur = 400, 2 * time.Second
	if err := s.drive(ctx, "writes", 50, 4, dur, 1.1, 1, perSec); err != nil {
		t.Fatal(err)
	}
	stream := s.key("outbox", 0)
	info, err := r.Do(ctx, r.B().XinfoStream().Key(stream).Build()).AsMap()
	if err != nil {
		t.Fatalf("the outbox stream: %v", err)
	}
	lm, am := info["length"], info["entries-added"]
	length, _ := lm.AsInt64()
	added, _ := am.AsInt64()
	if length != 0 {
		t.Errorf("%d events left in the outbox, want all deleted", length)
	}
	// Every follow made added one event; with 50 users many writes find
	// the edge as it is and add none.
	var follows int64
	keys, err := r.Do(ctx, r.B().Keys().Pattern(s.prefix+"count:*").Build()).AsStrSlice()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		n, _ := r.Do(ctx, r.B().Hget().Key(k).Field("following").Build()).AsInt64()
		follows += n
	}
	if follows == 0 || added < follows {
		t.Errorf("%d events added for %d follows standing, want at least one each", added, follows)
	}
	if max := int64(perSec * dur.Seconds() * 1.2); added > max {
		t.Errorf("%d events in %v at %d requests/s, want at most %d", added, dur, perSec, max)
	}
}
