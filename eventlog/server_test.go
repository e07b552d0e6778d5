package eventlog

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestServerLoggerLevels: what the embedded server says reaches the log
// at the level an operator should read it at.
func TestServerLoggerLevels(t *testing.T) {
	for _, c := range []struct {
		starting bool
		msg      string
		level    string
		failed   bool
	}{
		{false, "127.0.0.1:53186 - rid:15 - Error flushing: writev tcp 127.0.0.1:46517->127.0.0.1:53186: writev: broken pipe", "WARN", false},
		{false, "127.0.0.1:4 - rid:3 - Error reading: read tcp: connection reset by peer", "WARN", false},
		{true, "Error trying to connect to route (attempt 3): dial tcp 127.0.0.1:6223: connect: connection refused", "DEBUG", false},
		{false, "Error trying to connect to route (attempt 90): dial tcp 127.0.0.1:6223: connect: connection refused", "ERROR", false},
		{false, `Error trying to connect as leafnode to remote server "127.0.0.1:46053" (attempt 1): dial tcp 127.0.0.1:46053: connect: connection refused`, "WARN", false},
		{false, "JetStream resource limits exceeded: Critical write error: no space left on device", "ERROR", true},
		{false, "Critical write error: write: broken pipe", "ERROR", true},
	} {
		var out bytes.Buffer
		failed := false
		s := serverLogger{l: slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug})),
			starting: func() bool { return c.starting }, failed: func() { failed = true }}
		s.Errorf("%s", c.msg)
		if !strings.Contains(out.String(), "level="+c.level+" ") || failed != c.failed {
			t.Errorf("starting %v, %q: logged %q, failed %v; want level %s, failed %v", c.starting, c.msg, out.String(), failed, c.level, c.failed)
		}
	}
}
