package layout

import (
	"strings"
	"testing"

	fg "github.com/followgraph/followgraph"
)

// TestSides: every kind of edge the domain has (followgraph.Kinds) has a
// side out of its user, and one into the other user when it is kept on
// both; every side belongs to such a kind; codes, keys and counters are
// each one side's; a side's code is its kind's letter, then o or i; and
// the flags are distinct bits, on the other kinds only.
func TestSides(t *testing.T) {
	for _, k := range fg.Kinds {
		if _, ok := Letters[k.Kind]; !ok {
			t.Errorf("kind %s has no letter", k.Kind)
		}
		if !k.Edge {
			continue
		}
		if _, ok := SideOfKind(k.Kind, false); !ok {
			t.Errorf("kind %s has no side out of its user", k.Kind)
		}
		if _, ok := SideOfKind(k.Kind, true); ok != k.TwoSided {
			t.Errorf("kind %s: a side into the other user %v, want %v", k.Kind, ok, k.TwoSided)
		}
	}
	seen := map[string]bool{}
	flags := 0
	for _, s := range Sides {
		k := s.Kind.Info()
		if !k.Edge {
			t.Errorf("side %s: kind %s is not an edge", s.Code, s.Kind)
		}
		for _, name := range []string{"code " + s.Code, "set " + string(s.Set), "versions " + string(s.Versions), "counter " + s.Counter} {
			if seen[name] {
				t.Errorf("side %s: %s is another side's", s.Code, name)
			}
			seen[name] = true
		}
		dir := "o"
		if s.In {
			dir = "i"
		}
		if s.Code != Letters[s.Kind]+dir {
			t.Errorf("side %s: want code %s", s.Code, Letters[s.Kind]+dir)
		}
		if (s.Flag != 0) != k.Link || s.Flag&flags != 0 || s.Flag&(s.Flag-1) != 0 {
			t.Errorf("side %s: flag %d (link kind %v, bits taken %b)", s.Code, s.Flag, k.Link, flags)
		}
		flags |= s.Flag
	}
	keys := map[Key]bool{}
	for _, k := range UserKeys {
		if keys[k] {
			t.Errorf("key %s twice in UserKeys", k)
		}
		keys[k] = true
	}
	for _, s := range Sides {
		if !keys[s.Set] || !keys[s.Versions] {
			t.Errorf("side %s: its keys are not all in UserKeys", s.Code)
		}
	}
}

// TestLua: the generated tables hold every side; the scalars hold every
// status, each name once; and the fields of the counters hash, and those
// of an outbox event, are each one name's.
func TestLua(t *testing.T) {
	lua := Lua()
	for _, s := range Sides {
		if !strings.Contains(lua, "  "+s.Code+" = {") {
			t.Errorf("layout.lua lacks side %s", s.Code)
		}
	}
	names := map[string]string{}
	for _, s := range Scalars() {
		if v, ok := names[s.Name]; ok {
			t.Errorf("scalar %s is %s and %s", s.Name, v, s.Value)
		}
		names[s.Name] = s.Value
	}
	for _, s := range Statuses {
		if names[s.Name] == "" {
			t.Errorf("the scalars lack status %s", s.Name)
		}
	}
	for _, prefix := range []string{"H_", "E_"} {
		field := map[string]string{}
		for n, v := range names {
			if !strings.HasPrefix(n, prefix) {
				continue
			}
			if other, ok := field[v]; ok {
				t.Errorf("field %s is both %s and %s", v, n, other)
			}
			field[v] = n
		}
	}
}

// TestGroups: every key of a user but its counters is in exactly one
// group; each group has a field of its own; and ChunkOf places a member in
// one of n chunks, the chunk it had before a split (of chunk n-lo) or the
// new one n.
func TestGroups(t *testing.T) {
	in := map[Key]string{}
	fields := map[string]bool{}
	for _, g := range Groups {
		if fields[g.Field] {
			t.Errorf("group %s: field %s is another group's", g.Name, g.Field)
		}
		fields[g.Field] = true
		for _, k := range g.Keys {
			if other, ok := in[k]; ok {
				t.Errorf("key %s in groups %s and %s", k, other, g.Name)
			}
			in[k] = g.Name
		}
	}
	for _, k := range UserKeys {
		if _, ok := in[k]; ok == (k == Counters) {
			t.Errorf("key %s: in a group %v", k, ok)
		}
	}
	for h := range uint32(5000) {
		for n := 1; n < 70; n++ {
			c, next := ChunkOf(h*2654435761, n), ChunkOf(h*2654435761, n+1)
			lo := 1
			for lo*2 <= n {
				lo *= 2
			}
			if c < 0 || c >= n || next != c && !(c == n-lo && next == n) {
				t.Fatalf("hash %d: chunk %d of %d, then %d of %d", h*2654435761, c, n, next, n+1)
			}
		}
	}
}
