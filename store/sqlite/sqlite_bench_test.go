package sqlite_test

import (
	"testing"

	"github.com/followgraph/followgraph/store/storetest"
)

// The benchmarks are storetest's, the same on every store (see
// store/storetest/bench.go), on a file in the benchmark's temporary
// directory.

func open(tb testing.TB) storetest.Store { return newStore(tb) }

func imported(tb testing.TB) storetest.Store { return storetest.Imported(tb, open) }

// BenchmarkApply applies batches of 1000 live events, each batch one
// committed (fsynced) transaction: to an empty store, to the generated
// 1M-edge graph, and the same batch again (a redelivery: no row changes).
func BenchmarkApply(b *testing.B) { storetest.BenchApply(b, open, imported) }

// BenchmarkEvents reads the generated 1M-edge graph back with Events.
func BenchmarkEvents(b *testing.B) { storetest.BenchEvents(b, imported(b)) }

// BenchmarkImport imports the generated 1M-edge graph into an empty store.
// Run it with -benchtime 1x: each op is a full import.
func BenchmarkImport(b *testing.B) { storetest.BenchImport(b, open) }
