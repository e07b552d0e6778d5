package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"testing"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/httpapi"
	"github.com/followgraph/followgraph/loadgen"
	"github.com/followgraph/followgraph/memgraph"
)

// TestBench: the bench command drives a server and prints its report as
// JSON with --json.
func TestBench(t *testing.T) {
	g := memgraph.New()
	for u := range fg.UserID(20) {
		if _, err := g.Follow(context.Background(), 1+u, 1+(u+1)%20); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(httpapi.NewServer(g))
	defer srv.Close()
	cmd := newBench()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"--url", srv.URL, "--duration", "200ms", "--concurrency", "2", "--users", "20", "--json"})
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	var res loadgen.Result
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("%v in %s", err, out.Bytes())
	}
	if res.Config.Mix != "reads" || res.Total.OK == 0 || res.Total.Errors != 0 {
		t.Fatalf("got %s", out.Bytes())
	}
}
