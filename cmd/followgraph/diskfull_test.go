package main

import (
	"context"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/internal/testenv"
)

// smallDisk mounts a tmpfs of size MiB for tb and returns its folder.
func smallDisk(tb testing.TB, size int) string {
	tb.Helper()
	dir := tb.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+strconv.Itoa(size)+"m", "tmpfs", dir).CombinedOutput(); err != nil {
		testenv.Skip(tb, "cannot mount a tmpfs (run the tests as root): "+strings.TrimSpace(string(out)))
	}
	tb.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
	return dir
}

// fill writes a file of n MiB into dir, or as much as fits.
func fill(tb testing.TB, path string, mib int) {
	tb.Helper()
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 1<<20)
	for range mib {
		if _, err := f.Write(chunk); err != nil {
			return
		}
	}
}

// writeUntilRefused writes follows with 16 writers until the server
// refuses one, and returns every acknowledged edge with its time, and the
// longest time a refused write took.
func writeUntilRefused(t *testing.T, s *server, from int) (map[[2]fg.UserID]time.Time, time.Duration) {
	t.Helper()
	var mu sync.Mutex
	acked := map[[2]fg.UserID]time.Time{}
	var slowest time.Duration
	refused := make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	deadline := time.Now().Add(60 * time.Second)
	for w := range 16 {
		wg.Go(func() {
			for i := 0; time.Now().Before(deadline); i++ {
				e := [2]fg.UserID{fg.UserID(from + w*1_000_000 + i), fg.UserID(999_999_999)}
				begin := time.Now()
				res, err := s.client.Follow(context.Background(), e[0], e[1])
				took := time.Since(begin)
				mu.Lock()
				if err == nil {
					acked[e] = res.Since
				} else {
					slowest = max(slowest, took)
				}
				mu.Unlock()
				if err != nil {
					var fe *fg.Error
					if !errors.As(err, &fe) || fe.Code != fg.EUnavailable {
						t.Errorf("a write on a full disk: %v, want unavailable", err)
					}
					once.Do(func() { close(refused) })
				}
				select {
				case <-refused:
					if err != nil {
						return
					}
				default:
				}
			}
		})
	}
	wg.Wait()
	select {
	case <-refused:
	default:
		t.Fatalf("no write refused in 60 s on a full disk (%d acknowledged)", len(acked))
	}
	return acked, slowest
}

// TestDiskFull: the data folder on a small disk that fills up. Writes are
// refused at once (503, not after a timeout), /readyz names the log, and
// writes work again within seconds of space coming back; a clean stop
// does not wait on messages stuck in the log, and nothing acknowledged is
// lost. With the reserve off (--disk-reserve 0) the log's store does hit
// the full disk, and is reopened once space is back.
func TestDiskFull(t *testing.T) {
	for _, tt := range []struct {
		name    string
		reserve string
		slowest time.Duration // the longest a refused write may take
	}{
		{"Reserve", "4MiB", 500 * time.Millisecond},
		{"StoreFails", "0", 6 * time.Second}, // those in flight when the store fails wait for their deadline, 5 s here
	} {
		t.Run(tt.name, func(t *testing.T) {
			disk := smallDisk(t, 24)
			data := filepath.Join(disk, "data")
			ballast := filepath.Join(disk, "ballast")
			s := startEnv(t, data, []string{"FOLLOWGRAPH_DISK_RESERVE=" + tt.reserve, "FOLLOWGRAPH_WRITE_REQUEST_TIMEOUT=5s"})
			fill(t, ballast, 16)
			acked, slowest := writeUntilRefused(t, s, 1)
			t.Logf("%d writes acknowledged before the disk was full; the slowest refusal took %v", len(acked), slowest.Round(time.Millisecond))
			if slowest > tt.slowest {
				t.Errorf("a refused write took %v, want under %v", slowest.Round(time.Millisecond), tt.slowest)
			}
			if status, body := readyz(t, s); status != http.StatusServiceUnavailable || !strings.Contains(toJSON(body), "eventlog") {
				t.Errorf("/readyz on a full disk: %d %v, want 503 naming the eventlog", status, body)
			}
			for range 20 { // refusals go on while the disk is full
				if _, err := s.client.Follow(context.Background(), 5, 6); err == nil {
					t.Fatal("a write acknowledged on a full disk")
				}
			}
			os.Remove(ballast)
			begin := time.Now()
			for {
				res, err := s.client.Follow(context.Background(), 3, 4)
				if err == nil {
					acked[[2]fg.UserID{3, 4}] = res.Since
					break
				}
				if time.Since(begin) > 10*time.Second {
					t.Fatalf("writes still refused 10 s after space came back: %v\n%s", err, s.logs)
				}
				time.Sleep(50 * time.Millisecond)
			}
			t.Logf("writes work again %v after space came back", time.Since(begin).Round(time.Millisecond))
			more, _ := writeUntilDone(t, s, 50_000_000, 200)
			for e, since := range more {
				acked[e] = since
			}
			stopped := time.Now()
			s.stop(t)
			if took := time.Since(stopped); took > 10*time.Second {
				t.Errorf("a clean stop took %v: it waited on the log\n%s", took.Round(time.Millisecond), s.logs)
			}
			s = startEnv(t, data, []string{"FOLLOWGRAPH_DISK_RESERVE=" + tt.reserve})
			for e, since := range acked {
				got, err := s.client.IsFollowing(context.Background(), e[0], e[1])
				if err != nil {
					t.Fatal(err)
				}
				if !got.Following || !got.Since.Equal(since) {
					t.Fatalf("%d→%d acknowledged at %v, found %+v after the restart", e[0], e[1], since, got)
				}
			}
			deadline := time.Now().Add(20 * time.Second)
			for metric(t, s, "followgraph_persister_pending_events") != 0 {
				if time.Now().After(deadline) {
					t.Fatalf("%v events still in the log 20 s after the restart: stuck", metric(t, s, "followgraph_persister_pending_events"))
				}
				time.Sleep(100 * time.Millisecond)
			}
		})
	}
}

