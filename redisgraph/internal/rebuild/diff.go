package rebuild

import (
	"fmt"
	"strings"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/redisgraph/internal/layout"
)

// DiffKind is what differs between Redis and the expected graph.
type DiffKind uint8

const (
	// DiffMissing: the expected graph has the edge live, Redis does not.
	DiffMissing DiffKind = iota + 1
	// DiffExtra: Redis has the edge live, the expected graph does not.
	DiffExtra
	// DiffSince: both have the edge live, at different versions (follow
	// times, or only the counter part).
	DiffSince
	// DiffTombstone: neither has the edge live, but Redis lacks the
	// expected tombstone or holds an older one, so that an older change
	// replayed late could bring the edge back on that side. Not reported
	// where Redis holds an edge that keeps such a change from turning the
	// edge on, as lua/effects.lua applies changes: a block between the
	// two, either way, on or off, of a version at least the tombstone's
	// (a block's end of the follows and requests writes no tombstone where
	// the side had no record of them), or for a request the follow of its
	// direction.
	DiffTombstone
	// DiffCounter: a counter (nout, nin, nbo, nbi, nmo, nro, nri) is not
	// the size of the set it counts.
	DiffCounter
	// DiffClock: the user's clock is behind the expected version of one
	// of their edges, so a change could get a version below the edge's.
	DiffClock
	// DiffAhead: Redis holds the edge in a state newer than the expected
	// graph's and than the horizon: a change the expected graph has not
	// seen. Reported, never repaired, and not counted as a difference.
	DiffAhead
	// DiffFlags: the user's flags with another user (the flags set, rf)
	// are not those of the edges of the other kinds between them that
	// Redis holds once repaired.
	DiffFlags
)

var diffKinds = [...]string{DiffMissing: "missing", DiffExtra: "extra", DiffSince: "since",
	DiffTombstone: "tombstone", DiffCounter: "counter", DiffClock: "clock", DiffAhead: "ahead", DiffFlags: "flags"}

func (k DiffKind) String() string {
	if int(k) < len(diffKinds) && diffKinds[k] != "" {
		return diffKinds[k]
	}
	return fmt.Sprintf("diff(%d)", uint8(k))
}

// EdgeState is what one copy holds of an edge, or of a private setting:
// the version of its last change (0: no record of it at all) and whether
// it is live (on; private).
type EdgeState struct {
	Version fg.Version
	Live    bool
}

func (s EdgeState) String() string {
	switch {
	case s.Version == 0:
		return "none"
	case s.Live:
		return fmt.Sprintf("on since %s (version %016x)", s.Version.Time().Format(fg.TimeFormat), uint64(s.Version))
	}
	return fmt.Sprintf("off at %s (version %016x)", s.Version.Time().Format(fg.TimeFormat), uint64(s.Version))
}

// Diff is one difference between Redis and the expected graph, on one
// side of one user's keys.
type Diff struct {
	User  fg.UserID
	Side  layout.Side // the side of the edge or counter; layout.Following for DiffClock and DiffFlags
	Kind  DiffKind
	Other fg.UserID // the edge's other user; 0 for DiffCounter, DiffClock and layout.Private

	// The edge in the expected graph and in Redis (the edge kinds); for
	// DiffClock, the greatest expected version of the user's edges (on
	// their following side) and the clock.
	Expected, Found EdgeState
	// The counter the side should have once repaired, and the one Redis
	// holds (DiffCounter); the flags, bits of layout's Flag constants
	// (DiffFlags).
	ExpectedCount, FoundCount int64

	// Fixed is whether Reconcile repaired it: false without Fix, for
	// DiffAhead, or when Redis changed the edge again before the repair
	// (a newer change, which the repair left alone).
	Fixed bool
}

func (d Diff) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "user %d %s", d.User, d.Side)
	switch d.Kind {
	case DiffCounter:
		fmt.Fprintf(&b, ": counter: expected %d, found %d", d.ExpectedCount, d.FoundCount)
	case DiffFlags:
		fmt.Fprintf(&b, " %d: flags: expected %05b, found %05b", d.Other, d.ExpectedCount, d.FoundCount)
	case DiffClock:
		fmt.Fprintf(&b, ": clock: expected at least %016x, found %016x", uint64(d.Expected.Version), uint64(d.Found.Version))
	default:
		fmt.Fprintf(&b, " %d: %s: expected %s, found %s", d.Other, d.Kind, d.Expected, d.Found)
	}
	if d.Fixed {
		b.WriteString(" (fixed)")
	}
	return b.String()
}
