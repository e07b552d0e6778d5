package graphtest

import (
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/followgraph/followgraph"
)

func (s suite) testListOrder(t *testing.T) {
	f := s.fixture(t, 0)
	t0 := f.now()
	f.followAll(1, 5, 12, 3, 40, 7)
	f.followedBy(50, 8, 30, 2, 17)
	f.advance(1)
	f.followAll(1, 9, 2)
	f.followedBy(50, 4, 60)
	f.advance(2)
	f.follow(1, 100)
	f.follow(70, 50)

	checkListEveryLimit(t, f.ctx, followingList(f.g, 1), []followgraph.Entry{
		entry(100, t0+3),
		entry(9, t0+1), entry(2, t0+1),
		entry(40, t0), entry(12, t0), entry(7, t0), entry(5, t0), entry(3, t0),
	})
	checkListEveryLimit(t, f.ctx, followersList(f.g, 50), []followgraph.Entry{
		entry(70, t0+3),
		entry(60, t0+1), entry(4, t0+1),
		entry(30, t0), entry(17, t0), entry(8, t0), entry(2, t0),
	})

	// A refollow moves to the front.
	f.advance(1)
	f.unfollow(1, 5)
	f.follow(1, 5)
	checkListEveryLimit(t, f.ctx, followingList(f.g, 1), []followgraph.Entry{
		entry(5, t0+4),
		entry(100, t0+3),
		entry(9, t0+1), entry(2, t0+1),
		entry(40, t0), entry(12, t0), entry(7, t0), entry(3, t0),
	})
}

// testPaging reads every list of a random graph full of ties in pages of
// every size.
func (s suite) testPaging(t *testing.T) {
	f := s.fixture(t, 0)
	m := newModel(0)
	rng := rand.New(rand.NewPCG(11, 12))
	var edges []edge
	for x := followgraph.UserID(3); x <= 40; x++ {
		for _, e := range []edge{{1, x}, {2, x}, {x, 1}, {x, 2}} {
			if rng.IntN(10) < 7 {
				edges = append(edges, e)
			}
		}
	}
	rng.Shuffle(len(edges), func(i, j int) { edges[i], edges[j] = edges[j], edges[i] })
	for _, e := range edges {
		if rng.IntN(3) == 0 {
			f.advance(1)
		}
		if !checkFollow(t, f.ctx, f.g, m, e.user, e.target, f.now()) {
			t.FailNow()
		}
	}
	for _, l := range append(lists(f.g, 1, 2), lists(f.g, 2, 1)...) {
		checkListEveryLimit(t, f.ctx, l, l.want(m))
	}
}

// testPagingLongTies reads lists that hold many entries of one
// millisecond, more than a page, so that most cursors stand inside the
// ties: in pages of every size, each entry once, ties by larger id first.
func (s suite) testPagingLongTies(t *testing.T) {
	f := s.fixture(t, 0)
	t0 := f.now()
	f.follow(1, 2)
	f.follow(90, 2)
	f.advance(1)
	var want []followgraph.Entry
	for id := followgraph.UserID(60); id >= 3; id -= 2 {
		f.follow(id, 2)
		f.follow(2, id)
		want = append(want, entry(id, t0+1))
	}
	f.advance(1)
	f.follow(2, 70)
	f.follow(70, 2)
	wantIn := append(append([]followgraph.Entry{entry(70, t0+2)}, want...), entry(90, t0), entry(1, t0))
	checkListEveryLimit(t, f.ctx, followersList(f.g, 2), wantIn)
	checkListEveryLimit(t, f.ctx, followingList(f.g, 2), append([]followgraph.Entry{entry(70, t0+2)}, want...))
}

