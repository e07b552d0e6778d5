package main

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// logEntries decodes the JSON lines of a serve's log; a line that is not
// JSON fails tb.
func logEntries(tb testing.TB, logs string) []map[string]any {
	tb.Helper()
	var entries []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(logs), "\n") {
		var e map[string]any
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			tb.Fatalf("a log line that is not JSON: %q", line)
		}
		entries = append(entries, e)
	}
	return entries
}

// complaints returns the lines of logs at level WARN or ERROR.
func complaints(tb testing.TB, logs string) []string {
	tb.Helper()
	var out []string
	for _, e := range logEntries(tb, logs) {
		if e["level"] == "WARN" || e["level"] == "ERROR" {
			out = append(out, toJSON(e))
		}
	}
	return out
}

// TestServe_FreshStartQuiet: a brand-new deployment (an empty data
// folder, a Redis key prefix never used, a new NATS stream and PostgreSQL
// database) starts, takes a write and stops without logging a WARN or an
// ERROR line: nothing is wrong, and a warning on every first start
// teaches operators to ignore warnings. On Redis it says, at INFO, that
// the deployment is new, not that Redis lost the graph.
func TestServe_FreshStartQuiet(t *testing.T) {
	for _, tt := range []struct {
		name string
		args func(t *testing.T) []string
	}{
		{"Embedded", func(*testing.T) []string { return nil }},
		{"Redis", func(t *testing.T) []string {
			url, prefix := testRedis(t)
			return []string{"--redis", url, "--redis-prefix", prefix}
		}},
		{"External", func(t *testing.T) []string { return newDeployment(t, "", "", "").args() }},
		{"RedisCluster", func(t *testing.T) []string {
			return []string{"--redis", "redis+cluster://" + strings.Join(startCluster(t).addrs, ",")}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := start(t, t.TempDir(), tt.args(t)...)
			if _, err := s.client.Follow(context.Background(), 1, 2); err != nil {
				t.Fatal(err)
			}
			s.stop(t)
			for _, line := range complaints(t, s.logs.String()) {
				t.Errorf("a fresh deployment logged: %s", line)
			}
			for _, e := range logEntries(t, s.logs.String()) {
				if msg, _ := e["msg"].(string); strings.Contains(msg, "503") || strings.Contains(msg, "does not hold") {
					t.Errorf("a fresh deployment logged as if something were lost: %s", toJSON(e))
				}
			}
			if tt.name != "Embedded" && !strings.Contains(s.logs.String(), "a new deployment") {
				t.Errorf("a fresh deployment on Redis did not say it is one:\n%s", s.logs)
			}
		})
	}
}

// TestServe_NoDataFolder: a serve that keeps nothing in its data folder
// (Redis, an external NATS and PostgreSQL) neither makes the folder nor
// locks it, the default ./data of its working folder included; so two
// nodes of a deployment may be started from one folder.
func TestServe_NoDataFolder(t *testing.T) {
	d := newDeployment(t, "", "", "")
	work := t.TempDir()
	a := launch(t, "", launchOptions{dir: work, args: d.args()})
	b := launch(t, "", launchOptions{dir: work, args: d.args()})
	ctx := context.Background()
	if _, err := a.client.Follow(ctx, 1, 2); err != nil {
		t.Fatal(err)
	}
	if got, err := b.client.IsFollowing(ctx, 1, 2); err != nil || !got.Following {
		t.Fatalf("a follow made on one node, read on the other: %+v, %v", got, err)
	}
	data := filepath.Join(t.TempDir(), "data")
	c := start(t, data, d.args()...)
	for _, s := range []*server{a, b, c} {
		s.stop(t)
	}
	for _, dir := range []string{filepath.Join(work, "data"), data} {
		if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
			entries, _ := os.ReadDir(dir)
			t.Errorf("%s was made (%v, holding %v) although nothing is kept there", dir, err, entries)
		}
	}
}

