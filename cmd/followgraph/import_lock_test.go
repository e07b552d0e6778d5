package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/store/sqlite"
	"github.com/followgraph/followgraph/store/storetest"
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

// TestImport_BeforeHorizon: into a store that has removed tombstones, an
// import whose first line of an edge the store keeps no record of is
// older than the store's tombstone horizon is refused whole, naming that
// line; lines of edges the store keeps (or newer ones) import.
func TestImport_BeforeHorizon(t *testing.T) {
	ctx := t.Context()
	data := t.TempDir()
	store, err := sqlite.Open(ctx, filepath.Join(data, "followgraph.db"))
	if err != nil {
		t.Fatal(err)
	}
	const old = 1_700_000_000_000 // ms
	v := fg.VersionAt(old)
	if _, err := store.Apply(ctx, []fg.Event{
		fg.NewEvent(5, 6, fg.OpFollow, v), fg.NewEvent(5, 6, fg.OpUnfollow, fg.VersionAt(old+30_000)), fg.NewEvent(5, 9, fg.OpFollow, v+2),
	}, 1); err != nil {
		t.Fatal(err)
	}
	storetest.Purge(t, store, fg.VersionAt(old+60_000), 10) // the horizon is just after the unfollow
	store.Close()

	file := filepath.Join(t.TempDir(), "edges.tsv")
	lines := fmt.Sprintf("# user follows user at ms\n1\t2\t%d\n5 9 %d\n5 6 %d\n7 8 %d\n", old+120_000, old, old, old)
	if err := os.WriteFile(file, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(binary, "import", file, "--data", data).CombinedOutput()
	for _, want := range []string{"line 4: import: ", "the follow of 5→6 at 2023-11-14T22:13:20.000Z is older than the tombstone horizon 2023-11-14T22:13:50.000Z",
		"nothing was imported", "into a new store"} {
		if err == nil || !strings.Contains(string(out), want) {
			t.Fatalf("import of a line older than the tombstone horizon: %v, want a refusal saying %q\n%s", err, want, out)
		}
	}
	if err := os.WriteFile(file, []byte(fmt.Sprintf("1\t2\t%d\n5 9 %d\n", old+120_000, old)), 0o644); err != nil {
		t.Fatal(err)
	}
	runBinary(t, "import", file, "--data", data)
	s := start(t, data)
	for x, want := range map[[2]fg.UserID]bool{{1, 2}: true, {5, 9}: true, {5, 6}: false, {7, 8}: false} {
		if e, err := s.client.IsFollowing(ctx, x[0], x[1]); err != nil || e.Following != want {
			t.Errorf("after the imports, IsFollowing(%d, %d) = %+v, %v; want %v", x[0], x[1], e, err, want)
		}
	}
	s.stop(t)
}
