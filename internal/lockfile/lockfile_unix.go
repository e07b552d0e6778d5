//go:build unix

// Package lockfile keeps two processes from using one folder at once: an
// exclusive advisory lock (flock) on a file in it, which the kernel
// releases when the process dies, kill -9 included.
package lockfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Name is the lock file's name in the folder.
const Name = "followgraph.lock"

// Lock takes the lock of dir, and writes this process's id into the lock
// file, so that a process refused can name the one that holds it. It
// fails at once, saying so, when another process holds it.
func Lock(dir string) (unlock func() error, err error) {
	f, err := os.OpenFile(filepath.Join(dir, Name), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		defer f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			holder := "another process"
			if b, _ := os.ReadFile(f.Name()); len(b) > 0 {
				if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
					holder = fmt.Sprintf("another process (pid %d)", pid)
				}
			}
			return nil, fmt.Errorf("%s is in use by %s", dir, holder)
		}
		return nil, err
	}
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f.Close, nil
}
