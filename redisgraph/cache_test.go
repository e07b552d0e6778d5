package redisgraph

import (
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/redis/rueidis"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/redisgraph/internal/layout"
	"github.com/followgraph/followgraph/redisgraph/internal/lists"
	"github.com/followgraph/followgraph/redisgraph/internal/redistest"
	"github.com/followgraph/followgraph/redisgraph/internal/stamps"
	"github.com/followgraph/followgraph/redisgraph/internal/wire"
)

// TestCache checks the client-side cache: repeated reads are hits; a
// write is seen at once by the next read of the Graph that made it; a
// write through another client is seen once its invalidation arrives.
func TestCache(t *testing.T) {
	for _, m := range modes {
		t.Run(m.Name, func(t *testing.T) {
			g := newTestGraph(t, m.Client(t), WithCacheThreshold(2))
			ctx := t.Context()
			const celebrity = 9
			follow := func(g *testGraph, user fg.UserID) {
				t.Helper()
				if _, err := g.Follow(ctx, user, celebrity); err != nil {
					t.Fatal(err)
				}
			}
			// check reads the celebrity's follower count and first page
			// through g, and reports whether they are followers and newest.
			check := func(followers int64, newest fg.UserID) bool {
				t.Helper()
				c, err := g.Counts(ctx, []fg.UserID{celebrity})
				if err != nil {
					t.Fatal(err)
				}
				p, err := g.Followers(ctx, celebrity, fg.PageRequest{Limit: 5})
				if err != nil {
					t.Fatal(err)
				}
				return c[0].FollowerCount == followers && len(p.Entries) > 0 && p.Entries[0].ID == newest
			}

			follow(g, 1)
			follow(g, 2)
			// A cached entry is served once a check of the graph's marker
			// sent after its fill vouches for it (guard.go), to the
			// millisecond: in real traffic some read sends one within the
			// millisecond; here nothing else reads, so the reads are a few
			// milliseconds apart, after one that fills the cache.
			check(2, 2)
			time.Sleep(2 * time.Millisecond)
			h0, m0 := g.CacheStats()
			for range 3 {
				if !check(2, 2) {
					t.Fatal("the celebrity's followers are not 2 and 1")
				}
				time.Sleep(2 * time.Millisecond)
			}
			if h, m := g.CacheStats(); h-h0 < 4 || m-m0 > 2 {
				t.Errorf("3 reads of the counts and first page: %d hits and %d misses, want at least 4 hits, at most 2 misses", h-h0, m-m0)
			}

			// Our own writes show at once, cache or not.
			for i := range 100 {
				user := fg.UserID(100 + i)
				follow(g, user)
				if !check(int64(3+i), user) {
					t.Fatalf("after follow %d of the celebrity by this Graph, its next read does not show it", i+1)
				}
				if _, err := g.Unfollow(ctx, user, celebrity); err != nil {
					t.Fatal(err)
				}
				follow(g, user)
			}

			// Another client's write shows once Redis's invalidation
			// reaches ours.
			other, err := rueidis.NewClient(m.Option())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(other.Close) // after g2's cleanup, which uses it
			// Vouched for already: g's servers.
			g2 := newTestGraphPrefixScoped(t, other, g.ks.Prefix(), testScope)
			follow(g2, 500)
			h0, _ = g.CacheStats()
			if err := redistest.WaitFor(2*time.Second, func() bool { return check(103, 500) }); err != nil {
				t.Errorf("a follow through another client is not seen: %v", err)
			}
			time.Sleep(2 * time.Millisecond)
			check(103, 500)
			if h, _ := g.CacheStats(); h == h0 {
				t.Error("the reads after another client's write were never served from the cache")
			}
		})
	}
}

