package redisgraph

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/redis/rueidis"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/memgraph"
	"github.com/followgraph/followgraph/redisgraph/internal/keyspace"
	"github.com/followgraph/followgraph/redisgraph/internal/layout"
	"github.com/followgraph/followgraph/redisgraph/internal/lists"
)

// TestChunks: with keys bounded to 8 entries, a user followed by 300
// (some of whom unfollow and follow again) and following 300 has both
// lists in many chunks, no key over the bound, and every read exact:
// counts, each page of both lists (every entry once, newest first),
// IsFollowing and Relations; the same on a Cluster.
func TestChunks(t *testing.T) {
	const bound, n = 8, 300
	for _, m := range modes {
		t.Run(m.Name, func(t *testing.T) {
			c := m.Client(t)
			g := newTestGraph(t, c, WithMaxKeyMembers(bound), WithCacheThreshold(1))
			ctx := context.Background()
			const celeb, fan = fg.UserID(1), fg.UserID(2)
			others := make([]fg.UserID, n)
			for i := range others {
				others[i] = fg.UserID(1000 + 7*i)
			}
			var wg sync.WaitGroup
			for w := range 4 {
				wg.Go(func() {
					for i := w; i < n; i += 4 {
						for _, e := range [][2]fg.UserID{{others[i], celeb}, {fan, others[i]}} {
							if _, err := g.Follow(ctx, e[0], e[1]); err != nil {
								t.Error(err)
								return
							}
						}
						if i%5 == 0 {
							if _, err := g.Unfollow(ctx, others[i], celeb); err != nil {
								t.Error(err)
							}
						}
						if i%10 == 0 {
							if _, err := g.Follow(ctx, others[i], celeb); err != nil {
								t.Error(err)
							}
						}
					}
				})
			}
			wg.Wait()
			if t.Failed() {
				return
			}
			var followers []fg.UserID
			for i, o := range others {
				if i%5 != 0 || i%10 == 0 {
					followers = append(followers, o)
				}
			}
			checkKeys(t, g, bound, celeb, fan)
			cs, err := g.Counts(ctx, []fg.UserID{celeb, fan})
			if err != nil {
				t.Fatal(err)
			}
			if cs[0].FollowerCount != int64(len(followers)) || cs[1].FollowingCount != n {
				t.Errorf("counts %+v, want %d followers and %d following", cs, len(followers), n)
			}
			for _, l := range []struct {
				name string
				page func(fg.PageRequest) (fg.Page, error)
				want []fg.UserID
			}{
				{"followers", func(r fg.PageRequest) (fg.Page, error) { return g.Followers(ctx, celeb, r) }, followers},
				{"following", func(r fg.PageRequest) (fg.Page, error) { return g.Following(ctx, fan, r) }, others},
			} {
				var got []fg.Entry
				for req := (fg.PageRequest{Limit: 7}); ; {
					p, err := l.page(req)
					if err != nil {
						t.Fatal(err)
					}
					got = append(got, p.Entries...)
					if p.Next == "" {
						break
					}
					req.Cursor = p.Next
				}
				ids := make([]fg.UserID, len(got))
				for i, e := range got {
					ids[i] = e.ID
					if i > 0 && !lists.Newer(got[i-1], e) {
						t.Errorf("%s: entry %d (%v) before %d (%v)", l.name, i-1, got[i-1], i, e)
					}
				}
				slices.Sort(ids)
				if !slices.Equal(ids, l.want) {
					t.Errorf("%s: paged %d entries, want %d: %v", l.name, len(ids), len(l.want), ids)
				}
			}
			rel, err := g.Relations(ctx, celeb, others)
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range rel {
				if want := i%5 != 0 || i%10 == 0; !r.FollowedBySince.IsZero() != want {
					t.Errorf("relation of %d to %d: %+v, want followed by %v", celeb, others[i], r, want)
				}
				if e, err := g.IsFollowing(ctx, fan, others[i]); err != nil || !e.Following {
					t.Errorf("IsFollowing(%d, %d) = %+v, %v", fan, others[i], e, err)
				}
			}
		})
	}
}

