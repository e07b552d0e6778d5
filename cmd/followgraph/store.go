package main

import (
	"context"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"strings"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/internal/secret"
	"github.com/followgraph/followgraph/recovery"
	"github.com/followgraph/followgraph/store/mysql"
	"github.com/followgraph/followgraph/store/postgres"
	"github.com/followgraph/followgraph/store/sqlite"
)

// durableStore is the durable record: the embedded SQLite file by default,
// or PostgreSQL or MySQL (--db). The three have the same schema and the
// same version-conditional writes; store/sqlite's doc comments are the
// contract.
type durableStore interface {
	Apply(ctx context.Context, events []fg.Event, lastSeq uint64) (changed int, err error)
	Import(ctx context.Context, events iter.Seq[fg.Event]) (int, error)
	Events(ctx context.Context) iter.Seq2[fg.Event, error]
	LastSeq(ctx context.Context) (uint64, error)
	recovery.Store
	Ready(ctx context.Context) error
	Close() error
}

// checkDB reports a --db value that names no store this binary has.
func checkDB(db string) error {
	scheme, _, _ := strings.Cut(db, "://")
	switch scheme {
	case "postgres", "postgresql", "mysql":
		return nil
	}
	return fmt.Errorf("--db %q: want postgres://… or mysql://…", secret.Redact(db))
}

// openStore opens the store db names, or with db empty the SQLite file in
// the data folder, and describes it for the start-up log line.
func openStore(ctx context.Context, db, data string) (durableStore, string, error) {
	if db == "" {
		if err := os.MkdirAll(data, 0o755); err != nil {
			return nil, "", err
		}
		path := filepath.Join(data, "followgraph.db")
		return opened(sqlite.Open(ctx, path))("sqlite " + path)
	}
	if err := checkDB(db); err != nil {
		return nil, "", err
	}
	if strings.HasPrefix(db, "mysql://") {
		return opened(mysql.Open(ctx, db))("mysql " + secret.Redact(db))
	}
	return opened(postgres.Open(ctx, db))("postgres " + secret.Redact(db))
}

// opened returns openStore's results for a store opened with err, so that
// a failed open returns a nil interface, not one holding a nil pointer.
func opened[S durableStore](s S, err error) func(desc string) (durableStore, string, error) {
	return func(desc string) (durableStore, string, error) {
		if err != nil {
			return nil, "", err
		}
		return s, desc, nil
	}
}
