package eventlog

import (
	"context"
	"fmt"
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
