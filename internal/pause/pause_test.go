package pause

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestFor(t *testing.T) {
	if err := For(context.Background(), time.Millisecond); err != nil {
		t.Fatalf("a pause that ran its course: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(10 * time.Millisecond); cancel() }()
	if err := For(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("a pause of an hour whose context ended: %v, want context.Canceled", err)
	}
}
