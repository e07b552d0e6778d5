package followgraph

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestRefusal(t *testing.T) {
	h := VersionAt(1_750_000_000_000)
	for _, c := range []struct {
		r    Refusal
		want string
	}{
		{Refusal{Effect{KindFollow, 5, 7, true}, VersionAt(1_700_000_000_000) + 3, h},
			"the follow of 5→7 at 2023-11-14T22:13:20.000Z is older than the tombstone horizon 2025-06-15T15:06:40.000Z"},
		{Refusal{Effect{KindBlock, 5, 7, false}, VersionAt(1_700_000_000_000), h}, "the unblock of 5→7 at"},
		{Refusal{Effect{KindPrivate, 5, 0, true}, VersionAt(1_700_000_000_000), h}, "the private of user 5 at"},
	} {
		err := fmt.Errorf("store: apply: %w", c.r)
		if ErrorCode(err) != EBeforeHorizon {
			t.Errorf("ErrorCode(%v) = %q, want %s", c.r, ErrorCode(err), EBeforeHorizon)
		}
		if msg := ErrorMessage(err); !strings.HasPrefix(msg, c.want) || !strings.Contains(msg, "not applied") {
			t.Errorf("message %q, want it to start %q and say it is not applied", msg, c.want)
		}
		var r Refusal
		if !errors.As(err, &r) || r != c.r {
			t.Errorf("errors.As gives %v, want %v", r, c.r)
		}
	}
}
