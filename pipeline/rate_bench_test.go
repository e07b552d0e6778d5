package pipeline_test

import (
	"context"
	"sync"
	"testing"
	"time"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/eventlog"
	"github.com/followgraph/followgraph/pipeline"
)

// timedStore records when each Apply committed and how many events it had.
type timedStore struct {
	pipeline.Store
	mu    sync.Mutex
	times []time.Time
	rows  []int
}

func (s *timedStore) Apply(ctx context.Context, events []fg.Event, lastSeq uint64) (int, error) {
	n, err := s.Store.Apply(ctx, events, lastSeq)
	if err == nil {
		s.mu.Lock()
		s.times = append(s.times, time.Now())
		s.rows = append(s.rows, len(events))
		s.mu.Unlock()
	}
	return n, err
}

// BenchmarkPersistRate: the seeds' setting, the database held at a steady
// 500 rows/s behind a burst. 20,000 events are in the log (embedded NATS)
// before the persister starts, as serve runs it with --persist-rate 500
// (batches of up to 1000, a bucket of one batch). Reported: the rate the
// store saw after the bucket's first fill (rows/s), and the events left in
// the log at the end (must be 0). Takes ~40 s.
func BenchmarkPersistRate(b *testing.B) {
	const burst, perSecond, batchMax = 20_000, 500, 1000
	for b.Loop() {
		ctx := context.Background()
		l, err := eventlog.Open(ctx, eventlog.Config{Dir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		for _, m := range batch(1, burst) {
			if err := l.Publish(ctx, m.Event); err != nil {
				b.Fatal(err)
			}
		}
		st := &timedStore{Store: openStore(b)}
		p := pipeline.New(st, nil, pipeline.WithRate(perSecond, max(batchMax, perSecond)))
		cctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			done <- l.Consume(cctx, "persister", batchMax, 50*time.Millisecond, func(ctx context.Context, ms []eventlog.Message, last uint64) error {
				msgs := make([]pipeline.Message, len(ms))
				for i, m := range ms {
					msgs[i] = pipeline.Message{Seq: m.Seq, Event: m.Event}
				}
				return p.Handle(ctx, msgs, last)
			})
		}()
		for {
			n, _, err := l.Pending(ctx, "persister")
			if err != nil {
				b.Fatal(err)
			}
			if n == 0 {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		cancel()
		<-done
		st.mu.Lock()
		total := 0
		for _, r := range st.rows {
			total += r
		}
		// The first batch is the bucket's initial fill; the rate is of
		// the rest over the time from its commit to the last.
		first := st.rows[0]
		span := st.times[len(st.times)-1].Sub(st.times[0]).Seconds()
		st.mu.Unlock()
		if total < burst {
			b.Fatalf("the store took %d events of %d", total, burst)
		}
		b.ReportMetric(float64(total-first)/span, "rows/s")
		b.ReportMetric(float64(total-burst), "redelivered")
		l.Close()
	}
}
