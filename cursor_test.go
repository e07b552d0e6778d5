package followgraph_test

import (
	"slices"
	"strings"
	"testing"

	fg "github.com/followgraph/followgraph"
)

func TestCursor(t *testing.T) {
	k := fg.Key{Millis: 1_764_000_000_123, ID: 42}
	c := fg.EncodeCursor("followers/1", k)
	got, ok, err := fg.DecodeCursor("followers/1", c)
	if err != nil || !ok || got != k {
		t.Fatalf("round trip: %v %v %v, want %v", got, ok, err, k)
	}
	if _, ok, err := fg.DecodeCursor("followers/1", ""); ok || err != nil {
		t.Fatalf("empty cursor: ok %v err %v, want the start of the list", ok, err)
	}
	flipped := []byte(c)
	flipped[5] ^= 1
	bad := []struct{ name, scope, cursor string }{
		{"OtherList", "followers/2", c},
		{"OtherKind", "following/1", c},
		{"Truncated", "followers/1", c[:len(c)-1]},
		{"Extended", "followers/1", c + "A"},
		{"Flipped", "followers/1", string(flipped)},
		{"Padded", "followers/1", c + "="},
		{"Garbage", "followers/1", "hello"},
		{"Offset", "followers/1", "20"},
		{"Long", "followers/1", strings.Repeat("A", 5000)},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			if _, _, err := fg.DecodeCursor(tt.scope, tt.cursor); fg.ErrorCode(err) != fg.EInvalidCursor {
				t.Fatalf("DecodeCursor(%q, %q): %v, want %s", tt.scope, tt.cursor, err, fg.EInvalidCursor)
			}
		})
	}
}

// FuzzDecodeCursor checks that the decoder never panics, accepts only
// cursors that encode back to the same string, and never yields an
// invalid key.
func FuzzDecodeCursor(f *testing.F) {
	f.Add("followers/1", fg.EncodeCursor("followers/1", fg.Key{Millis: 1, ID: 1}))
	f.Add("mutuals/7", fg.EncodeCursor("mutuals/7", fg.Key{Millis: 1_764_000_000_000, ID: fg.MaxUserID}))
	f.Add("followers/1", "")
	f.Add("followers/1", "AQAAAaItPr_OAAAAAAAAB8lBlUh3j64JDw")
	f.Add("x", "////")
	f.Fuzz(func(t *testing.T, scope, c string) {
		k, ok, err := fg.DecodeCursor(scope, c)
		switch {
		case err != nil:
			if fg.ErrorCode(err) != fg.EInvalidCursor || ok {
				t.Fatalf("DecodeCursor(%q, %q): ok %v, error %v", scope, c, ok, err)
			}
		case c == "":
			if ok {
				t.Fatal("the empty cursor decoded to a position")
			}
		default:
			if !ok || !k.ID.Valid() || k.Millis < 0 {
				t.Fatalf("DecodeCursor(%q, %q) = %v, %v", scope, c, k, ok)
			}
			if again := fg.EncodeCursor(scope, k); again != c {
				t.Fatalf("accepted %q, which encodes back as %q", c, again)
			}
		}
	})
}

func TestPageQuery(t *testing.T) {
	q, err := fg.PageRequest{Limit: 2}.Query(fg.ListFollowers, 7)
	if err != nil || q.Size != 2 || q.Scope != "followers/7" || q.After != nil {
		t.Fatalf("Query = %+v, %v", q, err)
	}
	keys := []fg.Key{{Millis: 5, ID: 1}, {Millis: 9, ID: 3}, {Millis: 9, ID: 4}, {Millis: 1, ID: 8}}
	p := q.PageOf(slices.Clone(keys))
	if len(p.Entries) != 2 || p.Entries[0].ID != 4 || p.Entries[1].ID != 3 || p.Next == "" {
		t.Fatalf("first page %+v", p)
	}
	q2, err := fg.PageRequest{Limit: 2, Cursor: p.Next}.Query(fg.ListFollowers, 7)
	if err != nil || q2.After == nil || *q2.After != (fg.Key{Millis: 9, ID: 3}) {
		t.Fatalf("Query after %q = %+v, %v", p.Next, q2, err)
	}
	p = q2.PageOf(slices.Clone(keys))
	if len(p.Entries) != 2 || p.Entries[0].ID != 1 || p.Entries[1].ID != 8 || p.Next != "" {
		t.Fatalf("last page %+v", p)
	}
	for _, tc := range []struct {
		req  fg.PageRequest
		ids  []fg.UserID
		code string
	}{
		{fg.PageRequest{}, []fg.UserID{0}, fg.EInvalidID},
		{fg.PageRequest{Limit: fg.MaxLimit + 1}, []fg.UserID{7}, fg.EInvalidArgument},
		{fg.PageRequest{Cursor: fg.EncodeCursor("following/7", fg.Key{Millis: 1, ID: 1})}, []fg.UserID{7}, fg.EInvalidCursor},
	} {
		if _, err := tc.req.Query(fg.ListFollowers, tc.ids...); fg.ErrorCode(err) != tc.code {
			t.Errorf("Query(%+v, %v): %v, want %s", tc.req, tc.ids, err, tc.code)
		}
	}
}

// TestKeyCompare: Compare is a valid comparator of the order of Before, so
// that PageOf's sort, and any search over keys sorted by it, can rely on
// it: equal keys compare 0, swapping the keys flips the sign, and it is
// negative exactly when Before holds.
func TestKeyCompare(t *testing.T) {
	keys := []fg.Key{
		{Millis: 9, ID: 4}, {Millis: 9, ID: 3}, {Millis: 5, ID: 8}, {Millis: 5, ID: 1}, {Millis: 0, ID: 1},
	}
	for _, a := range keys {
		if c := a.Compare(a); c != 0 {
			t.Errorf("%v.Compare(itself) = %d, want 0", a, c)
		}
		for _, b := range keys {
			ab, ba := a.Compare(b), b.Compare(a)
			if sign(ab) != -sign(ba) {
				t.Errorf("%v.Compare(%v) = %d but %v.Compare(%v) = %d: not opposite", a, b, ab, b, a, ba)
			}
			if (ab < 0) != a.Before(b) {
				t.Errorf("%v.Compare(%v) = %d, but Before = %v", a, b, ab, a.Before(b))
			}
		}
	}
	// keys is in newest-first order: a search by Compare finds each key.
	for i, k := range keys {
		if j, found := slices.BinarySearchFunc(keys, k, fg.Key.Compare); !found || j != i {
			t.Errorf("BinarySearchFunc(%v) = %d, %v; want %d, true", k, j, found, i)
		}
	}
}

func sign(c int) int { return min(max(c, -1), 1) }
