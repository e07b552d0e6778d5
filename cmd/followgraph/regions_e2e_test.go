package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/internal/testenv"
)

// regionWriter writes follows, unfollows, mutes and unmutes through one
// region's server and remembers, for the edges it alone writes, the last
// change acknowledged; or, a blocker, blocks and unblocks of followers by
// targets.
type regionWriter struct {
	region      string
	followers   []fg.UserID           // whose edges it writes
	targets     []fg.UserID           // to whom
	mine        bool                  // it alone writes its followers' edges (else another region's writer does too)
	blocker     bool                  // it writes blocks of followers by targets instead
	acked       map[[2]fg.UserID]bool // follows
	unsure      map[[2]fg.UserID]bool // failed, not acknowledged since: either state is right
	muted       map[[2]fg.UserID]bool // mutes
	unsureMutes map[[2]fg.UserID]bool
	oks, errs   int
}

func (w *regionWriter) run(stop <-chan struct{}, srv func() *server, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	for {
		select {
		case <-stop:
			return
		default:
		}
		e := [2]fg.UserID{w.followers[rng.IntN(len(w.followers))], w.targets[rng.IntN(len(w.targets))]}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		var err error
		op := rng.IntN(6)
		if w.blocker {
			if rng.IntN(2) == 0 {
				_, err = srv().client.Block(ctx, e[1], e[0])
			} else {
				_, err = srv().client.Unblock(ctx, e[1], e[0])
			}
			cancel()
			if err != nil {
				w.errs++
				time.Sleep(20 * time.Millisecond)
			} else {
				w.oks++
			}
			time.Sleep(20 * time.Millisecond) // fewer blocks than follows
			continue
		}
		switch op {
		case 0, 1, 2:
			_, err = srv().client.Follow(ctx, e[0], e[1])
		case 3:
			_, err = srv().client.Unfollow(ctx, e[0], e[1])
		case 4:
			_, err = srv().client.Mute(ctx, e[0], e[1], 0)
		case 5:
			_, err = srv().client.Unmute(ctx, e[0], e[1])
		}
		cancel()
		acked, unsure := w.acked, w.unsure
		if op >= 4 {
			acked, unsure = w.muted, w.unsureMutes
		}
		if err != nil {
			w.errs++
			unsure[e] = true
			time.Sleep(20 * time.Millisecond) // a server killed: wait for it
			continue
		}
		w.oks++
		acked[e] = op < 3 || op == 4
		delete(unsure, e)
	}
}

// regionState is what a region's server says of users: their following,
// followers, mutes and blocks lists, and their counts.
func regionState(tb testing.TB, s *server, users []fg.UserID) string {
	tb.Helper()
	ctx := context.Background()
	counts, err := s.client.Counts(ctx, users)
	if err != nil {
		tb.Fatal(err)
	}
	out := fmt.Sprint(counts)
	for _, u := range users {
		out += fmt.Sprint(u, list(tb, func(r fg.PageRequest) (fg.Page, error) { return s.client.Following(ctx, u, r) }),
			list(tb, func(r fg.PageRequest) (fg.Page, error) { return s.client.Followers(ctx, u, r) }),
			list(tb, func(r fg.PageRequest) (fg.Page, error) { return s.client.Links(ctx, fg.ListMutes, u, r) }),
			list(tb, func(r fg.PageRequest) (fg.Page, error) { return s.client.Links(ctx, fg.ListBlocks, u, r) }))
	}
	return out
}

// TestServe_TwoRegions runs two regions, each a serve process with its
// own engine, log and store, linked through a proxy this test cuts:
// writers of follows and mutes in both regions, on edges of their own and
// on edges the other region writes too, and of blocks of the latter's
// followers by their targets in both regions (conflicts on purpose); the
// link cut for 30 seconds and one region's server killed with SIGKILL and
// started again meanwhile. Then both regions hold the same graph, every
// list and count, no follow stands across a block, and every edge
// written in one region alone is as that region last
// acknowledged it. It runs on the embedded engine and SQLite, and on a
// Redis and a PostgreSQL database of each region's (the NATS of each is
// its serve's own).
func TestServe_TwoRegions(t *testing.T) {
	t.Run("Embedded", func(t *testing.T) { testTwoRegions(t, func(string) []string { return nil }, false) })
	t.Run("RedisPostgres", func(t *testing.T) {
		admin := testenv.Server(t, testenv.Postgres, testenv.PostgresHint)
		url, prefix := testRedis(t)
		dbs := map[string]string{"a": newDatabase(t, admin), "b": newDatabase(t, admin)}
		testTwoRegions(t, func(region string) []string {
			return []string{"--redis", url, "--redis-prefix", prefix + "-" + region, "--db", dbs[region]}
		}, true)
	})
}