// TestCache_JobSeenAtOnce: the users whose counters a batch of an
// account-state job changed are read past the client-side cache until
// their invalidations have surely arrived, as after the Graph's own
// writes: the stamp the Graph knows of each is at least the one in Redis.
func TestCache_JobSeenAtOnce(t *testing.T) {
	for _, m := range modes {
		t.Run(m.Name, func(t *testing.T) {
			ctx := t.Context()
			g := newTestGraph(t, m.Client(t), WithCacheThreshold(1))
			for _, e := range [][2]fg.UserID{{1, 2}, {3, 1}} {
				if _, err := g.Follow(ctx, e[0], e[1]); err != nil {
					t.Fatal(err)
				}
			}
			for _, step := range []struct {
				state fg.State
				step  string
			}{{fg.StateDeactivated, layout.StepHide}, {fg.StateActive, layout.StepShow}} {
				if _, err := g.SetState(ctx, 1, step.state); err != nil {
					t.Fatal(err)
				}
				if _, err := g.Counts(ctx, []fg.UserID{1, 2, 3}); err != nil { // fills the cache
					t.Fatal(err)
				}
				if n, err := g.jobs.Archive(ctx, 1, step.step); err != nil || n != 2 {
					t.Fatalf("archive(1, %s) = %d, %v; want 2 edges", step.step, n, err)
				}
				for _, id := range []fg.UserID{1, 2, 3} {
					st, err := g.c.Do(ctx, g.c.B().Hget().Key(g.ks.User(id, layout.Counters)).Field("st").Build()).AsInt64()
					if err != nil {
						t.Fatal(err)
					}
					if known := g.known.Get(id); known < st {
						t.Errorf("after the job's %s, user %d's stamp is %d in Redis and %d known: a cached read may answer the graph before the job", step.step, id, st, known)
					}
				}
			}
		})
	}
}

// TestCache_ChunkedFirstPage: the first page of a list in chunks is served
// from the client-side cache too, and stays exact under writes that move
// and split it. That Redis served no read of the chunks is told by their
// idle time (OBJECT IDLETIME, in seconds), which any read resets.
func TestCache_ChunkedFirstPage(t *testing.T) {
	for _, m := range modes {
		t.Run(m.Name, func(t *testing.T) {
			const celebrity, bound = 9, 4
			g := newTestGraph(t, m.Client(t), WithCacheThreshold(2), WithMaxKeyMembers(bound))
			ctx := t.Context()
			var followers []fg.UserID // oldest first
			follow := func(user fg.UserID) {
				t.Helper()
				if _, err := g.Follow(ctx, user, celebrity); err != nil {
					t.Fatal(err)
				}
				followers = append(followers, user)
			}
			// check reads the first page of each limit and compares it
			// with followers. A page of 1 or 2 reads as many entries of
			// each chunk as it may take of one, so the merge also meets
			// chunks whose cached entries run out first.
			limits := []int{5}
			check := func(what string) {
				t.Helper()
				for _, limit := range limits {
					p, err := g.Followers(ctx, celebrity, fg.PageRequest{Limit: limit})
					if err != nil {
						t.Fatal(err)
					}
					var got, want []fg.UserID
					for _, e := range p.Entries {
						got = append(got, e.ID)
					}
					for i := len(followers) - 1; i >= 0 && len(want) < limit; i-- {
						want = append(want, followers[i])
					}
					if !slices.Equal(got, want) {
						t.Fatalf("%s: the first page of %d is %v, want %v", what, limit, got, want)
					}
				}
			}
			for u := range fg.UserID(40) {
				follow(100 + u)
			}
			cs, err := g.readCounters(ctx, []fg.UserID{celebrity})
			if err != nil {
				t.Fatal(err)
			}
			chunks := g.lists.ChunkKeys(celebrity, cs[0].view, layout.In)
			if len(chunks) < 4 {
				t.Fatalf("40 followers at bound %d are in %d chunks", bound, len(chunks))
			}
			// Reads go to Redis while this Graph remembers the stamps of
			// its writes (stamps.TTL), and until a marker check vouches for
			// the counters cached (guard.go); the reads after that fill
			// the cache, and a check sent a millisecond after the fill
			// vouches for what it filled.
			check("after the writes")
			time.Sleep(stamps.TTL + 100*time.Millisecond)
			for range 3 {
				check("filling the cache")
				time.Sleep(2 * time.Millisecond)
			}
			time.Sleep(1500 * time.Millisecond)
			for range 3 {
				check("served from the cache")
				time.Sleep(2 * time.Millisecond)
			}
			for _, key := range chunks {
				idle, err := g.c.Do(ctx, g.c.B().ObjectIdletime().Key(key).Build()).AsInt64()
				if err != nil {
					t.Fatal(err)
				}
				if idle < 1 {
					t.Errorf("%s was read %d s ago: 3 first pages over %d chunks were not served from the cache", key, idle, len(chunks))
				}
			}
			// This Graph's own writes show at once, splits and all.
			limits = []int{1, 2, 5}
			for i := range 40 {
				follow(fg.UserID(200 + i))
				check(fmt.Sprintf("after follow %d", i+1))
				if i%3 == 0 {
					last := followers[len(followers)-1]
					if _, err := g.Unfollow(ctx, last, celebrity); err != nil {
						t.Fatal(err)
					}
					followers = followers[:len(followers)-1]
					check(fmt.Sprintf("after unfollow %d", i/3+1))
				}
			}
		})
	}
}