// checkKeys fails t unless every key of users holds at most bound
// entries, and users' lists are in more than one chunk.
func checkKeys(t *testing.T, g *testGraph, bound int, users ...fg.UserID) {
	t.Helper()
	ctx := context.Background()
	for _, u := range users {
		v, err := lists.ParseView(g.c.Do(ctx, g.lists.ViewCmd(u)))
		if err != nil {
			t.Fatal(err)
		}
		if v.Chunks(layout.In)+v.Chunks(layout.Out) <= 2 {
			t.Errorf("user %d: lists in %d and %d chunks, want more", u, v.Chunks(layout.Out), v.Chunks(layout.In))
		}
		for _, grp := range layout.Groups {
			for _, k := range grp.Keys {
				for _, key := range g.lists.ChunkKeys(u, v, k) {
					var size int64
					if layout.IsHash(k) {
						size, err = g.c.Do(ctx, g.c.B().Hlen().Key(key).Build()).AsInt64()
					} else {
						size, err = g.c.Do(ctx, g.c.B().Zcard().Key(key).Build()).AsInt64()
					}
					if err != nil {
						t.Fatal(err)
					}
					if size > int64(bound) {
						t.Errorf("%s holds %d entries, over %d", key, size, bound)
					}
				}
			}
		}
		// No key of u beyond its chunks.
		var cursor uint64
		for {
			e, err := g.c.Do(ctx, g.c.B().Scan().Cursor(cursor).Match(keyspace.GlobEscape(g.ks.Prefix())+":{"+u.String()+"}:*").Count(1000).Build()).AsScanEntry()
			if err != nil {
				if _, ok := rueidis.IsRedisErr(err); ok && g.ks.Cluster() {
					break // SCAN goes to one node of a Cluster: checked above
				}
				t.Fatal(err)
			}
			for _, key := range e.Elements {
				suffix := key[strings.LastIndex(key, "}:")+2:]
				name, j, _ := strings.Cut(suffix, ":")
				if j == "" {
					continue
				}
				n, _ := strconv.Atoi(j)
				if n >= v.Chunks(layout.Key(name)) {
					t.Errorf("key %s past the %d chunks of %s", key, v.Chunks(layout.Key(name)), name)
				}
			}
			if cursor = e.Cursor; cursor == 0 {
				break
			}
		}
	}
}

// TestLayoutUpgrade: a Redis holding the graph in layout 1 (one key a
// list, however long) is refused, with the way on: a rebuild into a new
// prefix, which writes the lists past the bound in chunks (made at once,
// so that the rebuild splits none) that every read then reads exactly.
func TestLayoutUpgrade(t *testing.T) {
	const bound, n = 8, 100
	for _, m := range modes {
		t.Run(m.Name, func(t *testing.T) {
			ctx := t.Context()
			c := m.Client(t)
			old := randomPrefix()
			key := old + ":layout"
			t.Cleanup(func() { c.Do(context.Background(), c.B().Del().Key(key).Build()) })
			if err := c.Do(ctx, c.B().Set().Key(key).Value("1").Build()).Error(); err != nil {
				t.Fatal(err)
			}
			_, err := New(ctx, c, WithPrefix(old))
			if err == nil || !strings.Contains(err.Error(), `layout "1"`) || !strings.Contains(err.Error(), "rebuild") {
				t.Fatalf("New on a Redis in layout 1 = %v; want a refusal naming layout 1 and the rebuild", err)
			}

			const celeb = fg.UserID(1)
			src := memgraph.New()
			var want []fg.UserID
			for i := range n {
				u := fg.UserID(100 + i)
				if _, err := src.Follow(ctx, u, celeb); err != nil {
					t.Fatal(err)
				}
				if _, err := src.Follow(ctx, celeb, u); err != nil {
					t.Fatal(err)
				}
				want = append(want, u)
			}
			g := newTestGraph(t, c, WithMaxKeyMembers(bound))
			for _, u := range want {
				g.users[u] = true
			}
			g.users[celeb] = true
			if _, err := g.Rebuild(ctx, src, RebuildOptions{}); err != nil {
				t.Fatal(err)
			}
			checkKeys(t, g, bound, celeb)
			for _, page := range []func(fg.PageRequest) (fg.Page, error){
				func(r fg.PageRequest) (fg.Page, error) { return g.Followers(ctx, celeb, r) },
				func(r fg.PageRequest) (fg.Page, error) { return g.Following(ctx, celeb, r) },
			} {
				var ids []fg.UserID
				for req := (fg.PageRequest{Limit: 9}); ; {
					p, err := page(req)
					if err != nil {
						t.Fatal(err)
					}
					for _, e := range p.Entries {
						ids = append(ids, e.ID)
					}
					if p.Next == "" {
						break
					}
					req.Cursor = p.Next
				}
				slices.Sort(ids)
				if !slices.Equal(ids, want) {
					t.Errorf("paged %v after the rebuild, want %v", ids, want)
				}
			}
			cs, err := g.Counts(ctx, []fg.UserID{celeb})
			if err != nil || cs[0].FollowerCount != n || cs[0].FollowingCount != n {
				t.Errorf("counts after the rebuild %+v, %v; want %d both ways", cs, err, n)
			}
		})
	}
}

