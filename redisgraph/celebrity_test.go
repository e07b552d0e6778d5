package redisgraph

import (
	"context"
	"os"
	"strconv"
	"sync"
	"testing"

	"github.com/redis/rueidis"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/memgraph"
	"github.com/followgraph/followgraph/redisgraph/internal/keyspace"
	"github.com/followgraph/followgraph/redisgraph/internal/layout"
	"github.com/followgraph/followgraph/redisgraph/internal/lists"
	"github.com/followgraph/followgraph/redisgraph/internal/redistest"
)

// TestCelebrity: a user with a million followers (CELEBRITY_FOLLOWERS
// sets how many), rebuilt into a Redis Cluster of three masters at the
// default bound: no key of the user holds more than the bound; walked
// page by page while others follow and unfollow it, every follower there
// throughout comes exactly once; the count is exact; its deactivation
// hides every edge and its restore shows them all again. Its chunks share
// its slot, so one master holds them all (docs/design/redis-layout.md's
// Chunks): the test logs that share.
//
// Under the race detector, which slows its million of writes and reads
// several times over, it is left out: .ci/run runs it without.
func TestCelebrity(t *testing.T) {
	if raceDetector {
		t.Skip("a million followers under the race detector: .ci/run runs this test without -race")
	}
	n := 1_000_000
	if s := os.Getenv("CELEBRITY_FOLLOWERS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	c := redistest.Cluster(t)
	g := newTestGraph(t, c)
	t.Cleanup(func() { deletePrefix(t, g) })
	const celeb = fg.UserID(1)
	src := memgraph.New()
	for i := range n {
		if _, err := src.Follow(ctx, fg.UserID(1_000_000+i), celeb); err != nil {
			t.Fatal(err)
		}
	}
	g.users[celeb] = true
	if _, err := g.Rebuild(ctx, src, RebuildOptions{}); err != nil {
		t.Fatal(err)
	}
	v, err := lists.ParseView(c.Do(ctx, g.lists.ViewCmd(celeb)))
	if err != nil {
		t.Fatal(err)
	}
	largest := int64(0)
	for _, key := range g.lists.ChunkKeys(celeb, v, layout.In) {
		size, err := c.Do(ctx, c.B().Zcard().Key(key).Build()).AsInt64()
		if err != nil {
			t.Fatal(err)
		}
		largest = max(largest, size)
	}
	t.Logf("%d followers in %d chunks, the largest of %d entries, all on the master of slot %d (one of 3: a share of 1)",
		n, v.Chunks(layout.In), largest, keyspace.SlotOf(celeb))
	if largest > DefaultMaxKeyMembers {
		t.Errorf("a chunk of %d entries, over %d", largest, DefaultMaxKeyMembers)
	}

	// Churn: followers 1,000,000 + 2i unfollow, new users follow, while
	// a reader walks the list.
	const churn = 5000
	var writers sync.WaitGroup
	for w := range 2 {
		writers.Go(func() {
			for i := w; i < churn; i += 2 {
				if _, err := g.Unfollow(ctx, fg.UserID(1_000_000+2*i), celeb); err != nil {
					t.Error(err)
					return
				}
				if _, err := g.Follow(ctx, fg.UserID(5_000_000+i), celeb); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	seen := make(map[fg.UserID]bool, n+churn)
	for req := (fg.PageRequest{Limit: fg.MaxLimit}); ; {
		p, err := g.Followers(ctx, celeb, req)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range p.Entries {
			if seen[e.ID] {
				t.Fatalf("follower %d twice in one walk", e.ID)
			}
			seen[e.ID] = true
		}
		if p.Next == "" {
			break
		}
		req.Cursor = p.Next
	}
	writers.Wait()
	for i := range n {
		if u := fg.UserID(1_000_000 + i); (i%2 == 1 || i >= 2*churn) && !seen[u] {
			t.Fatalf("the walk missed follower %d, there throughout", u)
		}
	}
	want := int64(n)
	if cs, err := g.Counts(ctx, []fg.UserID{celeb}); err != nil || cs[0].FollowerCount != want {
		t.Fatalf("counts %+v, %v after the churn; want %d followers", cs, err, want)
	}

	// Its account-state jobs, over every chunk.
	if _, err := g.SetState(ctx, celeb, fg.StateDeactivated); err != nil {
		t.Fatal(err)
	}
	if hidden, err := g.jobs.Archive(ctx, celeb, layout.StepHide); err != nil || hidden != want {
		t.Fatalf("hide = %d, %v; want %d", hidden, err, want)
	}
	if _, err := g.SetState(ctx, celeb, fg.StateActive); err != nil {
		t.Fatal(err)
	}
	if shown, err := g.jobs.Archive(ctx, celeb, layout.StepShow); err != nil || shown != want {
		t.Fatalf("show = %d, %v; want %d", shown, err, want)
	}
	if cs, err := g.Counts(ctx, []fg.UserID{celeb, 1_000_001}); err != nil || cs[0].FollowerCount != want || cs[1].FollowingCount != 1 {
		t.Fatalf("counts %+v, %v after the restore; want %d followers, and 1 following", cs, err, want)
	}
}

// deletePrefix deletes every key under g's prefix, on every master.
func deletePrefix(tb testing.TB, g *testGraph) {
	ctx := context.Background()
	for _, node := range g.c.Nodes() {
		for cursor := uint64(0); ; {
			e, err := node.Do(ctx, node.B().Scan().Cursor(cursor).Match(keyspace.GlobEscape(g.ks.Prefix())+":*").Count(10000).Build()).AsScanEntry()
			if err != nil {
				tb.Errorf("deleting %s: %v", g.ks.Prefix(), err)
				return
			}
			cmds := make(rueidis.Commands, len(e.Elements))
			for i, key := range e.Elements {
				cmds[i] = node.B().Unlink().Key(key).Build()
			}
			node.DoMulti(ctx, cmds...)
			if cursor = e.Cursor; cursor == 0 {
				break
			}
		}
	}
}
