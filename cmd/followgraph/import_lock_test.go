package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	fg "github.com/followgraph/followgraph"
)

// TestImport_RefusedWhileServing: import into the data folder of a
// running serve is refused (the service would never see the edges, and
// both would write the store), and changes nothing; once serve has
// stopped it imports.
func TestImport_RefusedWhileServing(t *testing.T) {
	data := t.TempDir()
	file := filepath.Join(t.TempDir(), "edges.tsv")
	if err := os.WriteFile(file, []byte("1\t2\t1700000000000\n3\t4\t1700000000000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := start(t, data)
	out, err := exec.Command(binary, "import", file, "--data", data).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "in use") {
		t.Fatalf("import into a served data folder: %v\n%s", err, out)
	}
	s.stop(t)
	runBinary(t, "import", file, "--data", data)
	s = start(t, data)
	if e, err := s.client.IsFollowing(t.Context(), 1, 2); err != nil || !e.Following {
		t.Fatalf("after the import: %+v %v", e, err)
	}
	if cs, err := s.client.Counts(t.Context(), []fg.UserID{3}); err != nil || cs[0].FollowingCount != 1 {
		t.Fatalf("after the import: %+v %v", cs, err)
	}
}
