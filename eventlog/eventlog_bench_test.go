package eventlog

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/internal/testenv"
)

// benchDir is where benchmarks put the store: FOLLOWGRAPH_BENCH_DIR, or a
// temporary directory. Sync figures mean something only on a real disk
// (not tmpfs).
func benchDir(b *testing.B) string {
	if d := os.Getenv("FOLLOWGRAPH_BENCH_DIR"); d != "" {
		dir, err := os.MkdirTemp(d, "eventlog-bench-")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(dir) })
		return dir
	}
	return b.TempDir()
}

func benchLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
}

// BenchmarkPublish measures acknowledged publishes per second on the
// embedded server with 1, 8 and 64 concurrent publishers, for each sync
// policy. Each publisher waits for its event's acknowledgement before the
// next, like a request handler calling the hook.
func BenchmarkPublish(b *testing.B) {
	for _, policy := range []SyncPolicy{SyncAlways, SyncInterval} {
		for _, publishers := range []int{1, 8, 64} {
			b.Run(fmt.Sprintf("sync=%s/publishers=%d", policy, publishers), func(b *testing.B) {
				l := openLog(b, Config{Dir: benchDir(b), Sync: policy, Logger: benchLogger()})
				benchPublish(b, l, publishers)
			})
		}
	}
}

func benchPublish(b *testing.B, l *Log, publishers int) {
	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	for g := range publishers {
		n := b.N / publishers
		if g < b.N%publishers {
			n++
		}
		wg.Go(func() {
			ctx := context.Background()
			for range n {
				if err := l.Publish(ctx, follow(fg.UserID(g+1), fg.UserID(g+2))); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkConsume measures how fast Consume drains a stored backlog in
// batches of 1000 to a handle that does nothing: the log's share of the
// persister's cost.
func BenchmarkConsume(b *testing.B) {
	l := openLog(b, Config{Dir: benchDir(b), Sync: SyncInterval, Logger: benchLogger()})
	var wg sync.WaitGroup
	for g := range 64 {
		wg.Go(func() {
			for i := g; i < b.N; i += 64 {
				if err := l.Publish(context.Background(), follow(fg.UserID(g+1), fg.UserID(g+2))); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.ResetTimer()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	seen := 0
	err := l.Consume(ctx, "bench", 1000, 100*time.Millisecond, func(_ context.Context, batch []Message, _ uint64) error {
		if seen += len(batch); seen >= b.N {
			cancel()
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkReplay measures how fast Replay reads a stored backlog of
// 20,000 events on the embedded server: each op replays all of it.
func BenchmarkReplay(b *testing.B) {
	const backlog = 20000
	l := openLog(b, Config{Dir: benchDir(b), Sync: SyncInterval, Logger: benchLogger()})
	var wg sync.WaitGroup
	for g := range 64 {
		wg.Go(func() {
			for i := g; i < backlog; i += 64 {
				if err := l.Publish(context.Background(), follow(fg.UserID(g+1), fg.UserID(i+100))); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	n := 0
	for b.Loop() {
		if err := l.Replay(context.Background(), func(Message) error { n++; return nil }); err != nil {
			b.Fatal(err)
		}
	}
	if n != backlog*b.N {
		b.Fatalf("replayed %d events in %d runs, want %d each", n, b.N, backlog)
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkPublishReplicas measures acknowledged publishes per second to
// a stream of one replica and one of three on the same three-node
// nats-server cluster of the benchmark's own (nats-server on the PATH),
// side by side, with 1, 8 and 64 concurrent publishers each waiting for
// its acknowledgement. The cluster's servers keep their default sync
// (fsync every two minutes).
func BenchmarkPublishReplicas(b *testing.B) {
	c := testenv.StartNATSCluster(b, 3)
	for _, replicas := range []int{1, 3} {
		stream := fmt.Sprintf("BENCH_R%d", replicas)
		l := openLog(b, Config{URL: c.URLs(), Stream: stream, Subject: fmt.Sprintf("bench.r%d.edges", replicas),
			Replicas: replicas, StartWait: time.Minute, Logger: benchLogger()})
		for _, publishers := range []int{1, 8, 64} {
			b.Run(fmt.Sprintf("replicas=%d/publishers=%d", replicas, publishers), func(b *testing.B) {
				benchPublish(b, l, publishers)
			})
		}
	}
}
