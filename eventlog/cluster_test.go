package eventlog

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/internal/testenv"
)

func freeAddr(tb testing.TB) string { return testenv.FreeAddr(tb) }

// streamLeader returns the server name of the stream's leader.
func streamLeader(tb testing.TB, l *Log) string {
	tb.Helper()
	var leader string
	waitFor(tb, 30*time.Second, "the stream to have a leader", func() bool {
		info, err := l.stream.Info(ctxTimeout(tb, 5*time.Second))
		if err == nil && info.Cluster != nil {
			leader = info.Cluster.Leader
		}
		return leader != ""
	})
	return leader
}

// TestCluster_StartOrder: the log's users start before the NATS cluster,
// whose nodes then start one by one, on a fresh deployment: each Open
// waits (logging each try) and succeeds once the cluster can hold a
// stream of three replicas; two of them race to create it.
func TestCluster_StartOrder(t *testing.T) {
	c := testenv.NewNATSCluster(t, 3)
	cfg := Config{URL: c.URLs(), Replicas: 3, StartWait: time.Minute, Logger: testLogger()}
	opened := make(chan *Log, 2)
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			l, err := Open(ctxTimeout(t, 2*time.Minute), cfg)
			if err != nil {
				errs <- err
				return
			}
			t.Cleanup(func() { l.Close() })
			opened <- l
		}()
	}
	for i, node := range c.Nodes {
		time.Sleep(time.Second)
		select {
		case l := <-opened:
			t.Fatalf("Open returned with %d of 3 nodes started (stream %+v)", i, l.stream.CachedInfo().Cluster)
		case err := <-errs:
			t.Fatal(err)
		default:
		}
		c.Start(node)
	}
	var logs []*Log
	for range 2 {
		select {
		case l := <-opened:
			logs = append(logs, l)
		case err := <-errs:
			t.Fatal(err)
		}
	}
	e := follow(1, 2)
	publish(t, logs[0], e)
	publish(t, logs[1], e)
	if got := replayAll(t, logs[1]); len(got) != 1 {
		t.Fatalf("the log holds %d events, want 1: %v", len(got), got)
	}
	if r := logs[0].stream.CachedInfo().Config.Replicas; r != 3 {
		t.Fatalf("the stream has %d replicas, want 3", r)
	}
}

// TestCluster_Unavailable: a log that never becomes available fails
// after StartWait with EUnavailable, having tried more than once; a
// configuration the server refuses fails at once.
func TestCluster_Unavailable(t *testing.T) {
	start := time.Now()
	_, err := Open(ctxTimeout(t, time.Minute), Config{URL: "nats://" + freeAddr(t), StartWait: 2 * time.Second, Logger: testLogger()})
	checkCode(t, err, fg.EUnavailable)
	if d := time.Since(start); d < 2*time.Second || d > 15*time.Second || !strings.Contains(err.Error(), "tries") {
		t.Fatalf("Open failed after %s with %v, want EUnavailable after tries for 2s", d, err)
	}
	t.Log(err)

	// Replicas the single server cannot hold: an answer, not a wait.
	url := externalNATS(t)
	start = time.Now()
	stream := fmt.Sprintf("FGTEST_R3_%d", time.Now().UnixNano())
	_, err = Open(ctxTimeout(t, time.Minute), Config{URL: url, Stream: stream, Replicas: 3, StartWait: time.Minute, Logger: testLogger()})
	if err == nil {
		deleteStream(t, url, stream)
		t.Fatal("Open of a stream of 3 replicas on a single server succeeded")
	}
	if fg.ErrorCode(err) == fg.EUnavailable || time.Since(start) > 10*time.Second {
		t.Fatalf("Open of 3 replicas on a single server: %v after %s, want a refusal at once", err, time.Since(start))
	}
	t.Log(err)
}

