// Package pause waits for a while or until a context ends, whichever
// comes first: the sleep of every loop that paces itself.
package pause

import (
	"context"
	"time"
)

// For waits d, and returns ctx's error when ctx ends first (nil else).
func For(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