// testCursorSurvivesChange reads a list while its entries change: the
// entry a cursor stands at and the one after it are removed, and newer
// entries come ahead of the cursor.
func (s suite) testCursorSurvivesChange(t *testing.T) {
	f := s.fixture(t, 0)
	t0 := f.now()
	for id := followgraph.UserID(2); id <= 7; id++ {
		f.advance(1)
		f.follow(id, 1)
	}
	l := followersList(f.g, 1)
	read := func(cursor string) followgraph.SetPage {
		t.Helper()
		p, err := l.read(f.ctx, followgraph.PageRequest{Limit: 2, Cursor: cursor})
		if err != nil {
			t.Fatalf("%s, 2 a page, cursor %q: %v", l.name, cursor, err)
		}
		return p
	}

	p := read("")
	checkEntries(t, l.name+", page 1", p.Entries, []followgraph.Entry{entry(7, t0+6), entry(6, t0+5)})

	f.unfollow(6, 1) // the entry the cursor stands at
	f.unfollow(5, 1) // the entry after it
	f.advance(1)
	f.followedBy(1, 8, 9) // newer than the cursor
	f.unfollow(7, 1)
	f.follow(7, 1) // moved ahead of the cursor

	p = read(p.Next)
	checkEntries(t, l.name+", page 2 after changes", p.Entries, []followgraph.Entry{entry(4, t0+3), entry(3, t0+2)})
	if p.Next == "" {
		t.Fatalf("%s, page 2 has no next cursor, but an entry follows", l.name)
	}
	p = read(p.Next)
	checkEntries(t, l.name+", page 3", p.Entries, []followgraph.Entry{entry(2, t0+1)})
	if p.Next != "" {
		t.Errorf("%s, page 3 is the last but has next cursor %q", l.name, p.Next)
	}
}

// testPagingUnderConcurrentChange pages through the followers, the
// following and the mutuals of a user while other goroutines keep
// changing them. Stable users are in all three lists the whole time;
// churning users, interleaved with them in time, come and go.
func (s suite) testPagingUnderConcurrentChange(t *testing.T) {
	const (
		user    = 1
		n       = 40 // stable users, and as many churning users
		writers = 4
		passes  = 30 // of each reader
	)
	f := s.fixture(t, 0)
	ctx, g := f.ctx, f.g
	since := make(map[followgraph.UserID]int64) // of the stable users
	var churn []followgraph.UserID
	for i := range n {
		f.advance(1)
		stable, churner := followgraph.UserID(100+i), followgraph.UserID(200+i)
		f.follow(stable, user)
		f.follow(user, stable)
		f.follow(churner, user)
		f.follow(user, churner)
		since[stable] = f.now()
		churn = append(churn, churner)
	}

	stop := make(chan struct{})
	var writing sync.WaitGroup
	for w := range writers {
		writing.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 21))
			for {
				select {
				case <-stop:
					return
				default:
				}
				c := churn[w+writers*rng.IntN(n/writers)] // writer w churns its own users
				a, b := c, followgraph.UserID(user)
				if rng.IntN(2) == 0 {
					a, b = b, a
				}
				var err error
				if rng.IntN(2) == 0 {
					_, err = g.Follow(ctx, a, b)
				} else {
					_, err = g.Unfollow(ctx, a, b)
				}
				if err != nil {
					t.Errorf("writer %d: %d→%d: %v", w, a, b, err)
					return
				}
				if rng.IntN(8) == 0 {
					f.clock.Advance(time.Millisecond)
				}
			}
		})
	}

	var reading sync.WaitGroup
	for _, l := range []list{followersList(g, user), followingList(g, user), mutualsList(g, user)} {
		reading.Go(func() {
			for pass := range passes {
				limit := 1 + pass%3
				pages, err := readAll(ctx, l, limit) // no entry twice, in order
				if err != nil {
					t.Errorf("reading while others write: %v", err)
					return
				}
				got := make(map[followgraph.UserID]followgraph.Entry)
				for _, p := range pages {
					for _, e := range p.Entries {
						got[e.ID] = e
					}
				}
				for id, ms := range since {
					e, ok := got[id]
					if !ok {
						t.Errorf("%s read %d a page while others write: %d, present the whole time, is missing", l.name, limit, id)
					} else if !e.Since.Equal(followgraph.Millis(ms)) {
						t.Errorf("%s read %d a page while others write: %s, want %s", l.name, limit, formatEntry(e), formatEntry(entry(id, ms)))
					}
				}
			}
		})
	}
	reading.Wait()
	close(stop)
	writing.Wait()
}
