package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/redisgraph"
)

func newImport() *cobra.Command {
	var cfg opsConfig // --redis optional: the hot copy is written when given
	cmd := &cobra.Command{
		Use:   "import FILE",
		Short: "Bulk-load an edge list into the durable store (service stopped)",
		Long: `Bulk-load an edge list into the durable store (the SQLite file of the
data folder, or --db), in one transaction. Each line is "follower followee
unix_ms" (as written by gen) or a two-column "follower followee" edge list
(SNAP style; the follow time is then the import's start). Fields are
separated by tabs or spaces; lines starting with # are comments. A repeated
edge keeps its last line. The next "serve" loads it. With --redis, the hot
copy in Redis is then written from the store in bulk too (as "rebuild"
does), so that "serve --redis" starts on the imported graph.

Into a store that already has edges, the import merges: each edge of the
file takes the place of the stored one only if its follow time is later (as
the versioned writes of the service do), and edges not in the file stay. A
running service would never see the import, so import refuses a data folder
that serve is using; with --db, stop every serve of the deployment first.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			done, err := cfg.prepare(cmd, false)
			if err != nil {
				return err
			}
			defer done()
			return cfg.scrub.Error(cfg.importFile(cmd.Context(), cmd.OutOrStdout(), args[0]))
		},
	}
	cfg.flags(cmd)
	return cmd
}

// importFile imports the edges of the file at path into the store, and
// with --redis into the hot copy too.
func (c *opsConfig) importFile(ctx context.Context, out io.Writer, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	store, err := openStore(ctx, c.DB, c.Data, nil)
	if err != nil {
		return err
	}
	defer store.Close()
	start := time.Now()
	n, err := importEdges(ctx, store, f, start.UnixMilli())
	var refused fg.Refusal
	if errors.As(err, &refused) {
		return refusedLine(f, refused)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "imported %d edges in %s\n", n, time.Since(start).Round(time.Millisecond))
	if c.Redis == "" {
		return nil
	}
	return c.rebuild(ctx, out, redisgraph.RebuildOptions{})
}

// importEdges parses r and imports its edges; defaultMs is the follow time
// of two-column lines.
func importEdges(ctx context.Context, store durableStore, r io.Reader, defaultMs int64) (int, error) {
	var parseErr error
	seq := func(yield func(fg.Event) bool) {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 1<<16), 1<<20)
		for line := 1; sc.Scan(); line++ {
			e, ok, err := parseEdge(sc.Bytes(), defaultMs)
			if err != nil {
				parseErr = fmt.Errorf("line %d: %w", line, err)
				return
			}
			if ok && !yield(e) {
				return
			}
		}
		parseErr = sc.Err()
	}
	n, err := store.Import(ctx, seq)
	if parseErr != nil {
		return 0, fmt.Errorf("import: %w (nothing was imported)", parseErr)
	}
	return n, err
}

// refusedLine returns the error of the store's refusal of an edge older
// than its tombstone horizon, naming the edge's first line in f (the one
// the store refuses; see the stores' Import).
func refusedLine(f *os.File, r fg.Refusal) error {
	msg := fmt.Sprintf("import: %s; nothing was imported. The store has removed tombstones older than its horizon, "+
		"so history from before it cannot be merged: import it into a new store, or only the edges from after the horizon", fg.ErrorMessage(r))
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return errors.New(msg)
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for line := 1; sc.Scan(); line++ {
		if e, ok, err := parseEdge(sc.Bytes(), 0); err == nil && ok && e.User == r.User && e.Target == r.Target {
			return fmt.Errorf("line %d: %s", line, msg)
		}
	}
	return errors.New(msg)
}

// parseEdge reads one line; ok is false for blank lines and comments.
func parseEdge(line []byte, defaultMs int64) (e fg.Event, ok bool, err error) {
	fields := bytes.Fields(line)
	if len(fields) == 0 || fields[0][0] == '#' {
		return e, false, nil
	}
	if len(fields) != 2 && len(fields) != 3 {
		return e, false, fmt.Errorf("want 2 or 3 fields, got %d", len(fields))
	}
	u, err := fg.ParseUserID(string(fields[0]))
	if err != nil {
		return e, false, err
	}
	t, err := fg.ParseUserID(string(fields[1]))
	if err != nil {
		return e, false, err
	}
	if u == t {
		return e, false, fmt.Errorf("%d follows itself", u)
	}
	ms := defaultMs
	if len(fields) == 3 {
		v, err := fg.ParseUserID(string(fields[2])) // a positive decimal integer
		if err != nil {
			return e, false, fmt.Errorf("unix_ms %q: want positive milliseconds since 1970", fields[2])
		}
		if ms = int64(v); ms >= 1<<43 {
			return e, false, fmt.Errorf("unix_ms %d is after the year 2248", ms)
		}
	}
	return fg.NewEvent(u, t, fg.OpFollow, fg.VersionAt(ms)), true, nil
}
