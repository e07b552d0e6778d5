// Package testenv tells tests where the servers they need are, and skips
// those that cannot run: with a message saying how to enable them when run
// plainly, as a failure in CI (CI=true), where every test must run.
package testenv

import (
	"os"
	"testing"
)

// Redis and NATS name the variables of the servers the tests use, and the
// value that enables them on a machine that runs the servers locally.
const (
	Redis     = "FOLLOWGRAPH_TEST_REDIS"
	RedisHint = Redis + "=redis://127.0.0.1:6379"
	NATS      = "FOLLOWGRAPH_TEST_NATS"
	NATSHint  = NATS + "=nats://127.0.0.1:4222"
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
