package horizon_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/eventlog"
	"github.com/followgraph/followgraph/horizon"
	"github.com/followgraph/followgraph/memgraph"
	"github.com/followgraph/followgraph/store/sqlite"
	"github.com/followgraph/followgraph/store/storetest"
)

var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func clock() time.Time { return now }

func at(d time.Duration) fg.Version { return fg.VersionAt(now.Add(d).UnixMilli()) }

func backlog(v fg.Version, ok bool, err error) horizon.Backlog {
	return func(context.Context) (fg.Version, bool, error) { return v, ok, err }
}

func TestBound(t *testing.T) {
	const r = time.Hour
	failed := errors.New("the log is down")
	for _, c := range []struct {
		name     string
		backlogs []horizon.Backlog
		want     fg.Version
		err      error
	}{
		{"none", nil, at(-r), nil},
		{"empty", []horizon.Backlog{backlog(0, false, nil)}, at(-r), nil},
		{"older", []horizon.Backlog{backlog(at(-2*time.Hour), true, nil), backlog(at(-time.Hour), true, nil)}, at(-3 * time.Hour), nil},
		{"newer than now", []horizon.Backlog{backlog(at(time.Hour), true, nil)}, at(-r), nil},
		{"unreadable", []horizon.Backlog{backlog(0, false, nil), backlog(0, false, failed)}, 0, failed},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := horizon.New(horizon.Config{Retention: r, Now: clock}, c.backlogs, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := p.Bound(context.Background())
			if got != c.want || !errors.Is(err, c.err) {
				t.Errorf("Bound = %d, %v; want %d, %v", got, err, c.want, c.err)
			}
		})
	}
	if _, err := horizon.New(horizon.Config{}, nil, nil, nil); err == nil {
		t.Error("New with no retention succeeded")
	}
}

// holders returns a SQLite store and memgraph, each holding an old
// tombstone (1→2, unfollowed two hours before now), a live old edge
// (1→3), and a tombstone of half an hour ago (1→4).
func holders(t *testing.T) (*sqlite.Store, *memgraph.Graph) {
	t.Helper()
	ctx := context.Background()
	s, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "followgraph.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	events := []fg.Event{
		fg.NewEvent(1, 2, fg.OpFollow, at(-3*time.Hour)), fg.NewEvent(1, 2, fg.OpUnfollow, at(-2*time.Hour)),
		fg.NewEvent(1, 3, fg.OpFollow, at(-3*time.Hour)),
		fg.NewEvent(1, 4, fg.OpFollow, at(-time.Hour)), fg.NewEvent(1, 4, fg.OpUnfollow, at(-30*time.Minute)),
	}
	storetest.Apply(t, s, 1, events...)
	g := memgraph.New(memgraph.WithClock(clock))
	if err := g.Apply(ctx, events); err != nil {
		t.Fatal(err)
	}
	return s, g
}

// TestPass: a pass removes, from every holder, the tombstones older than
// the bound and nothing else, in steps, and says so in its metrics.
func TestPass(t *testing.T) {
	ctx := context.Background()
	s, g := holders(t)
	reg := prometheus.NewRegistry()
	p, err := horizon.New(horizon.Config{Retention: time.Hour, Step: 1, Now: clock}, nil,
		[]horizon.Holder{{Name: "store", TombstonePurger: s}, {Name: "engine", TombstonePurger: g}}, reg)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := p.Pass(ctx); err != nil || n != 2 {
		t.Fatalf("Pass = %d, %v; want 2 (1→2 in each holder)", n, err)
	}
	storetest.CheckEvents(t, s, []fg.Event{fg.NewEvent(1, 3, fg.OpFollow, at(-3*time.Hour)), fg.NewEvent(1, 4, fg.OpUnfollow, at(-30*time.Minute))})
	for _, h := range []fg.TombstonePurger{s, g} {
		if got := storetest.Horizon(t, h); got != at(-2*time.Hour)+1 {
			t.Errorf("tombstone horizon %d, want %d: just above the tombstone removed", got, at(-2*time.Hour)+1)
		}
	}
	if e, _ := g.IsFollowing(ctx, 1, 3); !e.Following {
		t.Error("the pass removed a live edge from memgraph")
	}
	for _, holder := range []string{"store", "engine"} {
		want := float64(at(-2*time.Hour).Millis()) / 1000
		if got := metric(t, reg, "followgraph_tombstone_horizon_timestamp_seconds", holder); got != want {
			t.Errorf("horizon gauge of %s = %v, want %v", holder, got, want)
		}
		if got := metric(t, reg, "followgraph_tombstones_removed_total", holder); got != 1 {
			t.Errorf("removed total of %s = %v, want 1", holder, got)
		}
	}
	// Nothing left below the bound: a second pass removes nothing.
	if n, err := p.Pass(ctx); err != nil || n != 0 {
		t.Errorf("a second Pass = %d, %v", n, err)
	}
}

