package httpapi_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/followgraph/followgraph"
)

// TestOpenAPI checks api/openapi.yaml itself: it is a valid OpenAPI 3.1
// document, its error codes are those of the domain, and the server has
// exactly its operations: every method on every path of the document is
// answered as the document says (a 405 with the document's methods in
// Allow where it has no such operation).
func TestOpenAPI(t *testing.T) {
	s := specOf(t)
	if s.doc.OpenAPI != "3.1.0" {
		t.Errorf("api/openapi.yaml is OpenAPI %s, want 3.1.0", s.doc.OpenAPI)
	}

	codes := []string{
		followgraph.EInvalidID, followgraph.EInvalidArgument, followgraph.EInvalidCursor, followgraph.ESelfFollow,
		followgraph.ENotFound, "method_not_allowed", followgraph.EFollowingLimit, followgraph.ETooLarge,
		followgraph.ERateLimited, followgraph.EUnavailable, followgraph.EInternal,
		"unauthenticated", "forbidden", // docs/API.md's "Authentication"; the server answers them once configured with it
	}
	var enum []string
	for _, c := range s.doc.Components.Schemas["Error"].Value.Properties["error"].Value.Properties["code"].Value.Enum {
		enum = append(enum, c.(string))
	}
	slices.Sort(codes)
	slices.Sort(enum)
	if !slices.Equal(codes, enum) {
		t.Errorf("the error codes of api/openapi.yaml are %v, want %v", enum, codes)
	}

	f := newFixture(t, fixtureConfig{})
	f.follow(1, 2)
	methods := []string{"GET", "HEAD", "PUT", "POST", "DELETE", "PATCH", "OPTIONS"}
	for path := range s.doc.Paths.Map() {
		target := strings.NewReplacer("{user}", "1", "{target}", "2", "{other}", "2").Replace(path)
		for _, m := range methods {
			r := request{method: m, target: target}
			if m == "POST" {
				r.body = []byte(`{"ids": ["2"]}`)
			}
			if path == "/metrics" && (m == "GET" || m == "HEAD") {
				continue // Prometheus text; see TestServer_Metrics
			}
			a := f.do(r)
			if op := s.doc.Paths.Find(path).GetOperation(m); op != nil && a.status != http.StatusOK {
				t.Errorf("%s %s (operation %s): %d %s", m, target, op.OperationID, a.status, a.body)
			}
		}
	}
}
