package eventlog

import (
	"fmt"
	"strings"
	"testing"
	"time"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/internal/testenv"
)

func freeAddr(tb testing.TB) string { return testenv.FreeAddr(tb) }

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
