//go:build faultinject

package main

import (
	"os"
	"strconv"
	"sync/atomic"
	"syscall"
)

// Fault injection for the end-to-end fault tests, which build the binary
// with -tags faultinject; a release build has none of this.
//
// FOLLOWGRAPH_FAULT_KILL_BEFORE_TRIM=N: the process kills itself with
// SIGKILL at the relay's Nth batch, after the batch was published to the
// log and before it is trimmed from the outbox.
func init() {
	n, _ := strconv.Atoi(os.Getenv("FOLLOWGRAPH_FAULT_KILL_BEFORE_TRIM"))
	if n <= 0 {
		return
	}
	var batches atomic.Int64
	beforeTrim = func() {
		if batches.Add(1) == int64(n) {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
	}
}
