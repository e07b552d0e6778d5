package client_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/client"
	"github.com/followgraph/followgraph/httpapi"
	"github.com/followgraph/followgraph/memgraph"
)

// TestClient_TLSAndToken: over HTTPS, with its bearer token on every
// request.
func TestClient_TLSAndToken(t *testing.T) {
	api := httpapi.NewServer(memgraph.New())
	var seen []string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.Header.Get("Authorization"))
		api.ServeHTTP(w, r)
	}))
	defer srv.Close()
	roots := srv.Client().Transport.(*http.Transport).TLSClientConfig
	c := client.New(srv.URL, client.WithTLS(roots), client.WithToken("s3cret"))
	ctx := context.Background()
	if _, err := c.Follow(ctx, 1, 2); err != nil {
		t.Fatal(err)
	}
	if counts, err := c.Counts(ctx, []followgraph.UserID{1}); err != nil || counts[0].FollowingCount != 1 {
		t.Fatalf("Counts over TLS: %+v, %v", counts, err)
	}
	if len(seen) != 2 || seen[0] != "Bearer s3cret" || seen[1] != "Bearer s3cret" {
		t.Fatalf("Authorization headers %q, want the token on both requests", seen)
	}
	if _, err := client.New(srv.URL).Follow(ctx, 1, 3); err == nil {
		t.Fatal("a client that does not trust the server's certificate was answered")
	}
}
