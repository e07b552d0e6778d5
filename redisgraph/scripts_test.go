package redisgraph

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/followgraph/followgraph/redisgraph/internal/layout"
)

// TestLayoutLua: lua/layout.lua is what package layout generates (run go
// generate in redisgraph after changing the layout), and no other script
// declares what it declares again.
func TestLayoutLua(t *testing.T) {
	if luaLayout != layout.Lua() {
		t.Fatal("lua/layout.lua is not current: run go generate ./redisgraph/")
	}
	names := regexp.MustCompile(`(?m)^local (NONE|NKEYS|USER_KEYS|SIDE_CODES|sides|flagOf|REFUSE_NOTHING|NEWER|DONE)\b`)
	files, err := filepath.Glob("lua/*.lua")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if filepath.Base(f) == "layout.lua" {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if m := names.Find(b); m != nil {
			t.Errorf("%s declares %q again: it is lua/layout.lua's", f, m)
		}
	}
}
