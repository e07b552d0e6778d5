package followgraph_test

import (
	"testing"
	"time"

	fg "github.com/followgraph/followgraph"
)

func TestVersion(t *testing.T) {
	ms := time.Date(2026, 11, 30, 15, 4, 5, 123e6, time.UTC).UnixMilli()
	v := fg.VersionAt(ms) + 7
	if v.Millis() != ms || !v.Time().Equal(time.UnixMilli(ms)) {
		t.Fatalf("version %d: millis %d, want %d", v, v.Millis(), ms)
	}
	if fg.VersionAt(ms+1) <= v {
		t.Fatal("a later millisecond must give a greater version")
	}
	if got := v.Time().Format(fg.TimeFormat); got != "2026-11-30T15:04:05.123Z" {
		t.Fatalf("formatted %q", got)
	}
}

func TestNextVersion(t *testing.T) {
	const ms = 1_764_000_000_000
	at := fg.VersionAt(ms)
	last := fg.VersionAt(ms+1) - 1 // the last counter of ms
	for _, tt := range []struct {
		name   string
		last   fg.Version
		now    int64
		region int
		want   fg.Version
	}{
		{"NoRegion/ClockBehind", at - 1, ms, 0, at},
		{"NoRegion/SameMillisecond", at + 7, ms, 0, at + 8},
		{"NoRegion/ClockAhead", at + 7, ms - 5, 0, at + 8},
		{"NoRegion/Carry", last, ms, 0, fg.VersionAt(ms + 1)},
		{"NoRegion/Zero", 0, 0, 0, 1},
		{"ClockBehind", at - 1, ms, 5, at + 5},
		{"OwnVersion", at + 5, ms, 5, at + 21},
		{"BelowOwnResidue", at + 4, ms, 5, at + 5},
		{"OtherRegion", at + 6, ms, 5, at + 21},
		{"ClockAhead", at + 6, ms - 5, 5, at + 21},
		{"LastOfMillisecond", last - 15, ms, 15, last},
		{"CarryKeepsRegion", last, ms, 5, fg.VersionAt(ms+1) + 5},
		{"CarryKeepsRegionOne", last - 14, ms, 1, fg.VersionAt(ms+1) + 1},
		{"Zero", 0, 0, 2, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := fg.NextVersion(tt.last, tt.now, tt.region)
			if got != tt.want {
				t.Fatalf("NextVersion(%d, %d, %d) = %d, want %d", tt.last, tt.now, tt.region, got, tt.want)
			}
			if got <= tt.last || got < fg.VersionAt(tt.now) || tt.region > 0 && got.Region() != tt.region {
				t.Fatalf("NextVersion(%d, %d, %d) = %d: not above the clock, before now, or of region %d",
					tt.last, tt.now, tt.region, got, got.Region())
			}
			// It is the smallest such version.
			for v := max(tt.last+1, fg.VersionAt(tt.now)); v < got; v++ {
				if tt.region == 0 || v.Region() == tt.region {
					t.Fatalf("NextVersion(%d, %d, %d) = %d, but %d is smaller and fits", tt.last, tt.now, tt.region, got, v)
				}
			}
		})
	}
}

func TestEvent_Validate(t *testing.T) {
	v := fg.VersionAt(1_764_000_000_000)
	good := fg.NewEvent(1, 2, fg.OpFollow, v)
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	if good.ID() != fg.NewEvent(1, 2, fg.OpUnfollow, v).ID() {
		// The id names the change of one edge at one version.
		t.Fatal("events of one edge and version must share an id")
	}
	bad := []struct {
		name string
		e    fg.Event
		code string
	}{
		{"ZeroUser", fg.NewEvent(0, 2, fg.OpFollow, v), fg.EInvalidID},
		{"SelfEdge", fg.NewEvent(2, 2, fg.OpFollow, v), fg.ESelfFollow},
		{"UnknownOp", fg.NewEvent(1, 2, 9, v), fg.EInvalidArgument},
		{"ZeroVersion", fg.Event{User: 1, Target: 2, Op: fg.OpFollow, Time: time.UnixMilli(0)}, fg.EInvalidArgument},
		{"TimeNotOfVersion", fg.Event{User: 1, Target: 2, Op: fg.OpFollow, Version: v, Time: v.Time().Add(time.Millisecond)}, fg.EInvalidArgument},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.e.Validate(); fg.ErrorCode(err) != tt.code {
				t.Fatalf("Validate: %v, want code %s", err, tt.code)
			}
		})
	}
}
