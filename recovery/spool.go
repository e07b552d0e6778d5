package recovery

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/eventlog"
	"github.com/followgraph/followgraph/memgraph"
)

// A spooled log tail: the events of the log in a temporary file, in the
// log's order, each as 25 bytes (user, target, version: big-endian
// uint64s; op: one byte), removed when closed.
type spooled struct {
	f *os.File
	n int
}

const (
	spoolRecord = 25
	spoolBatch  = 4096 // events applied at once
)

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
		rec[24] = byte(e.Op)
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

// apply applies the spooled events to g in batches, in the log's order.
func (s *spooled) apply(ctx context.Context, g *memgraph.Graph) error {
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
		batch = append(batch, fg.NewEvent(fg.UserID(binary.BigEndian.Uint64(rec[0:])), fg.UserID(binary.BigEndian.Uint64(rec[8:])),
			fg.Op(rec[24]), fg.Version(binary.BigEndian.Uint64(rec[16:]))))
		if len(batch) == spoolBatch || read == s.n-1 {
			if err := g.Apply(ctx, batch); err != nil {
				return err
			}
			batch = batch[:0]
		}
	}
	return nil
}

func (s *spooled) close() error { return s.f.Close() }
