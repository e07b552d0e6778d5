package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/internal/tlsfiles"
	"github.com/followgraph/followgraph/internal/tlsfiles/tlsfilestest"
)

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
	if got, err := tlsfilestest.Serial(addr, roots); err != nil || got != first {
		t.Fatalf("certificate served: %d, %v; want %d", got, err, first)
	}
	tlsfilestest.WaitSerial(t, addr, roots, ca.Issue(t, cert, key), 10*time.Second)
	if _, err := s.client.IsFollowing(ctx, 1, 2); err != nil {
		t.Fatalf("a read after the renewal: %v", err)
	}
}

// TestServe_MutualTLS: with --tls-client-ca a client must present a
// certificate of that CA.
func TestServe_MutualTLS(t *testing.T) {
	m := tlsfilestest.NewMutual(t)
	withCert, err := tlsfiles.Client(m.CA.File, m.ClientCert, m.ClientKey)
	if err != nil {
		t.Fatal(err)
	}
	s := launch(t, t.TempDir(), launchOptions{args: []string{"--tls-cert", m.ServerCert, "--tls-key", m.ServerKey,
		"--tls-client-ca", m.CA.File}, tls: withCert})
	if _, err := s.client.Follow(context.Background(), 1, 2); err != nil {
		t.Fatalf("a follow with a client certificate of the CA: %v", err)
	}
	for name, cfg := range map[string][2]string{"no certificate": {}, "another CA's": {m.StrangerCert, m.StrangerKey}} {
		c, err := tlsfiles.Client(m.CA.File, cfg[0], cfg[1])
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

// call sends method path to s with the bearer token (none when ""), and
// returns the status and the WWW-Authenticate header.
func call(t *testing.T, s *server, method, path, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, s.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("WWW-Authenticate")
}

// userToken signs a user token for sub with key, valid from nbf to exp.
func userToken(t *testing.T, key ed25519.PrivateKey, sub, iss string, nbf, exp time.Time) string {
	t.Helper()
	tok, err := jwt.NewWithClaims(jwt.SigningMethodEdDSA, jwt.RegisteredClaims{
		Subject: sub, Issuer: iss, NotBefore: jwt.NewNumericDate(nbf), ExpiresAt: jwt.NewNumericDate(exp),
	}).SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestServe_Auth: with --auth-tokens and --auth-jwt-keys every route
// class against every kind of token, users' tokens writing only as
// themselves, bad tokens refused, and the token file re-read on SIGHUP
// without a restart.
func TestServe_Auth(t *testing.T) {
	dir := t.TempDir()
	tokens, keys := filepath.Join(dir, "tokens"), filepath.Join(dir, "keys.pem")
	writeSum := sha256.Sum256([]byte("writer-token-0123456789"))
	writeFile(t, tokens, "# the service tokens\nreader-token-0123456789 read reader\n"+
		"sha256:"+hex.EncodeToString(writeSum[:])+" write writer\nadmin-token-0123456789 admin ops\n")
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, keys, string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})))
	s := launch(t, t.TempDir(), launchOptions{args: []string{"--auth-tokens", tokens, "--auth-jwt-keys", keys, "--auth-jwt-issuer", "https://id.example"}})
	now := time.Now()
	user5 := userToken(t, priv, "5", "https://id.example", now.Add(-time.Minute), now.Add(time.Hour))
	_, other, _ := ed25519.GenerateKey(rand.Reader)
	for _, tt := range []struct {
		name, method, path, token string
		want                      int
	}{
		{"HealthOpen", "GET", "/healthz", "", 200},
		{"ReadyOpen", "GET", "/readyz", "", 200},
		{"NoToken", "GET", "/v1/users/1", "", 401},
		{"UnknownToken", "GET", "/v1/users/1", "not-a-token-0123456789", 401},
		{"ReadScopeReads", "GET", "/v1/users/1/following", "reader-token-0123456789", 200},
		{"ReadScopeRelationsByPost", "POST", "/v1/users/1/relations", "reader-token-0123456789", 400}, // read allowed; the empty body is bad
		{"ReadScopeWrites", "PUT", "/v1/users/1/following/2", "reader-token-0123456789", 403},
		{"WriteScopeWrites", "PUT", "/v1/users/1/following/2", "writer-token-0123456789", 200},
		{"WriteScopeReads", "GET", "/v1/users/1", "writer-token-0123456789", 403},
		{"AdminWrites", "DELETE", "/v1/users/1/following/2", "admin-token-0123456789", 200},
		{"UserReads", "GET", "/v1/users/1", user5, 200},
		{"UserWritesAsItself", "PUT", "/v1/users/5/following/6", user5, 200},
		{"UserWritesAsAnother", "PUT", "/v1/users/6/following/5", user5, 403},
		{"UserExpired", "GET", "/v1/users/1", userToken(t, priv, "5", "https://id.example", now.Add(-2*time.Hour), now.Add(-time.Hour)), 401},
		{"UserNotYetValid", "GET", "/v1/users/1", userToken(t, priv, "5", "https://id.example", now.Add(time.Hour), now.Add(2*time.Hour)), 401},
		{"UserWrongIssuer", "GET", "/v1/users/1", userToken(t, priv, "5", "https://evil.example", now.Add(-time.Minute), now.Add(time.Hour)), 401},
		{"UserUnknownKey", "GET", "/v1/users/1", userToken(t, other, "5", "https://id.example", now.Add(-time.Minute), now.Add(time.Hour)), 401},
		{"UserAlgNone", "GET", "/v1/users/1", unsigned(t, "5"), 401},
		{"MetricsNeedsAdmin", "GET", "/metrics", "reader-token-0123456789", 403},
		{"MetricsAdmin", "GET", "/metrics", "admin-token-0123456789", 200},
	} {
		status, challenge := call(t, s, tt.method, tt.path, tt.token)
		if status != tt.want {
			t.Errorf("%s: %s %s answered %d, want %d", tt.name, tt.method, tt.path, status, tt.want)
		}
		if status == 401 && !strings.HasPrefix(challenge, "Bearer") {
			t.Errorf("%s: a 401 with WWW-Authenticate %q, want a Bearer challenge", tt.name, challenge)
		}
	}
	if e, err := s.client.IsFollowing(context.Background(), 6, 5); err == nil && e.Following {
		t.Error("a refused write took effect")
	}
	if strings.Contains(s.logs.String(), "0123456789") {
		t.Errorf("a token in the log:\n%s", s.logs)
	}

	// SIGHUP: a new file is read without a restart; a broken one keeps
	// the tokens as they were.
	writeFile(t, tokens, "new-reader-token-0123456789 read\n")
	s.cmd.Process.Signal(syscall.SIGHUP)
	waitStatus(t, s, "new-reader-token-0123456789", 200)
	if status, _ := call(t, s, "GET", "/v1/users/1", "reader-token-0123456789"); status != 401 {
		t.Errorf("a token removed from the file and SIGHUP: %d, want 401", status)
	}
	writeFile(t, tokens, "broken-token-0123456789 read,superuser\n")
	s.cmd.Process.Signal(syscall.SIGHUP)
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(s.logs.String(), "could not be re-read") {
		if time.Now().After(deadline) {
			t.Fatalf("a broken token file on SIGHUP was not reported:\n%s", s.logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if status, _ := call(t, s, "GET", "/v1/users/1", "new-reader-token-0123456789"); status != 200 {
		t.Errorf("after a broken file on SIGHUP the last good token answers %d, want 200", status)
	}
	select {
	case <-s.done:
		t.Fatal("SIGHUP ended the process")
	default:
	}
}

// unsigned returns a token with alg none for sub.
func unsigned(t *testing.T, sub string) string {
	t.Helper()
	tok, err := jwt.NewWithClaims(jwt.SigningMethodNone, jwt.RegisteredClaims{Subject: sub,
		ExpiresAt: jwt.NewNumericDate(time.Now().Add(time.Hour))}).SignedString(jwt.UnsafeAllowNoneSignatureType)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// waitStatus waits until a read with token answers want.
func waitStatus(t *testing.T, s *server, token string, want int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		status, _ := call(t, s, "GET", "/v1/users/1", token)
		if status == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("a read answered %d 10 s after SIGHUP, want %d:\n%s", status, want, s.logs)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestServe_ProtectedByDefault: serve refuses to listen beyond loopback
// without authentication, saying why, unless --insecure-no-auth says the
// network is trusted.
func TestServe_ProtectedByDefault(t *testing.T) {
	port := freeAddr(t)[len("127.0.0.1:"):]
	out, err := exec.Command(binary, "serve", "--addr", "0.0.0.0:"+port, "--data", t.TempDir()).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "refusing to serve 0.0.0.0:"+port+" without authentication") ||
		!strings.Contains(string(out), "--insecure-no-auth") {
		t.Fatalf("serve on 0.0.0.0 without authentication: %v\n%s", err, out)
	}
	s := launch(t, t.TempDir(), launchOptions{bindAll: true, args: []string{"--insecure-no-auth"}})
	if _, err := s.client.Follow(context.Background(), 1, 2); err != nil {
		t.Fatalf("with --insecure-no-auth: %v", err)
	}
}

// TestServe_OperatorPort: with --admin-addr the metrics and the profiles
// are served there and not on the API's port.
func TestServe_OperatorPort(t *testing.T) {
	admin := freeAddr(t)
	s := launch(t, t.TempDir(), launchOptions{args: []string{"--admin-addr", admin, "--pprof"}})
	for path, want := range map[string]int{"/metrics": 404, "/debug/pprof/": 404, "/healthz": 200} {
		if status, _ := call(t, s, "GET", path, ""); status != want {
			t.Errorf("API port %s: %d, want %d", path, status, want)
		}
	}
	for _, path := range []string{"/metrics", "/debug/pprof/", "/healthz", "/readyz"} {
		resp, err := http.Get("http://" + admin + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || path == "/metrics" && !strings.Contains(string(body), "followgraph_build_info") {
			t.Errorf("operator port %s: %d", path, resp.StatusCode)
		}
	}
}

// TestServe_RateAcrossNodes: with --redis, --write-rate holds across the
// nodes: one user writing through two nodes gets the rate once, not
// twice.
func TestServe_RateAcrossNodes(t *testing.T) {
	d := newDeployment(t, "", "", "")
	a := d.node("--write-rate", "2", "--write-burst", "4")
	b := d.node("--write-rate", "2", "--write-burst", "4")
	ctx := context.Background()
	begin := time.Now()
	ok, limited := 0, 0
	for i := range 40 {
		s := a
		if i%2 == 1 {
			s = b
		}
		_, err := s.client.Follow(ctx, 1, fg.UserID(100+i))
		var fe *fg.Error
		switch {
		case err == nil:
			ok++
		case errors.As(err, &fe) && fe.Code == fg.ERateLimited:
			limited++
		default:
			t.Fatalf("write %d: %v", i, err)
		}
	}
	// The burst, and 2 a second since the first write.
	if most := 4 + int(2*time.Since(begin).Seconds()) + 1; ok > most || limited == 0 {
		t.Fatalf("%d writes of one user through two nodes accepted in %v (%d refused), want at most %d", ok, time.Since(begin), limited, most)
	}
	if _, err := b.client.Follow(ctx, 2, 3); err != nil {
		t.Fatalf("another user's write: %v", err)
	}
}

// TestServe_BackendsOverTLS: Redis over rediss:// and NATS over tls://,
// each server with a certificate of a CA the process trusts through
// SSL_CERT_FILE (Go's standard way to name the roots).
func TestServe_BackendsOverTLS(t *testing.T) {
	ca := tlsfilestest.NewCA(t, "backends")
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "server.pem"), filepath.Join(dir, "server.key")
	ca.Issue(t, cert, key)
	r := startRedis(t, "--port", "0", "--tls-port", "PORT", "--tls-cert-file", cert, "--tls-key-file", key,
		"--tls-ca-cert-file", ca.File, "--tls-auth-clients", "no")
	n := startNATS(t, "--tls", "--tlscert", cert, "--tlskey", key)
	s := launch(t, t.TempDir(), launchOptions{env: []string{"SSL_CERT_FILE=" + ca.File},
		args: []string{"--redis", "rediss://127.0.0.1:" + r.port, "--nats", strings.Replace(n.url, "nats://", "tls://", 1)}})
	ctx := context.Background()
	if _, err := s.client.Follow(ctx, 1, 2); err != nil {
		t.Fatalf("a follow through Redis and NATS over TLS: %v", err)
	}
	if e, err := s.client.IsFollowing(ctx, 1, 2); err != nil || !e.Following {
		t.Fatalf("1→2 read back: %+v, %v", e, err)
	}
	if !strings.Contains(s.logs.String(), "rediss://127.0.0.1:"+r.port) {
		t.Errorf("the start-up line does not name the Redis over TLS:\n%s", s.logs)
	}
}
