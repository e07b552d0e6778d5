package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	fg "github.com/followgraph/followgraph"
)

// TestGenImportServe: a generated graph, imported into a data folder, is
// what the service then serves: counts of every user and the lists of a
// few, against the file itself.
func TestGenImportServe(t *testing.T) {
	dir := t.TempDir()
	file, data := filepath.Join(dir, "g.tsv"), filepath.Join(dir, "data")
	run := func(args ...string) string { return runBinary(t, args...) }
	run("gen", "--edges", "20000", "--seed", "3", "-o", file)
	if out := run("import", file, "--data", data); !strings.Contains(out, "imported") {
		t.Fatalf("import said %q", out)
	}

	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	following, followers := map[fg.UserID]int64{}, map[fg.UserID]int64{}
	since := map[[2]fg.UserID]int64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.Split(sc.Text(), "\t")
		u, _ := strconv.ParseInt(parts[0], 10, 64)
		v, _ := strconv.ParseInt(parts[1], 10, 64)
		ms, _ := strconv.ParseInt(parts[2], 10, 64)
		following[fg.UserID(u)]++
		followers[fg.UserID(v)]++
		since[[2]fg.UserID{fg.UserID(u), fg.UserID(v)}] = ms
	}
	if len(since) < 19000 {
		t.Fatalf("gen wrote %d edges, want about 20000", len(since))
	}

	s := start(t, data)
	ctx := context.Background()
	var ids []fg.UserID
	for u := range fg.UserID(400) {
		ids = append(ids, u+1)
	}
	counts, err := s.client.Counts(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range counts {
		if c.FollowingCount != following[c.ID] || c.FollowerCount != followers[c.ID] {
			t.Fatalf("user %d: served %d/%d, the file has %d/%d", c.ID, c.FollowingCount, c.FollowerCount, following[c.ID], followers[c.ID])
		}
	}
	for _, u := range ids[:20] {
		p, err := s.client.Following(ctx, u, fg.PageRequest{Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range p.Entries {
			if ms, ok := since[[2]fg.UserID{u, e.ID}]; !ok || ms != e.Since.UnixMilli() {
				t.Fatalf("%d→%d since %v is not in the file (ok %v, ms %d)", u, e.ID, e.Since, ok, ms)
			}
		}
	}
	s.stop(t)
}

// TestImportRedis: `import --redis` writes the imported graph into Redis
// too, and reconcile finds Redis equal to the store.
func TestImportRedis(t *testing.T) {
	url, prefix := testRedis(t)
	dir := t.TempDir()
	file, data := filepath.Join(dir, "g.tsv"), filepath.Join(dir, "data")
	run := func(args ...string) string { return runBinary(t, args...) }
	run("gen", "--edges", "20000", "--users", "2000", "--seed", "4", "-o", file)
	out := run("import", file, "--data", data, "--redis", url, "--redis-prefix", prefix)
	if !strings.Contains(out, "rebuilt: 2000 users") {
		t.Fatalf("import --redis said %q", out)
	}
	if out := run("reconcile", "--data", data, "--redis", url, "--redis-prefix", prefix); !strings.Contains(out, "differences: 0 ") {
		t.Fatalf("reconcile after import --redis said %q", out)
	}
}

// runBinary runs the followgraph binary with args and returns its output,
// failing t if it fails.
func runBinary(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(binary, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("followgraph %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}