// waitLogged waits until s has logged a line with msg, and fails t if
// it exits first or does not within d.
func (s *server) waitLogged(t *testing.T, msg string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !strings.Contains(s.logs.String(), `"msg":"`+msg+`"`) {
		select {
		case <-s.done:
			t.Fatalf("followgraph exited before it logged %q:\n%s", msg, s.logs)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("followgraph did not log %q within %s:\n%s", msg, d, s.logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestServe_WaitsForBackends: a Redis or a database that does not answer
// yet when serve starts is tried again, logging each try, for up to
// --start-timeout, as the event log is; serve becomes ready once it
// answers.
func TestServe_WaitsForBackends(t *testing.T) {
	for _, tt := range []struct {
		name string
		// down returns the flags of a backend that is not up, and what
		// starts it.
		down func(t *testing.T) (args []string, up func())
		warn string
	}{
		{"Redis", func(t *testing.T) ([]string, func()) {
			r := startRedis(t)
			r.kill()
			return []string{"--redis", r.url(), "--redis-prefix", "fgtest-wait"}, r.start
		}, "Redis is unavailable; trying again"},
		{"Postgres", func(t *testing.T) ([]string, func()) {
			p := startPostgres(t)
			db := newDatabase(t, p.admin)
			p.stop()
			return []string{"--db", db}, p.start
		}, "the durable store is unavailable; trying again"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args, up := tt.down(t)
			s := spawn(t, t.TempDir(), launchOptions{args: append(args, "--start-timeout", "60s")})
			time.Sleep(3 * time.Second)
			select {
			case <-s.done:
				t.Fatalf("serve gave up on a backend that was down for 3 s, with --start-timeout 60s:\n%s", s.logs)
			default:
			}
			up()
			if err := s.waitReady(60 * time.Second); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(s.logs.String(), tt.warn) {
				t.Errorf("serve did not log %q while it waited:\n%s", tt.warn, s.logs)
			}
			s.stop(t)
		})
	}
}

// TestServe_AddressTaken: an --addr or --admin-addr another process
// listens on is refused before anything is made: no data folder, no
// embedded log or store in it.
func TestServe_AddressTaken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	taken := ln.Addr().String()
	for _, tt := range []struct {
		name string
		args []string
		flag string
	}{
		{"API", []string{"--addr", taken}, "--addr"},
		{"Operator", []string{"--addr", freeAddr(t), "--admin-addr", taken}, "--admin-addr"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			data := filepath.Join(t.TempDir(), "data")
			cmd := exec.Command(binary, append([]string{"serve", "--data", data}, tt.args...)...)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("serve on a taken address did not fail:\n%s", out)
			}
			if !strings.Contains(string(out), tt.flag+" "+taken) || !strings.Contains(string(out), "already in use") {
				t.Errorf("the error does not name %s %s as in use:\n%s", tt.flag, taken, out)
			}
			if _, err := os.Stat(data); !errors.Is(err, fs.ErrNotExist) {
				entries, _ := os.ReadDir(data)
				t.Errorf("the data folder was made (%v, holding %v) although serve could not listen", err, entries)
			}
		})
	}
}

// TestServe_StartLines: serve's first log line is `followgraph starting`,
// naming the address and each backend, before any backend's line; and
// `followgraph ready` gives the console's URL, on the operator port when
// there is one.
func TestServe_StartLines(t *testing.T) {
	admin := freeAddr(t)
	for _, tt := range []struct {
		name    string
		args    []string
		console func(s *server) string
	}{
		{"API port", nil, func(s *server) string { return s.url + "/console/" }},
		{"Operator port", []string{"--admin-addr", admin}, func(*server) string { return "http://" + admin + "/console/" }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := start(t, t.TempDir(), tt.args...)
			s.stop(t)
			entries := logEntries(t, s.logs.String())
			first := entries[0]
			if first["msg"] != "followgraph starting" || first["addr"] != s.addr() || first["store"] == nil || first["eventlog"] == nil || first["engine"] == nil {
				t.Errorf("the first line is not `followgraph starting` with the address and the backends: %s", toJSON(first))
			}
			var ready map[string]any
			for _, e := range entries {
				if e["msg"] == "followgraph ready" {
					ready = e
				}
			}
			if ready == nil || ready["console"] != tt.console(s) {
				t.Errorf("the ready line does not give the console at %s: %s", tt.console(s), toJSON(ready))
			}
		})
	}
}
