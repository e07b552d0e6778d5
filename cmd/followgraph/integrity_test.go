package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/internal/testenv"
)

// damagedData makes a data folder whose record (SQLite) holds an imported
// graph and whose log still holds 1,000 acknowledged follows the persister
// (held back to one event a second) has not stored, then kills the server
// with SIGKILL. It returns the folder and the number of edges it holds.
func damagedData(t *testing.T) (string, int) {
	t.Helper()
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	file := filepath.Join(dir, "edges.tsv")
	runBinary(t, "gen", "--edges", "20000", "--seed", "1", "-o", file)
	out := runBinary(t, "import", file, "--data", data)
	var imported int
	if _, err := fmt.Sscanf(out, "imported %d edges", &imported); err != nil {
		t.Fatalf("import printed %q", out)
	}
	s := start(t, data, "--persist-rate", "1", "--persist-batch", "1")
	ctx := context.Background()
	for i := range 1000 {
		if _, err := s.client.Follow(ctx, fg.UserID(900_001+i), fg.UserID(1+i)); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(1500 * time.Millisecond) // the store notes the log's last sequence every second
	s.kill()
	return data, imported + 1000
}

// copyDir copies the data folder src to a new folder and returns it.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "data")
	if out, err := exec.Command("cp", "-a", src, dst).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	return dst
}

// serveOnce runs serve on data until it is ready (then stops it) or
// exits, and returns its output and whether it got ready.
func serveOnce(t *testing.T, data string, args ...string) (string, bool) {
	t.Helper()
	out := runUntil(t, "followgraph ready", append([]string{"serve", "--addr", freeAddr(t), "--data", data}, args...)...)
	return out, strings.Contains(out, "followgraph ready")
}

var readyEdges = regexp.MustCompile(`"msg":"followgraph ready".*"edges":(\d+)`)

// TestIntegrity_DamagedDataDir: a data folder that lost acknowledged
// writes (the record deleted or emptied, the log deleted, a block of the
// log truncated) is refused at start, with what is missing and how much,
// instead of served; --accept-data-loss starts it anyway and says what it
// accepted, and the next start is clean. An intact copy starts with every
// edge.
func TestIntegrity_DamagedDataDir(t *testing.T) {
	data, edges := damagedData(t)
	blocks, _ := filepath.Glob(filepath.Join(data, "nats", "jetstream", "*", "streams", "*", "msgs", "*.blk"))
	if len(blocks) != 1 {
		t.Fatalf("want one block of the log, got %v", blocks)
	}
	block := strings.TrimPrefix(blocks[0], data)
	tests := []struct {
		name   string
		damage func(dir string) error
		says   string
		lost   int // at least
	}{
		{"RecordDeleted", func(dir string) error {
			for _, f := range []string{"followgraph.db", "followgraph.db-wal", "followgraph.db-shm"} {
				os.Remove(filepath.Join(dir, f))
			}
			return nil
		}, "not the one this event log has been feeding", 1},
		{"RecordTruncated", func(dir string) error {
			os.Remove(filepath.Join(dir, "followgraph.db-wal"))
			os.Remove(filepath.Join(dir, "followgraph.db-shm"))
			return os.Truncate(filepath.Join(dir, "followgraph.db"), 0)
		}, "not the one this event log has been feeding", 1},
		{"LogDeleted", func(dir string) error { return os.RemoveAll(filepath.Join(dir, "nats")) },
			"event log is gone", 990},
		{"LogBlockTruncated", func(dir string) error { return os.Truncate(dir+block, 100_000) },
			"event log has lost", 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := copyDir(t, data)
			if err := tt.damage(dir); err != nil {
				t.Fatal(err)
			}
			out, ready := serveOnce(t, dir)
			if ready {
				t.Fatalf("serve started on a damaged data folder:\n%s", out)
			}
			if !strings.Contains(out, "refusing to start") || !strings.Contains(out, tt.says) || !strings.Contains(out, "--accept-data-loss") {
				t.Fatalf("serve's refusal does not say %q:\n%s", tt.says, out)
			}
			if n := lostIn(out); n < tt.lost {
				t.Errorf("serve says %d lost, want at least %d:\n%s", n, tt.lost, out)
			}
			out, ready = serveOnce(t, dir, "--accept-data-loss")
			if !ready || !strings.Contains(out, "--accept-data-loss says") {
				t.Fatalf("with --accept-data-loss: ready %v, and no line of what it accepted:\n%s", ready, out)
			}
			if out, ready := serveOnce(t, dir); !ready {
				t.Fatalf("the start after an accepted loss is refused:\n%s", out)
			}
		})
	}
	t.Run("Intact", func(t *testing.T) {
		out, ready := serveOnce(t, copyDir(t, data))
		m := readyEdges.FindStringSubmatch(out)
		if !ready || m == nil || m[1] != strconv.Itoa(edges) {
			t.Fatalf("an intact copy: ready %v, edges %v, want %d:\n%s", ready, m, edges, out)
		}
	})
}

