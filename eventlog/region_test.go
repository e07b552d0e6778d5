package eventlog

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/internal/testenv"
)

// regionClock hands out the versions of one region, like its engine.
type regionClock struct {
	mu   sync.Mutex
	last fg.Version
	id   int
}

func (c *regionClock) next() fg.Version {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.last = fg.NextVersion(c.last, time.Now().UnixMilli(), c.id)
	return c.last
}

// twoRegions opens the logs of regions a and b, b linked to a through a
// proxy the test cuts, and waits until each copies the other's events.
func twoRegions(t *testing.T) (a, b *Log, p *testenv.Proxy) {
	leaf := freeAddr(t)
	a = openLog(t, Config{Dir: t.TempDir(), Regions: &Regions{Name: "a", Peers: []string{"b"}, Listen: leaf}})
	p = testenv.NewProxy(t, leaf)
	b = openLog(t, Config{Dir: t.TempDir(), Regions: &Regions{Name: "b", Peers: []string{"a"}, Links: []string{"nats-leaf://" + p.Addr()}}})
	return a, b, p
}

// received collects what a consumer of a log handled, by event id.
type received struct {
	mu      sync.Mutex
	ids     map[string]int
	foreign map[string]bool
}

func consumeAll(t *testing.T, l *Log) *received {
	r := &received{ids: map[string]int{}, foreign: map[string]bool{}}
	startConsumer(t, l, "persister", 500, 100*time.Millisecond, func(_ context.Context, b []Message) error {
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, m := range b {
			r.ids[m.Event.ID()]++
			r.foreign[m.Event.ID()] = m.Foreign
		}
		return nil
	})
	return r
}

func (r *received) has(ids []string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, id := range ids {
		if r.ids[id] > 0 {
			n++
		}
	}
	return n
}

// TestRegions: each region's log gets its own events and the other's,
// each once and marked foreign or not, also those published while the
// link between the regions was cut, and those published before the
// other region's log existed.
func TestRegions(t *testing.T) {
	a, b, p := twoRegions(t)
	ca, cb := &regionClock{id: a.cfg.Regions.ID("a")}, &regionClock{id: b.cfg.Regions.ID("b")}
	if ca.id == cb.id || ca.id == 0 || cb.id == 0 {
		t.Fatalf("region numbers a=%d b=%d, want two different ones", ca.id, cb.id)
	}
	var ofA, ofB []string
	pub := func(l *Log, c *regionClock, ids *[]string, n int) {
		for i := 0; i < n; i++ {
			e := fg.NewEvent(fg.UserID(1+i%7), fg.UserID(100+i), fg.OpFollow, c.next())
			publish(t, l, e)
			*ids = append(*ids, e.ID())
		}
	}
	pub(a, ca, &ofA, 50) // before either consumes
	ra, rb := consumeAll(t, a), consumeAll(t, b)
	pub(b, cb, &ofB, 50)
	all := func() []string { return append(append([]string(nil), ofA...), ofB...) }
	waitFor(t, 60*time.Second, "both regions to copy the other's first events", func() bool {
		return ra.has(all()) == len(all()) && rb.has(all()) == len(all())
	})

	p.Stop()
	pub(a, ca, &ofA, 200)
	pub(b, cb, &ofB, 200)
	waitFor(t, 10*time.Second, "each region to persist its own events while cut off", func() bool {
		return ra.has(ofA) == len(ofA) && rb.has(ofB) == len(ofB)
	})
	if n := ra.has(ofB); n != 50 {
		t.Errorf("region a has %d of b's events during the cut, want the 50 of before it", n)
	}
	p.Start()
	healed := time.Now()
	waitFor(t, 3*time.Minute, "both regions to copy what the other published during the cut", func() bool {
		return ra.has(all()) == len(all()) && rb.has(all()) == len(all())
	})
	t.Logf("both regions hold all %d events %s after the link came back", len(all()), time.Since(healed).Round(time.Millisecond))

	for name, r := range map[string]*received{"a": ra, "b": rb} {
		r.mu.Lock()
		for _, id := range all() {
			if n := r.ids[id]; n != 1 {
				t.Errorf("region %s handled %s %d times, want once", name, id, n)
			}
		}
		for _, id := range ofA {
			if want := name == "b"; r.foreign[id] != want {
				t.Errorf("region %s: event %s of a has Foreign %v, want %v", name, id, r.foreign[id], want)
			}
		}
		r.mu.Unlock()
	}
	srcs, err := b.Sources(ctxTimeout(t, 10*time.Second))
	if err != nil || len(srcs) != 2 || srcs[0].Region != "b" || srcs[1].Region != "a" {
		t.Fatalf("b.Sources() = %+v, %v; want b's own export stream, then a's", srcs, err)
	}
}

