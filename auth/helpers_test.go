package auth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// t0 is the time of the test clocks.
var t0 = time.Date(2026, time.December, 1, 12, 0, 0, 0, time.UTC)

// signer is a private key with the algorithm its tokens are signed with.
type signer struct {
	method jwt.SigningMethod
	key    crypto.Signer
}

func (s signer) public() crypto.PublicKey { return s.key.Public() }

// Keys made once for all the tests (an RSA key takes a while).
var (
	edKey  = sync.OnceValue(func() signer { return signer{jwt.SigningMethodEdDSA, newEd25519()} })
	edKey2 = sync.OnceValue(func() signer { return signer{jwt.SigningMethodEdDSA, newEd25519()} })
	ecKey  = sync.OnceValue(func() signer { return signer{jwt.SigningMethodES256, newECDSA(elliptic.P256())} })
	rsaKey = sync.OnceValue(func() signer { return signer{jwt.SigningMethodRS256, newRSA(2048)} })
)

func newEd25519() crypto.Signer {
	_, k, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		panic(err)
	}
	return k
}

func newECDSA(c elliptic.Curve) crypto.Signer {
	k, err := ecdsa.GenerateKey(c, rand.Reader)
	if err != nil {
		panic(err)
	}
	return k
}

func newRSA(bits int) crypto.Signer {
	k, err := rsa.GenerateKey(rand.Reader, bits)
	if err != nil {
		panic(err)
	}
	return k
}

// writeFile writes content to a new file in tb's temporary folder and
// returns its path.
func writeFile(tb testing.TB, name, content string) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		tb.Fatal(err)
	}
	return path
}

// rewrite replaces the content of the file at path.
func rewrite(tb testing.TB, path, content string) {
	tb.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		tb.Fatal(err)
	}
}

// pemOf returns the PEM PUBLIC KEY blocks of pubs.
func pemOf(tb testing.TB, pubs ...crypto.PublicKey) string {
	tb.Helper()
	var out []byte
	for _, pub := range pubs {
		der, err := x509.MarshalPKIXPublicKey(pub)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})...)
	}
	return string(out)
}

// jwkOf returns the JWK of pub, with kid and the fields in extra.
func jwkOf(tb testing.TB, pub crypto.PublicKey, kid string, extra map[string]string) map[string]string {
	tb.Helper()
	b64 := base64.RawURLEncoding.EncodeToString
	k := map[string]string{"kid": kid}
	switch p := pub.(type) {
	case ed25519.PublicKey:
		k["kty"], k["crv"], k["x"] = "OKP", "Ed25519", b64(p)
	case *ecdsa.PublicKey:
		raw, err := p.Bytes()
		if err != nil {
			tb.Fatal(err)
		}
		k["kty"], k["crv"], k["x"], k["y"] = "EC", "P-256", b64(raw[1:33]), b64(raw[33:])
	case *rsa.PublicKey:
		e := []byte{byte(p.E >> 16), byte(p.E >> 8), byte(p.E)}
		k["kty"], k["n"], k["e"] = "RSA", b64(p.N.Bytes()), b64(e)
	default:
		tb.Fatalf("no JWK for %T", pub)
	}
	for name, v := range extra {
		k[name] = v
	}
	return k
}

// jwksOf returns a JWKS of keys.
func jwksOf(tb testing.TB, keys ...map[string]string) string {
	tb.Helper()
	b, err := json.Marshal(map[string]any{"keys": keys})
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

// claims are a user token's claims: sub 42, valid for an hour from t0.
func claims() jwt.MapClaims {
	return jwt.MapClaims{"sub": "42", "exp": t0.Add(time.Hour).Unix(), "iat": t0.Unix()}
}

// sign returns the token of c signed by s, with the extra header fields.
func sign(tb testing.TB, s signer, c jwt.Claims, header map[string]any) string {
	tb.Helper()
	t := jwt.NewWithClaims(s.method, c)
	for k, v := range header {
		t.Header[k] = v
	}
	tok, err := t.SignedString(s.key)
	if err != nil {
		tb.Fatal(err)
	}
	return tok
}

// clock is a test clock that stands still until set.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// newAuth returns an Authenticator of cfg on a clock at t0.
func newAuth(tb testing.TB, cfg Config) (*Authenticator, *clock) {
	tb.Helper()
	c := &clock{now: t0}
	a, err := New(cfg, WithClock(c.Now))
	if err != nil {
		tb.Fatal(err)
	}
	return a, c
}

// cached returns how many users' tokens a remembers.
func (a *Authenticator) cached() int {
	v := a.state.Load().users
	if v == nil {
		return 0
	}
	n := 0
	for i := range v.cache.shards {
		sh := &v.cache.shards[i]
		sh.mu.RLock()
		n += len(sh.tokens)
		sh.mu.RUnlock()
	}
	return n
}