// testTwoRegions is TestServe_TwoRegions with the backends of each region;
// with reconcile, once both are stopped, followgraph reconcile finds no
// difference between each region's Redis and its store and log.
func testTwoRegions(t *testing.T, backends func(region string) []string, reconcile bool) {
	leaf := freeAddr(t)
	dataA := t.TempDir()
	a := start(t, dataA, append([]string{"--region", "a", "--region-peers", "b", "--region-listen", leaf}, backends("a")...)...)
	p := testenv.NewProxy(t, leaf)
	dataB := t.TempDir()
	argsB := append([]string{"--region", "b", "--region-peers", "a", "--region-link", "nats-leaf://" + p.Addr()}, backends("b")...)
	var mu sync.Mutex
	b := start(t, dataB, argsB...)
	serverB := func() *server { mu.Lock(); defer mu.Unlock(); return b }

	ids := func(from, n int) []fg.UserID {
		out := make([]fg.UserID, n)
		for i := range out {
			out[i] = fg.UserID(from + i)
		}
		return out
	}
	targets := ids(100, 12)
	ws := []*regionWriter{
		{region: "a", followers: ids(1, 6), targets: targets, mine: true},
		{region: "b", followers: ids(11, 6), targets: targets, mine: true},
		{region: "a", followers: ids(21, 3), targets: targets},
		{region: "b", followers: ids(21, 3), targets: targets},
		{region: "a", followers: ids(21, 3), targets: targets, blocker: true},
		{region: "b", followers: ids(21, 3), targets: targets, blocker: true},
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i, w := range ws {
		w.acked, w.unsure = map[[2]fg.UserID]bool{}, map[[2]fg.UserID]bool{}
		w.muted, w.unsureMutes = map[[2]fg.UserID]bool{}, map[[2]fg.UserID]bool{}
		srv := func() *server { return a }
		if w.region == "b" {
			srv = serverB
		}
		wg.Add(1)
		go func() { defer wg.Done(); w.run(stop, srv, uint64(i)) }()
	}
	time.Sleep(3 * time.Second)
	p.Stop()
	cut := time.Now()
	t.Log("link cut")
	time.Sleep(14 * time.Second)
	mu.Lock()
	b.kill()
	mu.Unlock()
	t.Log("region b's server killed")
	nb := start(t, dataB, argsB...)
	mu.Lock()
	b = nb
	mu.Unlock()
	time.Sleep(time.Until(cut.Add(30 * time.Second)))
	p.Start()
	healed := time.Now()
	t.Log("link back")
	time.Sleep(2 * time.Second)
	close(stop)
	wg.Wait()
	writes := 0
	for _, w := range ws {
		writes += w.oks
		t.Logf("writer of region %s on %v: %d acknowledged, %d failed", w.region, w.followers, w.oks, w.errs)
	}

	users := append(append(ids(1, 6), ids(11, 6)...), append(ids(21, 3), targets...)...)
	var sa, sb string
	deadline := time.Now().Add(2 * time.Minute)
	for {
		sa, sb = regionState(t, a, users), regionState(t, b, users)
		if sa == sb {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the regions differ 2 minutes after the link came back:\na: %s\nb: %s", sa, sb)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("%d writes; both regions equal %s after the link came back", writes, time.Since(healed).Round(10*time.Millisecond))

	// No follow across a block: each region mended what the other's
	// concurrent follows and blocks left (followgraph.Mend).
	ctx := context.Background()
	blocks := 0
	for _, f := range ids(21, 3) {
		rel, err := a.client.Relations(ctx, f, targets)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rel {
			if r.BlockedBy {
				blocks++
				if r.Relation != fg.RelationNone {
					t.Errorf("%d follows %d (%s) while %d blocks it", f, r.ID, r.Relation, r.ID)
				}
			}
		}
	}
	if blocks == 0 {
		t.Error("no block stands at the end: the test checks nothing of blocks")
	}
	t.Logf("%d blocks stand, none across a follow", blocks)

	for _, w := range ws {
		if !w.mine {
			continue
		}
		for e, on := range w.acked {
			if w.unsure[e] {
				continue
			}
			for _, s := range []*server{a, b} {
				got, err := s.client.IsFollowing(ctx, e[0], e[1])
				if err != nil {
					t.Fatal(err)
				}
				if got.Following != on {
					t.Errorf("%d→%d: region %s acknowledged following=%v last, found %v", e[0], e[1], w.region, on, got.Following)
				}
			}
		}
		for e, on := range w.muted {
			if w.unsureMutes[e] {
				continue
			}
			for _, s := range []*server{a, b} {
				got, err := s.client.Link(ctx, fg.KindMute, e[0], e[1])
				if err != nil {
					t.Fatal(err)
				}
				if got.On != on {
					t.Errorf("%d mutes %d: region %s acknowledged %v last, found %v", e[0], e[1], w.region, on, got.On)
				}
			}
		}
	}

	if !reconcile {
		return
	}
	a.stop(t)
	b.stop(t)
	for _, r := range [][3]string{{"a", "b", dataA}, {"b", "a", dataB}} {
		out := runBinary(t, append([]string{"reconcile", "--data", r[2], "--region", r[0], "--region-peers", r[1]}, backends(r[0])...)...)
		if !strings.Contains(out, "differences: 0 ") {
			t.Errorf("reconcile of region %s: %s", r[0], out)
			continue
		}
		t.Logf("reconcile of region %s: %s", r[0], out[strings.Index(out, "differences: "):])
	}
}
