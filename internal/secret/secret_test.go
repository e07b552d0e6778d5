package secret

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	tests := []struct{ in, want string }{
		{"redis://127.0.0.1:6379", "redis://127.0.0.1:6379"},
		{"redis://:pw@127.0.0.1:6379/2", "redis://:xxxxx@127.0.0.1:6379/2"},
		{"redis+cluster://u:p%40ss@h1:1,h2:2", "redis+cluster://u:xxxxx@h1:1,h2:2"},
		{"redis://u:pw@127.0.0.1:notaport", "redis://u:xxxxx@127.0.0.1:notaport"},
		{"nats://tok3n@h:4222", "nats://xxxxx@h:4222"},
		{"nats://user:pw@h:4222,nats://h2:4222", "nats://user:xxxxx@h:4222,nats://h2:4222"},
		{"nats://u:pw1@h1:4222,nats://u:pw2@h2:4222,tls://tok@h3", "nats://u:xxxxx@h1:4222,nats://u:xxxxx@h2:4222,tls://xxxxx@h3"},
		{"nats-route://r:pw@h1:6222,nats-route://r:pw@h2:6222", "nats-route://r:xxxxx@h1:6222,nats-route://r:xxxxx@h2:6222"},
		{"postgres://postgres@h:5432/db?password=pw&sslmode=disable", "postgres://postgres@h:5432/db?password=xxxxx&sslmode=disable"},
		{"postgres://u:a:b@h/db?PassWord=x#frag", "postgres://u:xxxxx@h/db?PassWord=xxxxx#frag"},
		{"mysql://root@h/test?pwd=pw&timeout=1s", "mysql://root@h/test?pwd=xxxxx&timeout=1s"},
		{"not a url", "not a url"},
	}
	for _, tt := range tests {
		if got := Redact(tt.in); got != tt.want {
			t.Errorf("Redact(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestValues(t *testing.T) {
	got := Values("postgres://u:p%40ss@h/db?password=q%2Fw&sslmode=disable")
	for _, want := range []string{"p%40ss", "p@ss", "q%2Fw", "q/w"} {
		if !strings.Contains(strings.Join(got, " "), want) {
			t.Errorf("Values lacks %q: %q", want, got)
		}
	}
	if got := Values("nats://tok3n@h"); len(got) == 0 || got[0] != "tok3n" {
		t.Errorf("Values of a NATS token URL: %q", got)
	}
	if got := strings.Join(Values("nats://u:pw1@h1,nats://u:pw2@h2"), " "); !strings.Contains(got, "pw1") || !strings.Contains(got, "pw2") {
		t.Errorf("Values of a list of URLs: %q", got)
	}
	if got := Values("redis://u@h"); len(got) != 0 {
		t.Errorf("Values of a URL without secrets: %q", got)
	}
}

func TestWithPassword(t *testing.T) {
	tests := []struct{ in, pass, want string }{
		{"redis://127.0.0.1:6379", "p w", "redis://:p%20w@127.0.0.1:6379"},
		{"redis://u:old@h1:1,h2:2/", "new", "redis://u:new@h1:1,h2:2/"},
		{"nats://h:4222", "tok", "nats://tok@h:4222"},
		{"nats://u@h1:4222,nats://h2:4222", "pw", "nats://u:pw@h1:4222,nats://pw@h2:4222"},
		{"nats://user@h:4222", "pw", "nats://user:pw@h:4222"},
		{"mysql://root@h:3306/test?x=1", "s3c/ret", "mysql://root:s3c%2Fret@h:3306/test?x=1"},
	}
	for _, tt := range tests {
		got, err := WithPassword(tt.in, tt.pass)
		if err != nil || got != tt.want {
			t.Errorf("WithPassword(%q, %q) = %q, %v; want %q", tt.in, tt.pass, got, err, tt.want)
		}
	}
	if _, err := WithPassword("h:4222", "x"); err == nil {
		t.Error("WithPassword of a non-URL: no error")
	}
}

func TestScrubber(t *testing.T) {
	sc := NewScrubber("hunter22", "", "ab", "hunter2")
	var buf bytes.Buffer
	l := slog.New(sc.Handler(slog.NewJSONHandler(&buf, nil))).With("url", "redis://:hunter22@h")
	err := fmt.Errorf("dial: %w", errors.New("bad password hunter2"))
	l.Error("connect hunter2", "err", err, slog.Group("g", "p", []byte("x hunter2")), "ab", "ab")
	out := buf.String()
	if strings.Contains(out, "hunter2") {
		t.Errorf("a secret shows: %s", out)
	}
	if !strings.Contains(out, `"ab":"ab"`) {
		t.Errorf("a short string was masked: %s", out)
	}
	wrapped := sc.Error(err)
	if strings.Contains(wrapped.Error(), "hunter2") || !errors.Is(wrapped, errors.Unwrap(err)) {
		t.Errorf("Error: %q, chain kept %v", wrapped, errors.Is(wrapped, errors.Unwrap(err)))
	}
	if sc.Error(nil) != nil {
		t.Error("Error(nil) is not nil")
	}
}
