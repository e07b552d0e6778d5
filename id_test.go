package followgraph_test

import (
	"strconv"
	"strings"
	"testing"

	fg "github.com/followgraph/followgraph"
)

func TestParseUserID(t *testing.T) {
	tests := []struct {
		in   string
		want fg.UserID
		ok   bool
	}{
		{"1", 1, true},
		{"42", 42, true},
		{"9223372036854775807", fg.MaxUserID, true},
		{"9223372036854775808", 0, false}, // 2^63
		{"18446744073709551615", 0, false},
		{"99999999999999999999", 0, false},
		{"0", 0, false},
		{"00", 0, false},
		{"007", 0, false},
		{"-1", 0, false},
		{"+1", 0, false},
		{" 1", 0, false},
		{"1 ", 0, false},
		{"1e3", 0, false},
		{"0x10", 0, false},
		{"１", 0, false}, // a full-width digit
		{"", 0, false},
	}
	for _, tt := range tests {
		got, err := fg.ParseUserID(tt.in)
		if tt.ok != (err == nil) || got != tt.want {
			t.Errorf("ParseUserID(%q) = %d, %v; want %d, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
		if err != nil && fg.ErrorCode(err) != fg.EInvalidID {
			t.Errorf("ParseUserID(%q): code %q, want %q", tt.in, fg.ErrorCode(err), fg.EInvalidID)
		}
	}
}

// FuzzParseUserID checks that ParseUserID accepts exactly the canonical
// decimal forms of 1 to 2^63-1, and that they round-trip.
func FuzzParseUserID(f *testing.F) {
	for _, s := range []string{"1", "42", "9223372036854775807", "9223372036854775808", "0", "007", "-5", "+5", " 1", "1_000", "٣"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := fg.ParseUserID(s)
		n, perr := strconv.ParseInt(s, 10, 64)
		canonical := perr == nil && n > 0 && strconv.FormatInt(n, 10) == s
		if canonical != (err == nil) {
			t.Fatalf("ParseUserID(%q) error %v; canonical %v", s, err, canonical)
		}
		if err == nil && (int64(id) != n || id.String() != s) {
			t.Fatalf("ParseUserID(%q) = %d, does not round-trip", s, id)
		}
		if err != nil && fg.ErrorCode(err) != fg.EInvalidID {
			t.Fatalf("ParseUserID(%q): code %q", s, fg.ErrorCode(err))
		}
	})
}

func TestCheckIDList(t *testing.T) {
	for _, tc := range []struct {
		name string
		ids  []fg.UserID
		of   []fg.UserID
		code string
	}{
		{"Valid", []fg.UserID{1, 2}, []fg.UserID{3}, ""},
		{"TooManyFirst", []fg.UserID{0, 1, 2}, []fg.UserID{0}, fg.EInvalidArgument},
		{"OfBeforeIDs", []fg.UserID{0}, []fg.UserID{-1}, fg.EInvalidID},
		{"BadID", []fg.UserID{1, 0}, nil, fg.EInvalidID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := fg.CheckIDList(tc.ids, 2, tc.of...)
			if fg.ErrorCode(err) != tc.code && !(tc.code == "" && err == nil) {
				t.Fatalf("CheckIDList(%v, 2, %v) = %v, want code %q", tc.ids, tc.of, err, tc.code)
			}
			if tc.name == "OfBeforeIDs" && !strings.Contains(err.Error(), "-1") {
				t.Fatalf("error %v names another id than the one of of", err)
			}
		})
	}
}
