package redisgraph

import (
	"strconv"
	"testing"
	"time"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/redisgraph/internal/layout"
)

// slowlogBulk runs, for TestSlowlog, full calls of the bulk script (of
// Rebuild and Reconcile's repairs) on the following side of user 1, a
// sorted set of a million members, where each member it touches is a
// cache miss: one that finds every edge already there (Rebuild over a
// full Redis), one that adds as many new members at random places in
// time, and a repair that removes them again, leaving the set as it was.
// verbose logs how long each call took, round trip included.
func slowlogBulk(t *testing.T, g *Graph, base int64, verbose bool) {
	ctx := t.Context()
	const (
		a     = fg.UserID(1)
		first = 1000 // out(a) = [first, first+n)
		n     = 1_000_000
	)
	ms := func(id int) int64 { return base + int64(id/1000) }
	// The members of one chunk of out(a), as Rebuild and the repairs send
	// a side of several chunks (rebuildChunked).
	chunks := chunksFor(n, DefaultMaxKeyMembers)
	inChunk := func(id int) bool { return layout.ChunkOf(layout.MemberHash(uint64(id)), chunks) == 0 }
	var existing, added, removed []bulkEdge
	for i, newID := 0, 10_000_000; len(existing) < DefaultBulkChunk; i++ {
		id := first + (i*7919)%n
		if !inChunk(id) {
			continue
		}
		for !inChunk(newID) {
			newID++
		}
		existing = append(existing, bulkEdge{fg.UserID(id), fg.VersionAt(ms(id)), 'f'})
		added = append(added, bulkEdge{fg.UserID(newID), fg.VersionAt(ms(id)) + 1, 'f'})
		removed = append(removed, bulkEdge{fg.UserID(newID), 0, 'n'})
		newID++
	}
	for _, call := range []struct {
		name    string
		es      []bulkEdge
		horizon string
		written int64
	}{
		{"existing", existing, "", 0},
		{"added", added, "", DefaultBulkChunk},
		{"removed", removed, versionHex(fg.VersionAt(base + n)), DefaultBulkChunk},
	} {
		began := time.Now()
		res, err := g.run(scriptBulk).exec(ctx, g.c, g.sideKeys(a, SideFollowing), bulkArgs(SideFollowing, call.es, bulkCall{horizon: call.horizon, chunk: strconv.Itoa(chunks) + ":0"})).ToArray()
		if err != nil {
			t.Fatal(err)
		}
		if verbose {
			t.Logf("bulk script, %d edges %s: %v", len(call.es), call.name, time.Since(began))
		}
		if w, _ := res[0].AsInt64(); w != call.written {
			t.Errorf("bulk script, %s: wrote %d edges, want %d", call.name, w, call.written)
		}
	}
}
