package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/store/internal/row"
	"github.com/followgraph/followgraph/store/postgres"
	"github.com/followgraph/followgraph/store/storetest"
)

// The benchmarks are storetest's, the same on every store (see
// store/storetest/bench.go), on a database of their own each, plus what
// only this store has: Apply without the list indexes and beside a plain
// upsert, and the reads of the lists.

func open(tb testing.TB) storetest.Store { return newStore(tb) }

func imported(tb testing.TB) storetest.Store {
	s, _ := importedStore(tb)
	return s
}

// importedStore returns a store on a new database holding the generated
// graph, vacuumed and analyzed as autovacuum would leave it, and the
// database's URL.
func importedStore(tb testing.TB) (*postgres.Store, string) {
	tb.Helper()
	url := newDatabase(tb)
	s := openStore(tb, url)
	if _, err := s.Import(context.Background(), storetest.Generated()); err != nil {
		tb.Fatal(err)
	}
	query(tb, url, `VACUUM ANALYZE edges`)
	return s, url
}

// BenchmarkApply applies batches of 1000 live events, each batch
// committed (synchronous_commit as the server has it, on by default): to
// an empty store, to the generated 1M-edge graph, and the same batch again
// (a redelivery: no row changes); and, to compare with Graph1M, the same
// without the two list indexes, and the persister's reference, a plain
// multi-row upsert (benchPlainUpsert).
func BenchmarkApply(b *testing.B) {
	storetest.BenchApply(b, open, imported)
	// What the two list indexes cost Apply: the same without them.
	b.Run("Graph1MNoListIndexes", func(b *testing.B) {
		s, url := importedStore(b)
		query(b, url, `DROP INDEX edges_following, edges_followers`)
		storetest.RunApply(b, s, storetest.LiveBatches(storetest.ApplyBatch, 1))
	})
	b.Run("Graph1MPlainUpsert", benchPlainUpsert)
}

// benchPlainUpsert is the reference the persister is measured against, a
// plain multi-row upsert, run on this machine beside Apply. The same 1M edges
// and the same live batches, deduplicated and sorted as Apply does, go
// into a table of follower, followee and time with only its primary key,
// as one INSERT … VALUES … ON CONFLICT DO UPDATE per batch, with no
// version condition, on one connection, each batch its own transaction.
// rows/s counts events, as RunApply does.
func benchPlainUpsert(b *testing.B) {
	_, url := importedStore(b)
	query(b, url, `CREATE TABLE plain (follower bigint, followee bigint, since_ms bigint, PRIMARY KEY (follower, followee))`)
	query(b, url, `INSERT INTO plain SELECT follower, followee, since_ms FROM edges ORDER BY follower, followee`)
	query(b, url, `DROP TABLE edges`)
	query(b, url, `VACUUM ANALYZE plain`)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	next := storetest.LiveBatches(storetest.ApplyBatch, 1)
	// The statement for n rows, written once per n (as pgx prepares it
	// once), so that the reference's time is the server's.
	statements := map[int]string{}
	statement := func(n int) string {
		if sql, ok := statements[n]; ok {
			return sql
		}
		var sql strings.Builder
		sql.WriteString(`INSERT INTO plain (follower, followee, since_ms) VALUES `)
		for i := range n {
			if i > 0 {
				sql.WriteString(", ")
			}
			fmt.Fprintf(&sql, "($%d, $%d, $%d)", 3*i+1, 3*i+2, 3*i+3)
		}
		sql.WriteString(` ON CONFLICT (follower, followee) DO UPDATE SET since_ms = excluded.since_ms`)
		statements[n] = sql.String()
		return statements[n]
	}
	var args []any
	n := 0
	for b.Loop() {
		events := next()
		rows, err := row.Batch(events, 1)
		edges := rows.Edges
		if err != nil {
			b.Fatal(err)
		}
		args = args[:0]
		for _, e := range edges {
			args = append(args, e.Follower, e.Followee, e.SinceMs)
		}
		if _, err := conn.Exec(ctx, statement(len(edges)), args...); err != nil {
			b.Fatal(err)
		}
		n += len(events)
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkSize reports the size of the generated 1M-edge graph in the
// store, as imported and vacuumed: the edges table with its indexes
// (MiB), and the list indexes alone (list-MiB).
func BenchmarkSize(b *testing.B) {
	_, url := importedStore(b)
	var total, lists int64
	for b.Loop() {
		r := query(b, url, `SELECT pg_total_relation_size('edges'),
			pg_relation_size('edges_following') + pg_relation_size('edges_followers')`)
		total, lists = r[0][0].(int64), r[0][1].(int64)
	}
	b.ReportMetric(float64(total)/(1<<20), "MiB")
	b.ReportMetric(float64(lists)/(1<<20), "list-MiB")
}

// BenchmarkBatchSize applies live batches of 1000, 2000 and 5000 events
// to the generated 1M-edge graph.
func BenchmarkBatchSize(b *testing.B) { storetest.BenchBatchSize(b, imported(b)) }

// BenchmarkEvents reads the generated 1M-edge graph back with Events.
func BenchmarkEvents(b *testing.B) { storetest.BenchEvents(b, imported(b)) }

// BenchmarkImport imports the generated 1M-edge graph into an empty store.
// Run it with -benchtime 1x: each op is a full import.
func BenchmarkImport(b *testing.B) { storetest.BenchImport(b, open) }

// BenchmarkFollowers reads the first page of 100 followers of the most
// followed user of the generated graph, and its counts.
func BenchmarkFollowers(b *testing.B) {
	s, url := importedStore(b)
	ctx := context.Background()
	top := fg.UserID(query(b, url, `SELECT followee FROM edges WHERE following
		GROUP BY followee ORDER BY count(*) DESC LIMIT 1`)[0][0].(int64))
	b.Run("Page", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.Followers(ctx, top, nil, 100); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Counts", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := s.Counts(ctx, top); err != nil {
				b.Fatal(err)
			}
		}
	})
}
