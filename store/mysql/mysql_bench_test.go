package mysql_test

import (
	"strings"
	"testing"
	"time"

	"github.com/followgraph/followgraph/internal/testenv"
	"github.com/followgraph/followgraph/store/storetest"
)

// The benchmarks are storetest's, the same on every store (see
// store/storetest/bench.go), on a database of their own each, plus the
// 1M-edge graph on a buffer pool that holds it.

func open(tb testing.TB) storetest.Store { return newStore(tb) }

func imported(tb testing.TB) storetest.Store { return storetest.Imported(tb, open) }

// BenchmarkApply applies batches of 1000 live events, each batch one
// committed transaction (durable as the server's
// innodb_flush_log_at_trx_commit makes it): to an empty store, to the
// generated 1M-edge graph, the same batch again (a redelivery: no row
// changes), and to the generated graph on a buffer pool that holds it.
//
// On a server whose buffer pool is smaller than the 1M-edge table and its
// indexes (some 150 MiB; MariaDB's default pool is 128 MiB), Graph1M
// measures mostly the disk: each batch then waits for some 300 to 500
// page reads and causes some 1000 page writes (see upsert in write.go).
// Graph1MPoolFits runs with the pool at 1 GiB, as a server is sized for
// its data, and sets it back after.
func BenchmarkApply(b *testing.B) {
	storetest.BenchApply(b, open, imported)
	b.Run("Graph1MPoolFits", func(b *testing.B) {
		setBufferPool(b, 1<<30)
		storetest.RunApply(b, imported(b), storetest.LiveBatches(storetest.ApplyBatch, 1))
	})
}

// setBufferPool sets the test server's InnoDB buffer pool to size bytes
// (SET GLOBAL: the account needs the privilege), waits for the resize,
// and sets the pool back to its size when b ends.
func setBufferPool(b *testing.B, size int64) {
	b.Helper()
	db := rawDB(b, testenv.Server(b, testenv.MySQL, testenv.MySQLHint))
	var was int64
	if err := db.QueryRow("SELECT @@GLOBAL.innodb_buffer_pool_size").Scan(&was); err != nil {
		b.Fatal(err)
	}
	resize := func(tb testing.TB, size int64) {
		if _, err := db.Exec("SET GLOBAL innodb_buffer_pool_size = ?", size); err != nil {
			tb.Fatalf("set the buffer pool to %d bytes: %v", size, err)
		}
		// The resize runs in the background; the variable shows the new
		// size at once, the status says when it is done.
		deadline := time.Now().Add(time.Minute)
		for {
			var name, status string
			if err := db.QueryRow("SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_resize_status'").Scan(&name, &status); err != nil {
				tb.Fatal(err)
			}
			if status == "" || strings.HasPrefix(status, "Completed") {
				return
			}
			if time.Now().After(deadline) {
				tb.Fatalf("the buffer pool resize to %d bytes is still running: %s", size, status)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	b.Cleanup(func() { resize(b, was) })
	resize(b, size)
}

// BenchmarkSize reports the size of the generated 1M-edge graph in the
// store, as imported: the edges table with its indexes (MiB), and the
// list indexes alone (list-MiB), from InnoDB's statistics after ANALYZE
// TABLE.
func BenchmarkSize(b *testing.B) {
	url := newDatabase(b)
	s := openStore(b, url)
	if _, err := s.Import(b.Context(), storetest.Generated()); err != nil {
		b.Fatal(err)
	}
	db := rawDB(b, url)
	if _, err := db.Exec("ANALYZE TABLE edges"); err != nil {
		b.Fatal(err)
	}
	var data, index int64
	for b.Loop() {
		if err := db.QueryRow(`SELECT data_length, index_length FROM information_schema.tables
			WHERE table_schema = DATABASE() AND table_name = 'edges'`).Scan(&data, &index); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(data+index)/(1<<20), "MiB")
	b.ReportMetric(float64(index)/(1<<20), "list-MiB")
}

// BenchmarkBatchSize applies live batches of 1000, 2000 and 5000 events
// to the generated 1M-edge graph.
func BenchmarkBatchSize(b *testing.B) { storetest.BenchBatchSize(b, imported(b)) }

// BenchmarkEvents reads the generated 1M-edge graph back with Events.
func BenchmarkEvents(b *testing.B) { storetest.BenchEvents(b, imported(b)) }

// BenchmarkImport imports the generated 1M-edge graph into an empty store.
// Run it with -benchtime 1x: each op is a full import.
func BenchmarkImport(b *testing.B) { storetest.BenchImport(b, open) }
