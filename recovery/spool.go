package recovery

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"time"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/eventlog"
)

// A spooled log tail: the events of the log in a temporary file, in the
// log's order, each as 42 bytes (user, target, version: big-endian
// uint64s; a mute's since and expiry: big-endian int64 Unix milliseconds,
// or spoolNoTime; op: one byte; a state event's state: one byte),
// removed when closed.
type spooled struct {
	f *os.File
	n int
}

const (
	spoolRecord = 42
	spoolBatch  = 4096 // events applied at once
	// spoolNoTime stands for a zero Since or Expires (every op's but a
	// mute's), which no event's time in milliseconds can be.
	spoolNoTime = math.MinInt64
)

// putTime writes t, as spooled, at b.
func putTime(b []byte, t time.Time) {
	ms := int64(spoolNoTime)
	if !t.IsZero() {
		ms = t.UnixMilli()
	}
	binary.BigEndian.PutUint64(b, uint64(ms))
}

// getTime reads the time putTime wrote at b.
func getTime(b []byte) time.Time {
	ms := int64(binary.BigEndian.Uint64(b))
	if ms == spoolNoTime {
		return time.Time{}
	}
	return fg.Millis(ms)
}

// spool writes every event the log holds to a temporary file.
func spool(ctx context.Context, log *eventlog.Log) (*spooled, error) {
	f, err := os.CreateTemp("", "followgraph-log-tail-*")
	if err != nil {
		return nil, fmt.Errorf("recovery: spooling the log's tail: %w", err)
	}
	os.Remove(f.Name()) // gone with the last descriptor, whatever happens
	s := &spooled{f: f}
	w := bufio.NewWriterSize(f, 1<<16)
	var rec [spoolRecord]byte
	err = log.Replay(ctx, func(m eventlog.Message) error {
		e := m.Event
		binary.BigEndian.PutUint64(rec[0:], uint64(e.User))
		binary.BigEndian.PutUint64(rec[8:], uint64(e.Target))
		binary.BigEndian.PutUint64(rec[16:], uint64(e.Version))
		putTime(rec[24:], e.Since)
		putTime(rec[32:], e.Expires)
		rec[40] = byte(e.Op)
		rec[41] = byte(e.State)
		s.n++
		_, err := w.Write(rec[:])
		return err
	})
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("recovery: read the log: %w", err)
	}
	return s, nil
}

// apply applies the spooled events with apply (an engine's Apply) in
// batches, in the log's order.
func (s *spooled) apply(ctx context.Context, apply func(context.Context, []fg.Event) error) error {
	if _, err := s.f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	r := bufio.NewReaderSize(s.f, 1<<16)
	batch := make([]fg.Event, 0, spoolBatch)
	var rec [spoolRecord]byte
	for read := 0; read < s.n; read++ {
		if _, err := io.ReadFull(r, rec[:]); err != nil {
			return fmt.Errorf("the spooled tail ends after %d of %d events: %w", read, s.n, err)
		}
		e := fg.NewEvent(fg.UserID(binary.BigEndian.Uint64(rec[0:])), fg.UserID(binary.BigEndian.Uint64(rec[8:])),
			fg.Op(rec[40]), fg.Version(binary.BigEndian.Uint64(rec[16:])))
		e.Since, e.Expires = getTime(rec[24:]), getTime(rec[32:])
		e.State = fg.State(rec[41])
		batch = append(batch, e)
		if len(batch) == spoolBatch || read == s.n-1 {
			if err := apply(ctx, batch); err != nil {
				return err
			}
			batch = batch[:0]
		}
	}
	return nil
}

func (s *spooled) close() error { return s.f.Close() }