// writeUntilDone makes n follows from user from on, all acknowledged.
func writeUntilDone(t *testing.T, s *server, from, n int) (map[[2]fg.UserID]time.Time, error) {
	t.Helper()
	acked := map[[2]fg.UserID]time.Time{}
	for i := range n {
		e := [2]fg.UserID{fg.UserID(from + i), 8}
		res, err := s.client.Follow(context.Background(), e[0], e[1])
		if err != nil {
			t.Fatalf("write %d after space came back: %v", i, err)
		}
		acked[e] = res.Since
	}
	return acked, nil
}

// TestDiskFull_AtStart: started on a disk with less free space than
// --disk-reserve (here a reserve larger than any disk), serve says so
// before it serves, in a WARN line that names the flag, the free space
// and what it means; its ready line says that writes are refused. Reads
// are served, writes refused with 503 and /readyz is 503 naming the log.
func TestDiskFull_AtStart(t *testing.T) {
	s := spawn(t, t.TempDir(), launchOptions{args: []string{"--disk-reserve", "1000TiB"}})
	s.waitLogged(t, "followgraph ready", 60*time.Second)
	warned, readySays := false, ""
	for _, e := range logEntries(t, s.logs.String()) {
		msg, _ := e["msg"].(string)
		switch {
		case msg == "followgraph ready":
			if e["level"] == "WARN" {
				readySays, _ = e["writes"].(string)
			}
		case e["level"] == "WARN" && strings.Contains(msg, "--disk-reserve") && strings.Contains(msg, "refused") &&
			strings.Contains(msg, "/readyz") && e["free"] != nil && e["disk_reserve"] == "1000TiB":
			warned = true
		}
	}
	if !warned {
		t.Errorf("no WARN line at start saying that the disk is below --disk-reserve, with the free space:\n%s", s.logs)
	}
	if !strings.Contains(readySays, "refused") {
		t.Errorf("the ready line does not say, at WARN, that writes are refused:\n%s", grep(s.logs.String(), "followgraph ready"))
	}
	if status, body := readyz(t, s); status != http.StatusServiceUnavailable || !strings.Contains(toJSON(body), "eventlog") {
		t.Errorf("/readyz below the reserve: %d %v, want 503 naming the eventlog", status, body)
	}
	ctx := context.Background()
	if _, err := s.client.Follow(ctx, 1, 2); fg.ErrorCode(err) != fg.EUnavailable {
		t.Errorf("a write below the reserve: %v, want unavailable", err)
	}
	if _, err := s.client.Counts(ctx, []fg.UserID{1}); err != nil {
		t.Errorf("a read below the reserve: %v", err)
	}
}