// TestChunkSplitsRacing: while writers follow and unfollow a user with
// keys bounded to 4 entries, so that its lists split again and again,
// readers walk its followers page by page: every walk holds each follower
// present throughout exactly once, no entry twice, newest first; at the
// end the count is exact.
func TestChunkSplitsRacing(t *testing.T) {
	const bound, stable, churn = 4, 40, 400
	for _, m := range modes {
		t.Run(m.Name, func(t *testing.T) {
			ctx := context.Background()
			g := newTestGraph(t, m.Client(t), WithMaxKeyMembers(bound))
			const celeb = fg.UserID(1)
			for i := range stable {
				if _, err := g.Follow(ctx, fg.UserID(10+i), celeb); err != nil {
					t.Fatal(err)
				}
			}
			stop := make(chan struct{})
			var writers, readers sync.WaitGroup
			for w := range 2 {
				writers.Go(func() {
					for i := w; i < churn; i += 2 {
						u := fg.UserID(1000 + i)
						if _, err := g.Follow(ctx, u, celeb); err != nil {
							t.Error(err)
							return
						}
						if i%2 == 0 {
							if _, err := g.Unfollow(ctx, u, celeb); err != nil {
								t.Error(err)
								return
							}
						}
					}
				})
			}
			walks := 0
			var mu sync.Mutex
			for range 2 {
				readers.Go(func() {
					for {
						select {
						case <-stop:
							return
						default:
						}
						seen := map[fg.UserID]bool{}
						var prev *fg.Entry
						for req := (fg.PageRequest{Limit: 5}); ; {
							p, err := g.Followers(ctx, celeb, req)
							if err != nil {
								t.Error(err)
								return
							}
							for _, e := range p.Entries {
								if seen[e.ID] {
									t.Errorf("follower %d twice in one walk", e.ID)
								}
								if prev != nil && !lists.Newer(*prev, e) {
									t.Errorf("%v after %v", e, *prev)
								}
								seen[e.ID], prev = true, &e
							}
							if p.Next == "" {
								break
							}
							req.Cursor = p.Next
						}
						for i := range stable {
							if !seen[fg.UserID(10+i)] {
								t.Errorf("a walk missed follower %d, there throughout", 10+i)
							}
						}
						mu.Lock()
						walks++
						mu.Unlock()
					}
				})
			}
			writers.Wait()
			close(stop)
			readers.Wait()
			v, err := lists.ParseView(g.c.Do(ctx, g.lists.ViewCmd(celeb)))
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d walks; the followers ended in %d chunks", walks, v.Chunks(layout.In))
			if v.Chunks(layout.In) < 16 {
				t.Errorf("followers in %d chunks: too few splits to race", v.Chunks(layout.In))
			}
			cs, err := g.Counts(ctx, []fg.UserID{celeb})
			if err != nil || cs[0].FollowerCount != stable+churn/2 {
				t.Errorf("counts %+v, %v; want %d followers", cs, err, stable+churn/2)
			}
			checkKeys(t, g, bound, celeb)
		})
	}
}
