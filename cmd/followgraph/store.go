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
	fg.TombstonePurger
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
// the data folder. refused, when not nil, is what its Apply calls with
// each change it refuses for being older than its tombstone horizon.
func openStore(ctx context.Context, db, data string, refused func(fg.Refusal)) (durableStore, error) {
	if db == "" {
		if err := os.MkdirAll(data, 0o755); err != nil {
			return nil, err
		}
		return opened(sqlite.Open(ctx, filepath.Join(data, "followgraph.db"), sqlite.WithRefused(refused)))
	}
	if err := checkDB(db); err != nil {
		return nil, err
	}
	if strings.HasPrefix(db, "mysql://") {
		return opened(mysql.Open(ctx, db, mysql.WithRefused(refused)))
	}
	return opened(postgres.Open(ctx, db, postgres.WithRefused(refused)))
}

// storeDesc describes the store openStore opens, for the start-up log
// line, its password masked.
func storeDesc(db, data string) string {
	switch {
	case db == "":
		return "sqlite " + filepath.Join(data, "followgraph.db")
	case strings.HasPrefix(db, "mysql://"):
		return "mysql " + secret.Redact(db)
	}
	return "postgres " + secret.Redact(db)
}

// opened returns a store opened with err as openStore does: a failed open
// returns a nil interface, not one holding a nil pointer.
func opened[S durableStore](s S, err error) (durableStore, error) {
	if err != nil {
		return nil, err
	}
	return s, nil
}
