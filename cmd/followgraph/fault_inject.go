//go:build faultinject

package main

import (
	"context"
	"os"
	"strconv"
	"sync/atomic"
	"syscall"

	"github.com/followgraph/followgraph/pipeline"
)

// Fault injection for the end-to-end fault tests, which build the binary
// with -tags faultinject; a release build has none of this (see
// fault_none.go).
//
// FOLLOWGRAPH_FAULT_KILL_BEFORE_TRIM=N: the process kills itself with
// SIGKILL at the relay's Nth batch, after the batch was published to the
// log and before it is trimmed from the outbox.
func withFaults(o pipeline.Outbox) pipeline.Outbox {
	n, _ := strconv.Atoi(os.Getenv("FOLLOWGRAPH_FAULT_KILL_BEFORE_TRIM"))
	if n <= 0 {
		return o
	}
	return &killBeforeTrim{Outbox: o, at: int64(n)}
}

type killBeforeTrim struct {
	pipeline.Outbox
	at      int64
	batches atomic.Int64
}

func (k *killBeforeTrim) Trim(ctx context.Context, stream, through string) error {
	if k.batches.Add(1) == k.at {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
	}
	return k.Outbox.Trim(ctx, stream, through)
}
