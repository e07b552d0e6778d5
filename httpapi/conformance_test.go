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
	graphtest.Run(t, overHTTP(specOf(t)))
}

// TestConformance_States runs the conformance suite of account states the
// same way. The client is no JobRunner, so the suite cannot run the jobs
// itself: the server side runs them, as serve does, for each engine's
// life.
func TestConformance_States(t *testing.T) {
	graphtest.RunStates(t, overHTTP(specOf(t)))
}

// overHTTP returns the graphtest.NewGraph of a Client talking to a Server
// in front of a fresh memgraph, through a transport that checks every
// exchange against s. Its jobs run, unthrottled, until the test's cleanup.
func overHTTP(s *spec) graphtest.NewGraph {
	return func(tb testing.TB, o graphtest.Options) followgraph.Graph {
		g := memgraph.New(memgraph.WithClock(o.Now), memgraph.WithMaxFollowing(o.MaxFollowing), memgraph.WithHook(o.Hook),
			memgraph.WithRegion(o.Region))
		graphtest.RunJobs(tb, g, 0)
		srv := httptest.NewServer(httpapi.NewServer(g, httpapi.WithLogger(testLogger(tb))))
		tb.Cleanup(srv.Close)
		hc := &http.Client{Transport: &specTransport{tb: tb, spec: s, next: srv.Client().Transport}}
		return client.New(srv.URL, client.WithHTTPClient(hc))
	}
}
