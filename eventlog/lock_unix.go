//go:build unix

package eventlog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockDir takes an exclusive advisory lock on dir, so that two processes
// never run embedded servers on the same store (the NATS file store does
// not guard against it and would be corrupted). The kernel releases the
// lock when the process dies, kill -9 included.
func lockDir(dir string) (unlock func() error, err error) {
	f, err := os.OpenFile(filepath.Join(dir, "followgraph.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s is in use by another process", dir)
		}
		return nil, err
	}
	return f.Close, nil
}
