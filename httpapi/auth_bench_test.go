package httpapi_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/httpapi"
	"github.com/followgraph/followgraph/memgraph"
)

// discardWriter is a ResponseWriter that keeps nothing but the status.
type discardWriter struct {
	h      http.Header
	status int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *discardWriter) WriteHeader(status int)      { w.status = status }

// BenchmarkServeHTTP_Auth: what WithAuth adds to a request, in process (no
// connection): ServeHTTP of a following page of 20 without authentication,
// with a service token, and with a user token verified before.
func BenchmarkServeHTTP_Auth(b *testing.B) {
	g := memgraph.New()
	for i := range 50 {
		if _, err := g.Follow(b.Context(), 1, followgraph.UserID(2+i)); err != nil {
			b.Fatal(err)
		}
	}
	af := newAuthFixture(b)
	user := "Bearer " + af.userToken("1", time.Now().Add(time.Hour))
	for _, mode := range []struct{ name, authz string }{
		{"NoAuth", ""},
		{"ServiceToken", "Bearer " + readToken},
		{"UserToken", user},
	} {
		b.Run(mode.name, func(b *testing.B) {
			var opts []httpapi.Option
			if mode.authz != "" {
				opts = append(opts, httpapi.WithAuth(af.auth))
			}
			srv := httpapi.NewServer(g, opts...)
			req := httptest.NewRequest("GET", "/v1/users/1/following?limit=20", nil)
			if mode.authz != "" {
				req.Header.Set("Authorization", mode.authz)
			}
			b.ReportAllocs()
			for b.Loop() {
				w := &discardWriter{h: make(http.Header)}
				srv.ServeHTTP(w, req)
				if w.status != http.StatusOK {
					b.Fatalf("status %d", w.status)
				}
			}
		})
	}
}