// TestMergeCached merges real replies of ZRANGE ... REV WITHSCORES of
// chunks written for each case, against the newest entries of them all:
// chunks read short, ties of a millisecond broken by the larger id, and a
// chunk read in full that runs out before the page is full, which the
// merge must refuse (its next entry may be newer than the rest).
func TestMergeCached(t *testing.T) {
	c, ctx := redistest.Standalone(t), t.Context()
	p := randomPrefix()
	t.Cleanup(func() {
		for j := range 3 {
			c.Do(ctx, c.B().Del().Key(fmt.Sprintf("%s:%d", p, j)).Build())
		}
	})
	for _, tc := range []struct {
		name   string
		chunks [][]fg.Entry // each chunk's entries, any order
		per, n int
		whole  bool
	}{
		{"short chunks", [][]fg.Entry{{{ID: 1, Since: fg.Millis(10)}, {ID: 4, Since: fg.Millis(40)}},
			{{ID: 2, Since: fg.Millis(20)}}, {{ID: 3, Since: fg.Millis(30)}, {ID: 5, Since: fg.Millis(50)}}}, 3, 4, true},
		{"ties by id", [][]fg.Entry{{{ID: 7, Since: fg.Millis(10)}, {ID: 8, Since: fg.Millis(9)}},
			{{ID: 9, Since: fg.Millis(10)}}, {{ID: 6, Since: fg.Millis(10)}}}, 2, 3, true},
		{"fewer than the page", [][]fg.Entry{{{ID: 1, Since: fg.Millis(1)}}, {}, {{ID: 2, Since: fg.Millis(2)}}}, 2, 5, true},
		{"a full chunk ends the page", [][]fg.Entry{{{ID: 1, Since: fg.Millis(50)}, {ID: 2, Since: fg.Millis(20)}, {ID: 3, Since: fg.Millis(1)}},
			{{ID: 4, Since: fg.Millis(40)}}, {{ID: 5, Since: fg.Millis(30)}}}, 2, 4, true},
		{"a full chunk runs out", [][]fg.Entry{{{ID: 1, Since: fg.Millis(50)}, {ID: 2, Since: fg.Millis(40)}, {ID: 3, Since: fg.Millis(35)}},
			{{ID: 4, Since: fg.Millis(30)}}, {{ID: 5, Since: fg.Millis(5)}}}, 2, 4, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var keys []string
			var all []fg.Entry
			var cmds rueidis.Commands
			for j, es := range tc.chunks {
				key := fmt.Sprintf("%s:%d", p, j)
				keys = append(keys, key)
				cmds = append(cmds, c.B().Del().Key(key).Build())
				for _, e := range es {
					cmds = append(cmds, c.B().Zadd().Key(key).ScoreMember().
						ScoreMember(float64(e.Since.UnixMilli()), wire.Member(e.ID)).Build())
				}
				all = append(all, es...)
			}
			for _, r := range c.DoMulti(ctx, cmds...) {
				if err := r.Error(); err != nil {
					t.Fatal(err)
				}
			}
			var reads rueidis.Commands
			for _, key := range keys {
				reads = append(reads, c.B().Zrange().Key(key).Min("0").Max(strconv.Itoa(tc.per-1)).Rev().Withscores().Build())
			}
			got, whole, err := lists.MergeCached(keys, c.DoMulti(ctx, reads...), tc.per, tc.n)
			if err != nil || whole != tc.whole {
				t.Fatalf("mergeCached: whole %v, %v; want whole %v", whole, err, tc.whole)
			}
			if !whole {
				return
			}
			slices.SortFunc(all, func(a, b fg.Entry) int {
				if lists.Newer(a, b) {
					return -1
				}
				return 1
			})
			want := all[:min(tc.n, len(all))]
			if !slices.EqualFunc(got, want, func(a, b fg.Entry) bool { return a.ID == b.ID && a.Since.Equal(b.Since) }) {
				t.Errorf("merged %v, want %v", got, want)
			}
		})
	}
}
