package main

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/followgraph/followgraph/internal/tlsfiles"
	"github.com/followgraph/followgraph/internal/tlsfiles/tlsfilestest"
)

// serverSerial returns the serial number of the certificate the server at
// addr presents, or the handshake's error.
func serverSerial(addr string, cfg *tls.Config) (int64, error) {
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].SerialNumber.Int64(), nil
}

// TestServe_TLS: with --tls-cert and --tls-key the API is served over
// HTTPS only; a certificate renewed on disk is served from a new
// connection within seconds, without a restart.
func TestServe_TLS(t *testing.T) {
	ca := tlsfilestest.NewCA(t, "ca")
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "server.pem"), filepath.Join(dir, "server.key")
	first := ca.Issue(t, cert, key)
	roots, err := tlsfiles.Client(ca.File, "", "")
	if err != nil {
		t.Fatal(err)
	}
	s := launch(t, t.TempDir(), launchOptions{args: []string{"--tls-cert", cert, "--tls-key", key}, tls: roots})
	ctx := context.Background()
	if _, err := s.client.Follow(ctx, 1, 2); err != nil {
		t.Fatalf("a follow over HTTPS: %v", err)
	}
	addr := s.url[len("https://"):]
	if resp, err := http.Get("http://" + addr + "/v1/users/1"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Fatal("plain HTTP was answered 200 on a TLS port")
		}
	}
	if got, err := serverSerial(addr, roots); err != nil || got != first {
		t.Fatalf("certificate served: %d, %v; want %d", got, err, first)
	}
	second := ca.Issue(t, cert, key)
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err := serverSerial(addr, roots)
		if err == nil && got == second {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("certificate %d (%v) 10 s after it was renewed as %d", got, err, second)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := s.client.IsFollowing(ctx, 1, 2); err != nil {
		t.Fatalf("a read after the renewal: %v", err)
	}
}

// TestServe_MutualTLS: with --tls-client-ca a client must present a
// certificate of that CA.
func TestServe_MutualTLS(t *testing.T) {
	ca, other := tlsfilestest.NewCA(t, "ca"), tlsfilestest.NewCA(t, "other")
	dir := t.TempDir()
	path := func(name string) string { return filepath.Join(dir, name) }
	ca.Issue(t, path("server.pem"), path("server.key"))
	ca.Issue(t, path("client.pem"), path("client.key"))
	other.Issue(t, path("stranger.pem"), path("stranger.key"))
	withCert, err := tlsfiles.Client(ca.File, path("client.pem"), path("client.key"))
	if err != nil {
		t.Fatal(err)
	}
	s := launch(t, t.TempDir(), launchOptions{args: []string{"--tls-cert", path("server.pem"), "--tls-key", path("server.key"),
		"--tls-client-ca", ca.File}, tls: withCert})
	if _, err := s.client.Follow(context.Background(), 1, 2); err != nil {
		t.Fatalf("a follow with a client certificate of the CA: %v", err)
	}
	for name, cfg := range map[string][2]string{"no certificate": {}, "another CA's": {path("stranger.pem"), path("stranger.key")}} {
		c, err := tlsfiles.Client(ca.File, cfg[0], cfg[1])
		if err != nil {
			t.Fatal(err)
		}
		hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: c}}
		if resp, err := hc.Get(s.url + "/v1/users/1"); err == nil {
			resp.Body.Close()
			t.Errorf("a client with %s was answered %d", name, resp.StatusCode)
		}
	}
}
