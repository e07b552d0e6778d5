package redisgraph

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/followgraph/followgraph/redisgraph/internal/keyspace"
	"github.com/followgraph/followgraph/redisgraph/internal/scripts"
)

// TestFollowBenchScript: testdata/follow_bench.sh's "ours" mode loads
// the follow script as a Graph sends it (printed by the scripts' gen, for
// the default bound), and sends it as many keys and arguments as a live
// follow on a standalone Redis does.
func TestFollowBenchScript(t *testing.T) {
	sh, err := os.ReadFile("testdata/follow_bench.sh")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(sh), `go run ./redisgraph/internal/scripts/gen -print change)`) {
		t.Fatal("follow_bench.sh does not load the follow script as gen -print change prints it")
	}
	m := regexp.MustCompile(`(?m)^ours\)\n(?:.*\n)*?\tset -- (\d+) ((?:.*\\\n)*.*)\n`).FindSubmatch(sh)
	call := scripts.Change.Call((&Graph{ks: keyspace.New("p", false)}).changeKeys(1, 2), scripts.ChangeArgs{})
	switch {
	case m == nil:
		t.Fatal("follow_bench.sh's ours mode sets no key count")
	case string(m[1]) != strconv.Itoa(len(call.Keys)):
		t.Errorf("follow_bench.sh sends %s keys, a live follow %d", m[1], len(call.Keys))
	}
	words := strings.Fields(strings.ReplaceAll(string(m[2]), "\\\n", " "))
	if got, want := len(words)-len(call.Keys), len(call.Args); got != want {
		t.Errorf("follow_bench.sh sends %d arguments, a live follow %d: %q", got, want, words)
	}
}
