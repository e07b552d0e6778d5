package auth

import (
	"crypto/elliptic"
	"crypto/x509"
	"encoding/pem"
	"reflect"
	"strings"
	"testing"
)

func TestParseKeys(t *testing.T) {
	ed, ec, rs := edKey().public(), ecKey().public(), rsaKey().public()

	t.Run("PEM", func(t *testing.T) {
		got, err := parseKeys([]byte("the identity service's keys\n" + pemOf(t, ed, ec, rs) + "\n\n"))
		if err != nil {
			t.Fatal(err)
		}
		want := []publicKey{{"", algEdDSA, ed}, {"", algES256, ec}, {"", algRS256, rs}}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("parseKeys: got %v, want %v", got, want)
		}
	})

	t.Run("JWKS", func(t *testing.T) {
		file := jwksOf(t,
			jwkOf(t, ed, "ed", nil),
			jwkOf(t, ec, "ec", map[string]string{"alg": "ES256", "use": "sig"}),
			jwkOf(t, rs, "rsa-enc", map[string]string{"use": "enc"}), // skipped
			jwkOf(t, rs, "rsa", map[string]string{"alg": "RS256"}),
		)
		got, err := parseKeys([]byte("  \n" + file))
		if err != nil {
			t.Fatal(err)
		}
		want := []publicKey{{"ed", algEdDSA, ed}, {"ec", algES256, ec}, {"rsa", algRS256, rs}}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("parseKeys: got %v, want %v", got, want)
		}
	})

	p384 := newECDSA(elliptic.P384()).Public()
	small := newRSA(1024).Public()
	der, err := x509.MarshalPKCS8PrivateKey(edKey().key)
	if err != nil {
		t.Fatal(err)
	}
	private := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	for _, tc := range []struct{ name, file, wantErr string }{
		{"Empty", "", "neither a JWKS nor any PEM block"},
		{"NotPEM", "hello\n", "neither a JWKS nor any PEM block"},
		{"PrivatePEM", pemOf(t, ed) + private, `PEM block 2 is a "PRIVATE KEY", not a PUBLIC KEY`},
		{"BrokenPEM", "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n", "PEM block 1:"},
		{"TextAfterPEM", pemOf(t, ed) + "-----BEGIN PUBLIC KEY-----\n", "PEM block 2 is not complete"},
		{"P384", pemOf(t, ed, p384), "PEM block 2: an ECDSA key on P-384: only P-256 (ES256) is accepted"},
		{"SmallRSA", pemOf(t, small), "PEM block 1: an RSA key of 1024 bits: at least 2048 are needed"},
		{"NotJSON", "{keys: []}", "not a JWKS"},
		{"NoKeys", `{"keys": []}`, "a JWKS with no signing key"},
		{"OnlyEncryption", jwksOf(t, jwkOf(t, rs, "enc", map[string]string{"use": "enc"})), "a JWKS with no signing key"},
		{"PrivateJWK", jwksOf(t, jwkOf(t, ed, "a", nil), jwkOf(t, ed, "b", map[string]string{"d": "AAAA"})), `JWKS key 2 (kid "b"): a private key`},
		{"WrongAlg", jwksOf(t, jwkOf(t, rs, "r", map[string]string{"alg": "PS256"})), `JWKS key 1 (kid "r"): alg "PS256": a key of this kind verifies RS256 only`},
		{"HMACKey", `{"keys": [{"kty": "oct", "k": "c2VjcmV0"}]}`, `kty "oct", crv "": only OKP Ed25519, EC P-256 and RSA keys are accepted`},
		{"P384JWK", `{"keys": [{"kty": "EC", "crv": "P-384", "x": "AA", "y": "AA"}]}`, `kty "EC", crv "P-384"`},
		{"ShortEd25519", `{"keys": [{"kty": "OKP", "crv": "Ed25519", "x": "AAAA"}]}`, "an Ed25519 key of 3 bytes, not 32"},
		{"BadBase64", `{"keys": [{"kty": "OKP", "crv": "Ed25519", "x": "a+b/"}]}`, `field "x" is not base64url`},
		{"NotOnCurve", `{"keys": [{"kty": "EC", "crv": "P-256", "x": "` + strings.Repeat("A", 43) + `", "y": "` + strings.Repeat("A", 42) + `E"}]}`, "a P-256 key:"},
		{"EvenExponent", jwksOf(t, jwkOf(t, rs, "r", map[string]string{"e": "AAI"})), "exponent e is not an odd number"},
		{"SmallRSAJWK", jwksOf(t, jwkOf(t, small, "r", nil)), "an RSA key of 1024 bits"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseKeys([]byte(tc.file))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %v, want %q", err, tc.wantErr)
			}
		})
	}
}