// TestPass_Backlog: an event the store lacks, at the head of the event
// log, holds the bound at the retention before its version.
func TestPass_Backlog(t *testing.T) {
	ctx := context.Background()
	s, g := holders(t)
	log, err := eventlog.Open(ctx, eventlog.Config{Dir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	// Waiting since before the tombstone of 1→2.
	if err := log.Publish(ctx, fg.NewEvent(5, 6, fg.OpFollow, at(-150*time.Minute))); err != nil {
		t.Fatal(err)
	}
	p, err := horizon.New(horizon.Config{Retention: time.Minute, Now: clock},
		[]horizon.Backlog{func(ctx context.Context) (fg.Version, bool, error) { return log.Oldest(ctx, "persister") }},
		[]horizon.Holder{{Name: "store", TombstonePurger: s}, {Name: "engine", TombstonePurger: g}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := p.Bound(ctx); err != nil || b != at(-151*time.Minute) {
		t.Fatalf("Bound = %d, %v; want the retention before the waiting event, %d", b, err, at(-151*time.Minute))
	}
	if n, err := p.Pass(ctx); err != nil || n != 0 {
		t.Errorf("Pass = %d, %v; want nothing removed: the event waiting is older than every tombstone", n, err)
	}
}

// failing is a holder whose steps fail.
type failing struct{ fg.TombstonePurger }

func (failing) PurgeTombstones(context.Context, fg.Version, int) (int, bool, error) {
	return 0, false, errors.New("the database is down")
}

// TestPass_Failure: a holder that fails is counted and left for the next
// pass; the others are purged.
func TestPass_Failure(t *testing.T) {
	s, g := holders(t)
	reg := prometheus.NewRegistry()
	p, err := horizon.New(horizon.Config{Retention: time.Hour, Now: clock}, nil,
		[]horizon.Holder{{Name: "store", TombstonePurger: failing{s}}, {Name: "engine", TombstonePurger: g}}, reg)
	if err != nil {
		t.Fatal(err)
	}
	n, err := p.Pass(context.Background())
	if n != 1 || err == nil || !strings.Contains(err.Error(), "store: the database is down") {
		t.Errorf("Pass = %d, %v; want 1 and the store's failure", n, err)
	}
	if got := metric(t, reg, "followgraph_tombstone_purge_failures_total", "store"); got != 1 {
		t.Errorf("failures of the store = %v, want 1", got)
	}
}

// TestRun: passes run while writes go on, and Run returns once its
// context ends (the race detector watches).
func TestRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	g := memgraph.New()
	p, err := horizon.New(horizon.Config{Retention: time.Millisecond, Interval: time.Millisecond, Step: 3}, nil,
		[]horizon.Holder{{Name: "engine", TombstonePurger: g}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); p.Run(ctx) }()
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 3000 {
				u, x := fg.UserID(100*(w+1)), fg.UserID(1+i%50)
				if _, err := g.Follow(ctx, u, x); err != nil {
					t.Error(err)
				}
				if _, err := g.Unfollow(ctx, u, x); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	time.Sleep(20 * time.Millisecond)
	cancel()
	<-done
	if h := storetest.Horizon(t, g); h == 0 {
		t.Error("Run raised no horizon")
	}
	if st := g.Stats(); st.Edges != 0 {
		t.Errorf("%d live edges left, want 0", st.Edges)
	}
}

func TestRefusals(t *testing.T) {
	var buf bytes.Buffer
	r := horizon.NewRefusals(slog.New(slog.NewJSONHandler(&buf, nil)))
	reg := prometheus.NewRegistry()
	r.Register(reg)
	r.Of("store")(fg.Refusal{Effect: fg.Effect{Kind: fg.KindFollow, User: 5, Target: 7, On: true}, Version: at(-time.Hour), Horizon: at(0)})
	if got := metric(t, reg, "followgraph_tombstone_refused_total", "store"); got != 1 {
		t.Errorf("refused total of the store = %v, want 1", got)
	}
	line := buf.String()
	for _, want := range []string{`"level":"ERROR"`, `"holder":"store"`, `"kind":"follow"`, `"user":5`, `"target":7`, `"change_time":"2026-03-01T11:00:00.000Z"`, `"horizon":"2026-03-01T12:00:00.000Z"`} {
		if !strings.Contains(line, want) {
			t.Errorf("log line %s lacks %s", line, want)
		}
	}
}

// metric returns the value of the series of name with holder label
// holder in reg.
func metric(t *testing.T, reg *prometheus.Registry, name, holder string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "holder" && l.GetValue() == holder {
					if m.Gauge != nil {
						return m.GetGauge().GetValue()
					}
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("no %s{holder=%q}", name, holder)
	return 0
}
