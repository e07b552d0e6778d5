package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/followgraph/followgraph/internal/testenv"
)

// runUntil runs the binary with args until it exits or logs until (then
// it is stopped with SIGTERM), for at most 20 s, and returns everything it
// wrote.
func runUntil(t *testing.T, until string, args ...string) string {
	t.Helper()
	out := &syncBuffer{}
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case <-done:
			return out.String()
		case <-deadline:
			cmd.Process.Kill()
			<-done
			return out.String()
		case <-time.After(50 * time.Millisecond):
			if until != "" && strings.Contains(out.String(), until) {
				cmd.Process.Signal(syscall.SIGTERM)
				<-done
				return out.String()
			}
		}
	}
}

// TestSecrets_NotInLogs: whatever the form of a URL (user info, a query
// parameter) and whatever goes wrong with it (a typo, a server that cannot
// be reached, a wrong password), no password or token shows in what the
// binary writes: its log lines and its errors.
func TestSecrets_NotInLogs(t *testing.T) {
	pgAdmin := testenv.Server(t, testenv.Postgres, testenv.PostgresHint)
	mysqlURL := testenv.Server(t, testenv.MySQL, testenv.MySQLHint)
	db := newDatabase(t, pgAdmin)
	n := startNATS(t, "--user", "fguser", "--pass", "NatsSecret1")
	r := startRedis(t)
	cases := []struct {
		name, secret, until string
		args                []string
	}{
		{"nats password in the start-up line", "NatsSecret1", "followgraph ready",
			[]string{"serve", "--nats", "nats://fguser:NatsSecret1@" + strings.TrimPrefix(n.url, "nats://"), "--nats-stream", "FGTEST_SECRETS"}},
		{"nats token, wrong", "NatsToken2", "",
			[]string{"serve", "--nats", "nats://NatsToken2@" + strings.TrimPrefix(n.url, "nats://")}},
		{"redis URL with a typo", "RedisSecret1", "",
			[]string{"serve", "--redis", "redis://:RedisSecret1@127.0.0.1:notaport"}},
		{"redis cluster URL with a typo", "RedisSecret2", "",
			[]string{"serve", "--redis", "redis+cluster://u:RedisSecret2@127.0.0.1:1,127.0.0.1:x"}},
		{"redis password where none is set", "RedisSecret3", "followgraph ready",
			[]string{"serve", "--redis", "redis://:RedisSecret3@127.0.0.1:" + r.port}},
		{"postgres ?password= unreachable", "PgSecret1", "",
			[]string{"serve", "--db", "postgres://postgres@127.0.0.1:1/x?password=PgSecret1&connect_timeout=2", "--start-timeout", "3s"}},
		{"postgres ?password= in the start-up line", "PgSecret2", "followgraph ready",
			[]string{"serve", "--db", db + "?password=PgSecret2"}},
		{"postgres user info unreachable", "PgSecret3", "",
			[]string{"serve", "--db", "postgres://postgres:PgSecret3@127.0.0.1:1/x?connect_timeout=2", "--start-timeout", "3s"}},
		{"postgres URL with a typo", "PgSecret4", "",
			[]string{"serve", "--db", "postgres://postgres:PgSecret4@127.0.0.1:5432/x?sslmode=nonsense"}},
		{"mysql ?password=", "MySecret1", "",
			[]string{"serve", "--db", mysqlURL + "?password=MySecret1"}},
		{"mysql user info, wrong", "MySecret2", "",
			[]string{"serve", "--db", strings.Replace(mysqlURL, "root@", "root:MySecret2@", 1)}},
		{"mysql user info unreachable", "MySecret3", "",
			[]string{"serve", "--db", "mysql://root:MySecret3@127.0.0.1:1/test?timeout=2s", "--start-timeout", "3s"}},
		{"mysql URL with a typo", "MySecret4", "",
			[]string{"serve", "--db", "mysql://root:MySecret4@127.0.0.1:3306/test?parseTime=maybe"}},
		{"bad --db scheme", "DbSecret5", "",
			[]string{"serve", "--db", "mongodb://u:DbSecret5@h/db"}},
		{"reconcile, wrong redis password", "RedisSecret4", "",
			[]string{"reconcile", "--redis", "redis://:RedisSecret4@127.0.0.1:" + r.port, "--db", db, "--nats", "nats://fguser:NatsSecret1@" + strings.TrimPrefix(n.url, "nats://"), "--nats-stream", "FGTEST_SECRETS"}},
		{"import, postgres unreachable", "PgSecret6", "",
			[]string{"import", "/dev/null", "--db", "postgres://postgres:PgSecret6@127.0.0.1:1/x?connect_timeout=2"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := append(c.args, "--data", t.TempDir())
			if c.args[0] == "serve" {
				args = append(args, "--addr", freeAddr(t))
			}
			out := runUntil(t, c.until, args...)
			if c.until != "" && !strings.Contains(out, c.until) {
				t.Fatalf("never logged %q:\n%s", c.until, out)
			}
			if strings.Contains(out, c.secret) {
				t.Errorf("the secret shows:\n%s", out)
			}
		})
	}
}

// TestSecrets_FromFiles: passwords can come from files, so that they need
// not stand on a command line (where ps shows them): the file's password
// is the one used, and it shows in no line either.
func TestSecrets_FromFiles(t *testing.T) {
	n := startNATS(t, "--user", "fguser", "--pass", "NatsFilePass")
	r := startRedis(t, "--requirepass", "RedisFilePass")
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	natsFile, redisFile := write("nats", "NatsFilePass"), write("redis", "RedisFilePass")
	args := []string{"serve", "--addr", freeAddr(t), "--data", t.TempDir(),
		"--nats", "nats://fguser@" + strings.TrimPrefix(n.url, "nats://"), "--nats-stream", "FGTEST_SECRET_FILES",
		"--redis", r.url(), "--redis-prefix", "fgtest-secret-files"}
	out := runUntil(t, "followgraph ready", append(args, "--nats-password-file", natsFile, "--redis-password-file", redisFile)...)
	if !strings.Contains(out, "followgraph ready") {
		t.Fatalf("serve with the passwords in files did not start:\n%s", out)
	}
	for _, secret := range []string{"NatsFilePass", "RedisFilePass"} {
		if strings.Contains(out, secret) {
			t.Errorf("%s shows:\n%s", secret, out)
		}
	}
	// Without the files, the same servers refuse it: the files' passwords were used.
	if out := runUntil(t, "followgraph ready", args...); strings.Contains(out, "followgraph ready") {
		t.Errorf("serve started without the passwords:\n%s", out)
	}
}