// lostIn returns the number of events a refusal says are lost.
func lostIn(out string) int {
	m := regexp.MustCompile(`(\d+) acknowledged events`).FindStringSubmatch(out)
	if m == nil {
		return -1
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// TestIntegrity_ExternalLogDeleted: the same check holds for an external
// log and database: a node refuses to start on a stream deleted under a
// PostgreSQL record that was fed from it.
func TestIntegrity_ExternalLogDeleted(t *testing.T) {
	natsURL := testenv.Server(t, testenv.NATS, testenv.NATSHint)
	db := newDatabase(t, testenv.Server(t, testenv.Postgres, testenv.PostgresHint))
	stream := fmt.Sprintf("FGTEST_%X", time.Now().UnixNano())
	t.Cleanup(func() { deleteStream(natsURL, stream) })
	args := []string{"--nats", natsURL, "--nats-stream", stream, "--db", db, "--persist-rate", "1", "--persist-batch", "1"}
	s := start(t, t.TempDir(), args...)
	for i := range 50 {
		if _, err := s.client.Follow(context.Background(), fg.UserID(1+i), 1000); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(1500 * time.Millisecond)
	s.kill()
	deleteStream(natsURL, stream)
	out, ready := serveOnce(t, t.TempDir(), args...)
	if ready || !strings.Contains(out, "event log is gone") || lostIn(out) < 40 {
		t.Fatalf("a node on a deleted stream: ready %v, output:\n%s", ready, out)
	}
}

// TestIntegrity_StreamFlagChanged: a --nats-stream other than the one the
// durable store was fed from is refused with what to do: give the
// store's stream, which NATS still holds. Nothing is lost, so nothing is
// said lost; and a log that is gone with nothing known lost says so
// rather than "at least 0" lost.
func TestIntegrity_StreamFlagChanged(t *testing.T) {
	data := t.TempDir()
	s := start(t, data)
	if _, err := s.client.Follow(context.Background(), 1, 2); err != nil {
		t.Fatal(err)
	}
	s.stop(t)
	out, ready := serveOnce(t, data, "--nats-stream", "RENAMED")
	if ready {
		t.Fatalf("serve started on a stream the store was not fed from:\n%s", out)
	}
	if !strings.Contains(out, "refusing to start") || !strings.Contains(out, "--nats-stream FOLLOWGRAPH") ||
		strings.Contains(out, "acknowledged events") || strings.Contains(out, "--accept-data-loss") {
		t.Errorf("the refusal does not say to give --nats-stream FOLLOWGRAPH, or speaks of a loss:\n%s", out)
	}
	if out, ready := serveOnce(t, data); !ready {
		t.Fatalf("the start with the store's stream is refused:\n%s", out)
	}

	if err := os.RemoveAll(filepath.Join(data, "nats")); err != nil {
		t.Fatal(err)
	}
	out, ready = serveOnce(t, data)
	if ready || !strings.Contains(out, "event log is gone") {
		t.Fatalf("a log deleted after a clean stop: ready %v:\n%s", ready, out)
	}
	if strings.Contains(out, "at least 0") || !strings.Contains(out, "no acknowledged event is known to be lost") {
		t.Errorf("a log deleted after everything was stored does not say that nothing is known lost:\n%s", out)
	}
}
