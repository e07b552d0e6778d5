package main

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestServe_NoDataFolder: a serve that keeps nothing in its data folder
// (Redis, an external NATS and PostgreSQL) neither makes the folder nor
// locks it, the default ./data of its working folder included; so two
// nodes of a deployment may be started from one folder.
func TestServe_NoDataFolder(t *testing.T) {
	d := newDeployment(t, "", "", "")
	work := t.TempDir()
	a := launch(t, "", launchOptions{dir: work, args: d.args()})
	b := launch(t, "", launchOptions{dir: work, args: d.args()})
	ctx := context.Background()
	if _, err := a.client.Follow(ctx, 1, 2); err != nil {
		t.Fatal(err)
	}
	if got, err := b.client.IsFollowing(ctx, 1, 2); err != nil || !got.Following {
		t.Fatalf("a follow made on one node, read on the other: %+v, %v", got, err)
	}
	data := filepath.Join(t.TempDir(), "data")
	c := start(t, data, d.args()...)
	for _, s := range []*server{a, b, c} {
		s.stop(t)
	}
	for _, dir := range []string{filepath.Join(work, "data"), data} {
		if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
			entries, _ := os.ReadDir(dir)
			t.Errorf("%s was made (%v, holding %v) although nothing is kept there", dir, err, entries)
		}
	}
}
