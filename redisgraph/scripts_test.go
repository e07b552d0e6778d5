package redisgraph

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/followgraph/followgraph/redisgraph/internal/layout"
)

// TestLayoutLua: lua/status.lua and lua/layout.lua are what package
// layout generates (run go generate in redisgraph after changing the
// layout), and no other script declares what they declare again.
func TestLayoutLua(t *testing.T) {
	if luaStatus != layout.LuaStatuses() || luaLayout != layout.Lua() {
		t.Fatal("lua/status.lua or lua/layout.lua is not current: run go generate ./redisgraph/")
	}
	names := regexp.MustCompile(`(?m)^local (NONE|NKEYS|USER_KEYS|SIDE_CODES|sides|flagOf|REFUSE_NOTHING|NEWER|DONE)\b`)
	files, err := filepath.Glob("lua/*.lua")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if base := filepath.Base(f); base == "layout.lua" || base == "status.lua" {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if m := names.Find(b); m != nil {
			t.Errorf("%s declares %q again: it is generated (lua/status.lua, lua/layout.lua)", f, m)
		}
	}
}

// TestFollowBenchScript: testdata/follow_bench.sh's "ours" mode loads
// the follow script as scripts.go joins it, and sends it as many keys as
// a live follow on a standalone Redis does.
func TestFollowBenchScript(t *testing.T) {
	sh, err := os.ReadFile("testdata/follow_bench.sh")
	if err != nil {
		t.Fatal(err)
	}
	files := regexp.MustCompile(`cd "\$dir/../lua" && cat ([a-z. ]+)\)`).FindSubmatch(sh)
	if files == nil {
		t.Fatal("follow_bench.sh does not load the follow script from lua/ with cat")
	}
	var src []byte
	for _, f := range strings.Fields(string(files[1])) {
		b, err := os.ReadFile(filepath.Join("lua", f))
		if err != nil {
			t.Fatal(err)
		}
		src = append(src, b...)
	}
	if string(src) != scriptChange.src {
		t.Errorf("follow_bench.sh joins %s, which is not scriptChange's source", files[1])
	}
	if header := strings.TrimSuffix(maxKeyHeader(DefaultMaxKeyMembers), "\n"); !strings.Contains(string(sh), "echo '"+header+"'") {
		t.Errorf("follow_bench.sh does not head the script with %q", header)
	}
	keys := regexp.MustCompile(`(?m)^ours\)\n(?:.*\n)*?\tset -- (\d+) `).FindSubmatch(sh)
	want := len((&Graph{prefix: "p"}).changeKeys(1, 2))
	switch {
	case keys == nil:
		t.Error("follow_bench.sh's ours mode sets no key count")
	case string(keys[1]) != strconv.Itoa(want):
		t.Errorf("follow_bench.sh sends %s keys, a live follow %d", keys[1], want)
	}
}
