package eventlog

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// A full disk, for the embedded server. JetStream's file store, once a
// write of it fails (no space left), fails every later write until it is
// reopened, even when space is back; and it does not answer the publishes
// it cannot store, which then wait for their deadline. So the log keeps a
// reserve of free space: below it, Publish and Writable refuse at once,
// before anything is sent, and the store is never driven to a failed
// write by our own events. Should a write of the store fail anyway
// (another program filled the disk), the log notices it from the server's
// log, refuses at once too, and once the reserve is free again reopens
// the server's JetStream, which reopens the store; it then removes what
// the work queue failed to drop meanwhile (see dropAcked).

// DefaultDiskReserve is Config.DiskReserve's default: 64 MiB, room for the
// durable store beside the log to go on applying the backlog.
const DefaultDiskReserve = 64 << 20

// diskCheckEvery is how often the free space is measured (statfs): at
// 80,000 events a second of ~200 bytes, 0.3 MB are written in between.
const diskCheckEvery = 20 * time.Millisecond

// repairEvery is how often a failed store is looked at for repair, and
// minRepairSpace the least free space it is reopened with (even with no
// reserve): reopened on a disk still full, it would fail again at once.
const (
	repairEvery    = 250 * time.Millisecond
	minRepairSpace = 1 << 20
)

// freeSpace returns the bytes free on the file system of the embedded
// store (for an unprivileged process), measured at most every
// diskCheckEvery.
func (l *Log) freeSpace() int64 {
	now := time.Now().UnixNano()
	if last := l.diskChecked.Load(); now-last < int64(diskCheckEvery) || !l.diskChecked.CompareAndSwap(last, now) {
		return l.diskFree.Load()
	}
	return l.measureSpace()
}

// measureSpace measures the free space now (Open does, before anything
// is published, so that freeSpace always has a figure).
func (l *Log) measureSpace() int64 {
	free, err := freeBytes(l.cfg.Dir)
	if err != nil {
		return l.diskFree.Load()
	}
	l.diskFree.Store(free)
	l.diskChecked.Store(time.Now().UnixNano())
	return free
}

// BelowReserve reports whether the free space of the embedded server's
// disk is below Config.DiskReserve now, measuring it, with the free space
// and the reserve: while it is, Publish and Writable refuse every write
// (and Ready fails), until space is back. It is always false with no
// reserve, and for an external server, whose disk is its own business.
func (l *Log) BelowReserve() (free, reserve int64, below bool) {
	if l.srv == nil || l.reserve <= 0 {
		return 0, 0, false
	}
	free = l.measureSpace()
	return free, l.reserve, free < l.reserve
}

// storeError returns why the embedded store cannot take events now, or
// nil: its disk below the reserve, or a write of it failed and not yet
// repaired. An external server's store is its own business.
func (l *Log) storeError() error {
	if l.srv == nil {
		return nil
	}
	if l.storeFailed.Load() {
		return fmt.Errorf("eventlog: %w: a write of the embedded store failed (its disk filled up?); it is reopened once %s are free on %s",
			errDiskFull, byteSize(l.reserve), l.cfg.Dir)
	}
	if l.reserve > 0 {
		if free := l.freeSpace(); free < l.reserve {
			return fmt.Errorf("eventlog: %w: %s free on %s, below the reserve of %s", errDiskFull, byteSize(free), l.cfg.Dir, byteSize(l.reserve))
		}
	}
	return nil
}

// watchStore repairs the embedded store after a failed write, once there
// is space again, until the log closes.
func (l *Log) watchStore() {
	defer close(l.watched)
	t := time.NewTicker(repairEvery)
	defer t.Stop()
	for {
		select {
		case <-l.closing:
			return
		case <-t.C:
		}
		if l.repairIfFailed() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			l.dropAcked(ctx)
			cancel()
		}
	}
}

// repairIfFailed reopens the store if a write of it failed or JetStream
// stopped, and there is space again; it reports whether it did. It holds
// l.repairing: whoever closes the store on purpose holds it too, so that
// the store is not reopened behind their back (and two reopenings close
// together race inside nats-server).
func (l *Log) repairIfFailed() bool {
	l.repairing.Lock()
	defer l.repairing.Unlock()
	failed := l.storeFailed.Load() || !l.srv.JetStreamEnabled()
	if !failed || l.freeSpace() < max(l.reserve, minRepairSpace) {
		return false
	}
	if err := l.repairStore(); err != nil {
		l.log.Error("reopening the embedded store failed; trying again", "err", err)
		return false
	}
	l.storeFailed.Store(false)
	l.log.Info("the embedded store takes events again: reopened after a failed write", "free", byteSize(l.freeSpace()))
	return true
}

// repairStore reopens the embedded server's JetStream with the
// configuration it started with, which reopens the store: its streams and
// consumers are loaded again from their files. (The server forgets that
// configuration once JetStream is shut down, or disabled itself.) The
// caller holds l.repairing.
func (l *Log) repairStore() error {
	if l.srv.JetStreamEnabled() {
		if err := l.srv.ShutdownJetStream(); err != nil {
			return err
		}
	}
	again := l.jsConfig
	return l.srv.EnableJetStream(&again)
}

// isWriteFailure reports whether a line of the embedded server's log says
// a write of its store failed.
func isWriteFailure(msg string) bool {
	return strings.Contains(msg, "critical write error") || strings.Contains(msg, "Critical write error") ||
		strings.Contains(msg, "no space left on device") || strings.Contains(msg, "out of resources, will be DISABLED")
}

// byteSize writes n bytes for a message.
func byteSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
