package rebuild

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"slices"
	"strconv"
	"testing"
	"time"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/redisgraph/internal/effects"
	"github.com/followgraph/followgraph/redisgraph/internal/guard"
	"github.com/followgraph/followgraph/redisgraph/internal/keyspace"
	"github.com/followgraph/followgraph/redisgraph/internal/layout"
	"github.com/followgraph/followgraph/redisgraph/internal/lists"
	"github.com/followgraph/followgraph/redisgraph/internal/redistest"
	"github.com/followgraph/followgraph/redisgraph/internal/scripts"
	"github.com/followgraph/followgraph/redisgraph/internal/stamps"
	"github.com/followgraph/followgraph/redisgraph/internal/wire"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/rueidis"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// TestSlowlogBulk runs full calls of the bulk script (of Rebuild and
// Reconcile's repairs) on the following side of a user of a million
// follows, in the chunks a rebuild makes of it, with ties of a thousand
// members a millisecond, and checks that Redis logged none of its
// commands as slower than a millisecond (slowlog-log-slower-than 1000,
// restored after). As TestSlowlog in redisgraph, it runs the calls up to
// three times, and fails only when one command is logged in every run.
func TestSlowlogBulk(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a set of a million members")
	}
	c := redistest.Standalone(t)
	g := testGraph(t, c)
	ctx := t.Context()
	const (
		a     = fg.UserID(1)
		first = 1000 // out(a) = [first, first+n)
		n     = 1_000_000
	)
	base := time.Now().Add(-time.Hour).UnixMilli()
	ms := func(id int) int64 { return base + int64(id/1000) }
	chunks := chunksFor(n, layout.DefaultMaxKeyMembers)
	byChunk := make([][]int, chunks)
	for id := first; id < first+n; id++ {
		j := layout.ChunkOf(layout.MemberHash(uint64(id)), chunks)
		byChunk[j] = append(byChunk[j], id)
	}
	var cmds rueidis.Commands
	for j, ids := range byChunk {
		z := c.B().Zadd().Key(g.ks.Chunk(a, layout.Out, j)).ScoreMember()
		for _, id := range ids {
			z = z.ScoreMember(float64(ms(id)), wire.Member(fg.UserID(id)))
		}
		cmds = append(cmds, z.Build())
	}
	out, _ := layout.GroupOf(layout.Out)
	cmds = append(cmds, c.B().Hset().Key(g.ks.User(a, layout.Counters)).FieldValue().
		FieldValue(layout.Following.Counter, strconv.Itoa(n)).FieldValue(layout.FieldStamp, "1").
		FieldValue(out.Field, strconv.Itoa(chunks)).FieldValue(layout.GenField, "1").Build())
	t.Cleanup(func() {
		keys := []string{g.ks.User(a, layout.Counters)}
		for j := range chunks {
			keys = append(keys, g.ks.Chunk(a, layout.Out, j), g.ks.Chunk(a, layout.OutVersions, j))
		}
		c.Do(context.Background(), c.B().Unlink().Key(keys...).Build())
	})
	for batch := range slices.Chunk(cmds, 64) {
		for _, r := range c.DoMulti(ctx, batch...) {
			if err := r.Error(); err != nil {
				t.Fatal(err)
			}
		}
	}
	redistest.NotSlowInEveryRun(t, c, g.ks.Prefix(), 3, func(run int) { slowlogBulk(t, g, base, run == 1) })
}

// testGraph returns the graph under a prefix of the test's own on c.
func testGraph(tb testing.TB, c rueidis.Client) *Graph {
	tb.Helper()
	var b [6]byte
	rand.Read(b[:])
	ks := keyspace.New("fgtest-"+hex.EncodeToString(b[:]), c.Mode() == rueidis.ClientModeCluster)
	lua := scripts.NewRunner(c, "fgtest", layout.DefaultMaxKeyMembers, nil)
	gd := guard.New(c, ks, lua, guard.Hooks{})
	var st stamps.Stamps
	fx := effects.New(ks, lua, &st, prometheus.NewCounter(prometheus.CounterOpts{Name: "x"}), nil, nil, nil)
	return New(c, ks, lua, lists.New(c, ks, gd, lua), fx, layout.DefaultMaxKeyMembers)
}

// slowlogBulk runs full calls of the bulk script on the following side
// of user 1, a sorted set of a million members, where each member it
// touches is a cache miss: one that finds every edge already there
// (Rebuild over a full Redis), one that adds as many new members at
// random places in time, and a repair that removes them again, leaving
// the set as it was. verbose logs how long each call took, round trip
// included.
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
	chunks := chunksFor(n, layout.DefaultMaxKeyMembers)
	inChunk := func(id int) bool { return layout.ChunkOf(layout.MemberHash(uint64(id)), chunks) == 0 }
	var existing, added, removed []bulkEdge
	for i, newID := 0, 10_000_000; len(existing) < DefaultBulkBatch; i++ {
		id := first + (i*7919)%n
		if !inChunk(id) {
			continue
		}
		for !inChunk(newID) {
			newID++
		}
		existing = append(existing, bulkEdge{fg.UserID(id), fg.VersionAt(ms(id)), bulkLive})
		added = append(added, bulkEdge{fg.UserID(newID), fg.VersionAt(ms(id)) + 1, bulkLive})
		removed = append(removed, bulkEdge{fg.UserID(newID), 0, bulkNone})
		newID++
	}
	for _, call := range []struct {
		name    string
		es      []bulkEdge
		horizon string
		written int64
	}{
		{"existing", existing, "", 0},
		{"added", added, "", DefaultBulkBatch},
		{"removed", removed, wire.VersionHex(fg.VersionAt(base + n)), DefaultBulkBatch},
	} {
		began := time.Now()
		res, err := g.lua.Exec(ctx, scripts.Bulk.Call(g.sideKeys(a, layout.Following), bulkArgs(layout.Following, call.es, bulkCall{horizon: call.horizon, chunk: strconv.Itoa(chunks) + ":0"}))).ToArray()
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
