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