// TestCluster_LeaderKill: on a three-node cluster, an R3 stream takes
// publishes from 32 goroutines and a consumer reads it, while the
// stream's leader is killed with SIGKILL. Every acknowledged event must
// be stored exactly once (one sequence) and delivered to the consumer;
// the longest time with no acknowledged publish is reported.
func TestCluster_LeaderKill(t *testing.T) {
	c := testenv.StartNATSCluster(t, 3)
	l := openLog(t, Config{URL: c.URLs(), Replicas: 3, StartWait: time.Minute})

	var (
		mu        sync.Mutex
		delivered = map[string]map[uint64]bool{} // event id: its sequences
	)
	startConsumer(t, l, "persister", 100, 50*time.Millisecond, func(_ context.Context, b []Message) error {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range b {
			id := m.Event.ID()
			if delivered[id] == nil {
				delivered[id] = map[uint64]bool{}
			}
			delivered[id][m.Seq] = true
		}
		return nil
	})

	var (
		acked   []string
		ackedAt []time.Time
		failed  int
		stop    = make(chan struct{})
		wg      sync.WaitGroup
	)
	for g := range 32 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				e := follow(fg.UserID(g+1), fg.UserID(1000+i))
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				err := l.Publish(ctx, e)
				cancel()
				mu.Lock()
				if err == nil {
					acked = append(acked, e.ID())
					ackedAt = append(ackedAt, time.Now())
				} else {
					failed++
				}
				mu.Unlock()
				if err != nil {
					time.Sleep(50 * time.Millisecond)
				}
			}
		})
	}
	time.Sleep(2 * time.Second)
	leader := streamLeader(t, l)
	killed := time.Now()
	c.Kill(c.Node(leader))
	time.Sleep(8 * time.Second)
	close(stop)
	wg.Wait()
	if newLeader := streamLeader(t, l); newLeader == leader {
		t.Fatalf("the stream's leader is still %s", leader)
	}

	waitFor(t, time.Minute, "the consumer to deliver every acknowledged event", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, id := range acked {
			if len(delivered[id]) == 0 {
				return false
			}
		}
		return true
	})
	mu.Lock()
	defer mu.Unlock()
	for id, seqs := range delivered {
		if len(seqs) > 1 {
			t.Errorf("event %s is stored %d times, at sequences %v", id, len(seqs), seqs)
		}
	}
	slices.SortFunc(ackedAt, func(a, b time.Time) int { return a.Compare(b) })
	var gap time.Duration
	var gapAt time.Time
	for i := 1; i < len(ackedAt); i++ {
		if d := ackedAt[i].Sub(ackedAt[i-1]); d > gap {
			gap, gapAt = d, ackedAt[i-1]
		}
	}
	t.Logf("killed stream leader %s: %d publishes acknowledged, %d failed; the longest time with no acknowledged publish is %s, from %s after the kill",
		leader, len(acked), failed, gap.Round(time.Millisecond), gapAt.Sub(killed).Round(time.Millisecond))
	if gap > 15*time.Second {
		t.Errorf("no publish was acknowledged for %s", gap)
	}
}

// embeddedCluster returns the configurations of n embedded servers that
// make one cluster, each with a folder of its own.
func embeddedCluster(tb testing.TB, n int) []Config {
	tb.Helper()
	var addrs, routes []string
	for range n {
		addr := freeAddr(tb)
		addrs = append(addrs, addr)
		routes = append(routes, "nats-route://"+addr)
	}
	cfgs := make([]Config, n)
	for i := range cfgs {
		cfgs[i] = Config{Dir: tb.TempDir(), Replicas: 3, StartWait: time.Minute, Logger: testLogger(),
			Cluster: &Cluster{Listen: addrs[i], Routes: routes}}
	}
	return cfgs
}

// openAll opens the logs of cfgs at once, and closes them when the test
// ends.
func openAll(tb testing.TB, cfgs []Config) []*Log {
	tb.Helper()
	logs := make([]*Log, len(cfgs))
	errs := make([]error, len(cfgs))
	var wg sync.WaitGroup
	for i, cfg := range cfgs {
		wg.Go(func() { logs[i], errs[i] = Open(ctxTimeout(tb, 2*time.Minute), cfg) })
	}
	wg.Wait()
	for i, l := range logs {
		if l != nil {
			tb.Cleanup(func() { l.Close() })
		}
		if errs[i] != nil {
			tb.Fatalf("node %d: %v", i, errs[i])
		}
	}
	return logs
}

