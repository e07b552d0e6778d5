package console_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/followgraph/followgraph/console"
	"github.com/followgraph/followgraph/httpapi"
	"github.com/followgraph/followgraph/memgraph"
)

// BenchmarkMount is what the console costs the API's requests when no
// page is open: "Check" is Mount in front of a handler that does nothing
// ("Nothing") on a request that is not the console's; "API" is a read of
// the counts answered by the real API, what that cost is a part of.
func BenchmarkMount(b *testing.B) {
	g := memgraph.New()
	if _, err := g.Follow(b.Context(), 1, 2); err != nil {
		b.Fatal(err)
	}
	api := httpapi.NewServer(g)
	nothing := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	req := httptest.NewRequest(http.MethodGet, "/v1/users/1", nil)
	b.Run("Nothing", func(b *testing.B) {
		for b.Loop() {
			nothing.ServeHTTP(nil, req)
		}
	})
	b.Run("Check", func(b *testing.B) {
		h := console.Mount(nothing)
		for b.Loop() {
			h.ServeHTTP(nil, req)
		}
	})
	b.Run("API", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			w := httptest.NewRecorder()
			api.ServeHTTP(w, req)
			if w.Code != http.StatusOK {
				b.Fatal(w.Code)
			}
		}
	})
}
