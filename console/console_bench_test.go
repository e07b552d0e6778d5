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
// page is open: a read of the counts answered by the API alone ("API")
// and through Mount ("Mounted"), side by side in one run.
func BenchmarkMount(b *testing.B) {
	g := memgraph.New()
	if _, err := g.Follow(b.Context(), 1, 2); err != nil {
		b.Fatal(err)
	}
	api := httpapi.NewServer(g)
	for _, bc := range []struct {
		name string
		h    http.Handler
	}{{"API", api}, {"Mounted", console.Mount(api)}} {
		b.Run(bc.name, func(b *testing.B) {
			req := httptest.NewRequest(http.MethodGet, "/v1/users/1", nil)
			b.ReportAllocs()
			for b.Loop() {
				w := httptest.NewRecorder()
				bc.h.ServeHTTP(w, req)
				if w.Code != http.StatusOK {
					b.Fatal(w.Code)
				}
			}
		})
	}
}