// TestRegions_RefusesOtherVersions: a publish whose version is not the
// region's is refused before it is sent: an engine not told its region
// would otherwise issue versions another region may issue too.
func TestRegions_RefusesOtherVersions(t *testing.T) {
	l := openLog(t, Config{Dir: t.TempDir(), Regions: &Regions{Name: "a", Peers: []string{"b"}}})
	v := fg.NextVersion(0, time.Now().UnixMilli(), l.cfg.Regions.ID("b"))
	err := l.Publish(ctxTimeout(t, 10*time.Second), fg.NewEvent(1, 2, fg.OpFollow, v))
	if err == nil {
		t.Fatal("Publish of a version of region b in region a succeeded, want an error")
	}
	t.Log(err)
}

func TestRegions_Config(t *testing.T) {
	for _, r := range []Regions{
		{Name: "", Peers: []string{"b"}},
		{Name: "a.b", Peers: []string{"b"}},
		{Name: "a"},
		{Name: "a", Peers: []string{"a"}},
		{Name: "a", Peers: []string{"b", "b"}},
		{Name: "a", Peers: []string{"b"}, Retention: -time.Second},
		{Name: "a", Peers: []string{"b"}, Listen: "127.0.0.1"},
		{Name: "a", Peers: []string{"b"}, Links: []string{"http://x:1"}},
	} {
		if err := (Config{Dir: "x", Regions: &r}).Validate(); err == nil {
			t.Errorf("Validate(%+v) = nil, want an error", r)
		}
	}
	r := Regions{Name: "b", Peers: []string{"c", "a"}}
	if got := fmt.Sprint(r.ID("a"), r.ID("b"), r.ID("c"), r.ID("d")); got != "1 2 3 0" {
		t.Errorf("ID(a, b, c, d) = %s, want 1 2 3 0", got)
	}
}

// TestSettled: in one region every event of the log is in the engine
// already; with regions only those before the first the persister has
// not acknowledged.
func TestSettled(t *testing.T) {
	for _, regions := range []*Regions{nil, {Name: "a", Peers: []string{"b"}}} {
		l := openLog(t, Config{Dir: t.TempDir(), Regions: regions})
		c := &regionClock{}
		if regions != nil {
			c.id = regions.ID("a")
		}
		for i := range 3 {
			publish(t, l, fg.NewEvent(1, fg.UserID(2+i), fg.OpFollow, c.next()))
		}
		ctx := ctxTimeout(t, 30*time.Second)
		waitFor(t, 10*time.Second, "the log to hold the 3 events", func() bool {
			last, err := l.LastSeq(ctx)
			return err == nil && last == 3
		})
		want := uint64(3)
		if regions != nil {
			want = 0
		}
		if got, err := l.Settled(ctx); err != nil || got != want {
			t.Errorf("regions %v: Settled before the persister = %d, %v; want %d", regions != nil, got, err, want)
		}
		cons := startConsumer(t, l, "persister", 10, 50*time.Millisecond, nil)
		waitFor(t, 10*time.Second, "the persister to take the 3 events", func() bool { return len(cons.handled()) == 3 })
		waitFor(t, 10*time.Second, "Settled to reach 3", func() bool {
			got, err := l.Settled(ctx)
			return err == nil && got == 3
		})
	}
}