// TestEmbeddedCluster: three embedded servers started together form a
// cluster and an R3 stream, and take publishes through every node. The
// stream's leader stops; the other two go on, and it rejoins when it
// starts again.
func TestEmbeddedCluster(t *testing.T) {
	cfgs := embeddedCluster(t, 3)
	logs := openAll(t, cfgs)
	if r := logs[0].stream.CachedInfo().Config.Replicas; r != 3 {
		t.Fatalf("the stream has %d replicas, want 3", r)
	}
	c := startConsumer(t, logs[1], "persister", 100, 50*time.Millisecond, nil)
	var sent []fg.Event
	for i, l := range logs {
		e := follow(fg.UserID(i+1), 100)
		publish(t, l, e)
		sent = append(sent, e)
	}
	leader := streamLeader(t, logs[0])
	down := slices.IndexFunc(cfgs, func(c Config) bool { return c.Cluster.Listen == leader })
	if down < 0 {
		t.Fatalf("the stream's leader %q is none of the nodes", leader)
	}
	if down == 1 { // the consumer's node: keep it
		c.stop(t)
	}
	logs[down].Close()
	if down == 1 {
		c = startConsumer(t, logs[2], "persister", 100, 50*time.Millisecond, nil)
	}
	for i, l := range logs {
		if i == down {
			continue
		}
		e := follow(fg.UserID(i+1), 200)
		publish(t, l, e)
		sent = append(sent, e)
	}
	again := openLog(t, cfgs[down])
	e := follow(9, 300)
	publish(t, again, e)
	sent = append(sent, e)
	waitFor(t, 30*time.Second, "the consumer to deliver every event", func() bool { return len(c.handled()) >= len(sent) })
	if got := eventsOf(c.handled()); !sameEvents(got, sent) {
		t.Fatalf("delivered %v, want %v", got, sent)
	}
}

// sameEvents reports whether a and b hold the same events, in any order.
func sameEvents(a, b []fg.Event) bool {
	ids := func(es []fg.Event) []string {
		var out []string
		for _, e := range es {
			out = append(out, e.ID())
		}
		slices.Sort(out)
		return out
	}
	return slices.Equal(ids(a), ids(b))
}

// lockedBuffer is a bytes.Buffer that several goroutines may write.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestEmbeddedCluster_QuietStart: three embedded servers started a
// moment apart, as the nodes of a deployment are, form their cluster
// without an ERROR line (the first nodes' routes to the last fail until
// it listens, which is the start, not a fault) and without a WARN line
// of the servers'; and each line names its component once.
func TestEmbeddedCluster_QuietStart(t *testing.T) {
	cfgs := embeddedCluster(t, 3)
	logs := make([]*lockedBuffer, len(cfgs))
	for i := range cfgs {
		logs[i] = &lockedBuffer{}
		cfgs[i].Logger = slog.New(slog.NewJSONHandler(logs[i], &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	opened := make([]*Log, len(cfgs))
	errs := make([]error, len(cfgs))
	var wg sync.WaitGroup
	for i, cfg := range cfgs {
		wg.Go(func() {
			if i == 2 {
				time.Sleep(1500 * time.Millisecond) // after the others tried their routes to it
			}
			opened[i], errs[i] = Open(ctxTimeout(t, 2*time.Minute), cfg)
		})
	}
	wg.Wait()
	for i, l := range opened {
		if l != nil {
			t.Cleanup(func() { l.Close() })
		}
		if errs[i] != nil {
			t.Fatalf("node %d: %v", i, errs[i])
		}
	}
	for i, l := range opened {
		publish(t, l, follow(fg.UserID(i+1), 100))
	}
	for i, buf := range logs {
		for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
			var e struct{ Level, Component string }
			if err := json.Unmarshal([]byte(line), &e); err != nil {
				t.Fatalf("node %d logged a line that is not JSON: %q", i, line)
			}
			if n := strings.Count(line, `"component":`); n != 1 {
				t.Errorf("node %d: a line names its component %d times: %s", i, n, line)
			}
			if e.Level == "ERROR" || e.Level == "WARN" && e.Component == "nats-server" {
				t.Errorf("node %d, a normal start: %s", i, line)
			}
		}
	}
}
