// Package testenv tells tests where the servers they need are, and skips
// those that cannot run: with a message saying how to enable them when run
// plainly, as a failure in CI (CI=true), where every test must run. It
// also runs servers of a test's own: a NATS JetStream cluster
// (NATSCluster), and a TCP proxy a test can cut (Proxy).
package testenv

import (
	"os"
	"testing"
)

// These name the variables of the servers the tests use, and the value
// that enables them on a machine that runs the servers locally. A test of
// PostgreSQL or MySQL creates a database of its own on that server (the
// URL's database is only where it connects to do so) and drops it after.
const (
	Redis        = "FOLLOWGRAPH_TEST_REDIS"
	RedisHint    = Redis + "=redis://127.0.0.1:6379"
	NATS         = "FOLLOWGRAPH_TEST_NATS"
	NATSHint     = NATS + "=nats://127.0.0.1:4222"
	Postgres     = "FOLLOWGRAPH_TEST_POSTGRES"
	PostgresHint = Postgres + "=postgres://postgres@127.0.0.1:5432/postgres"
	MySQL        = "FOLLOWGRAPH_TEST_MYSQL"
	MySQLHint    = MySQL + "=mysql://root@127.0.0.1:3306/test"
)

// Server returns the value of the environment variable env, the address
// of a server tb needs. When it is unset, tb is skipped with a message
// naming hint (such as RedisHint), or fails in CI.
func Server(tb testing.TB, env, hint string) string {
	tb.Helper()
	v := os.Getenv(env)
	if v == "" {
		Skip(tb, env+" is not set: set "+hint+" to run against a real server")
	}
	return v
}

// Skip skips tb with msg, or fails it in CI.
func Skip(tb testing.TB, msg string) {
	tb.Helper()
	if os.Getenv("CI") == "true" {
		tb.Fatal(msg)
	}
	tb.Skip(msg)
}
