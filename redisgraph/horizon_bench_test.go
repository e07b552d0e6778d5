package redisgraph_test

import (
	"context"
	"testing"
	"time"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/graphgen"
)

// Memory of churn, and what the purge of tombstones gives back: the
// generated 200k-edge graph applied, then half its edges unfollowed and as
// many new edges followed (Churned: as many live edges, plus the
// tombstones), then every tombstone purged (Purged); Fresh is the same
// live edges applied to an empty graph. Each is the sum of MEMORY USAGE
// under the graph's prefix per live edge; purged/fresh is 1 when the
// purge gives back all that churn took.
// Rerun with: go test -run '^$' -bench Tombstones -benchtime 1x ./redisgraph/
func BenchmarkTombstones(b *testing.B) {
	c, ctx := benchRedis(b), context.Background()
	var follows, unfollows, newFollows []fg.Event
	for e := range graphgen.Edges(graphgen.Default(200_000, 1)) {
		follows = append(follows, benchFollowEvent(e.Follower, e.Followee, e.Millis))
	}
	later := time.Now().Add(-time.Minute).UnixMilli()
	for i, e := range follows {
		if i%2 == 0 {
			unfollows = append(unfollows, fg.NewEvent(e.User, e.Target, fg.OpUnfollow, fg.VersionAt(later)))
			newFollows = append(newFollows, benchFollowEvent(e.User, e.Target+1<<40, later))
		}
	}
	var live []fg.Event
	for i, e := range follows {
		if i%2 == 1 {
			live = append(live, e)
		}
	}
	live = append(live, newFollows...)
	edges := float64(len(follows))
	for b.Loop() {
		p := benchPrefix(b, c)
		g := benchGraph(b, c, p)
		measure := func(p, name string) float64 {
			used, err := benchMemory(ctx, c, p)
			if err != nil {
				b.Fatal(err)
			}
			total := logMemory(b, name+": ", used, edges)
			b.ReportMetric(float64(total)/edges, name+"-bytes/edge")
			return float64(total)
		}
		if err := benchApply(ctx, g, follows); err != nil {
			b.Fatal(err)
		}
		measure(p, "before")
		if err := benchApply(ctx, g, append(unfollows, newFollows...)); err != nil {
			b.Fatal(err)
		}
		churned := measure(p, "churned")
		start, removed, bound := time.Now(), 0, fg.VersionAt(time.Now().UnixMilli())
		for {
			n, more, err := g.PurgeTombstones(ctx, bound, 1000)
			if err != nil {
				b.Fatal(err)
			}
			if removed += n; !more {
				break
			}
		}
		b.ReportMetric(float64(removed), "removed")
		b.ReportMetric(float64(time.Since(start).Microseconds())/float64(max(removed, 1)), "µs/removed")
		purged := measure(p, "purged")
		fp := benchPrefix(b, c)
		if err := benchApply(ctx, benchGraph(b, c, fp), live); err != nil {
			b.Fatal(err)
		}
		fresh := measure(fp, "fresh")
		b.ReportMetric(churned/fresh, "churned/fresh")
		b.ReportMetric(purged/fresh, "purged/fresh")
	}
}
