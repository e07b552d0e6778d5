package httpapi_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/client"
	"github.com/followgraph/followgraph/graphtest"
	"github.com/followgraph/followgraph/httpapi"
	"github.com/followgraph/followgraph/memgraph"
)

// TestConformance runs the conformance suite on a Client talking to a
// Server in front of a memgraph, and checks every request and answer of
// the suite against api/openapi.yaml on the way: the suite doubles as the
// check that the server, the client and the document agree.
func TestConformance(t *testing.T) {
	s := specOf(t)
	graphtest.Run(t, func(tb testing.TB, o graphtest.Options) followgraph.Graph {
		g := memgraph.New(memgraph.WithClock(o.Now), memgraph.WithMaxFollowing(o.MaxFollowing), memgraph.WithHook(o.Hook))
		srv := httptest.NewServer(httpapi.NewServer(g, httpapi.WithLogger(testLogger(tb))))
		tb.Cleanup(srv.Close)
		hc := &http.Client{Transport: &specTransport{tb: tb, spec: s, next: srv.Client().Transport}}
		return client.New(srv.URL, client.WithHTTPClient(hc))
	})
}
