package auth

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
)

// Algorithms of users' tokens: one for each kind of key.
const (
	algEdDSA = "EdDSA" // Ed25519
	algES256 = "ES256" // ECDSA on P-256 with SHA-256
	algRS256 = "RS256" // RSA PKCS #1 v1.5 with SHA-256
)

// minRSABits is the smallest RSA key accepted.
const minRSABits = 2048

// publicKey is a key that users' tokens may be signed with, and the one
// algorithm it verifies.
type publicKey struct {
	kid string // "" when the file gives none: tried for any token
	alg string
	key crypto.PublicKey
}

// readKeys reads the key file at path (see parseKeys).
func readKeys(path string) ([]publicKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("auth: JWT key file: %w", err)
	}
	keys, err := parseKeys(b)
	if err != nil {
		return nil, fmt.Errorf("auth: JWT key file %s: %w", path, err)
	}
	return keys, nil
}

// parseKeys parses a file of public keys: a JWKS (a JSON object whose
// "keys" are JWKs, RFC 7517) or one or more PEM blocks of type PUBLIC KEY
// (PKIX, as x509.MarshalPKIXPublicKey writes them), with any text around
// them. A key is Ed25519
// (EdDSA), ECDSA on P-256 (ES256) or RSA of at least 2048 bits (RS256).
// The file is an error when it has no key, a key of another kind, a
// private key, or a block or key it cannot read; a JWK whose "use" is not
// "sig" is skipped.
func parseKeys(b []byte) ([]publicKey, error) {
	trimmed := bytes.TrimSpace(b)
	if len(trimmed) > 0 && trimmed[0] == '{' {
		return parseJWKS(trimmed)
	}
	return parsePEM(b)
}

func parsePEM(b []byte) ([]publicKey, error) {
	var keys []publicKey
	rest := b
	for n := 1; ; n++ {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "PUBLIC KEY" {
			return nil, fmt.Errorf("PEM block %d is a %q, not a PUBLIC KEY", n, block.Type)
		}
		pub, err := x509.ParsePKIXPublicKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("PEM block %d: %w", n, err)
		}
		alg, err := algOf(pub)
		if err != nil {
			return nil, fmt.Errorf("PEM block %d: %w", n, err)
		}
		keys = append(keys, publicKey{alg: alg, key: pub})
	}
	if bytes.Contains(rest, []byte("-----BEGIN")) {
		return nil, fmt.Errorf("PEM block %d is not complete", len(keys)+1)
	}
	if len(keys) == 0 {
		return nil, errors.New("neither a JWKS nor any PEM block of type PUBLIC KEY")
	}
	return keys, nil
}

// algOf returns the algorithm that pub verifies, or an error for a key of
// a kind this package does not take.
func algOf(pub crypto.PublicKey) (string, error) {
	switch k := pub.(type) {
	case ed25519.PublicKey:
		return algEdDSA, nil
	case *ecdsa.PublicKey:
		if k.Curve != elliptic.P256() {
			return "", fmt.Errorf("an ECDSA key on %s: only P-256 (ES256) is accepted", k.Curve.Params().Name)
		}
		return algES256, nil
	case *rsa.PublicKey:
		if k.N.BitLen() < minRSABits {
			return "", fmt.Errorf("an RSA key of %d bits: at least %d are needed", k.N.BitLen(), minRSABits)
		}
		return algRS256, nil
	default:
		return "", fmt.Errorf("a key of type %T: only Ed25519, ECDSA P-256 and RSA keys are accepted", pub)
	}
}

// jwk is the part of a JSON Web Key (RFC 7517, 7518, 8037) that the keys
// accepted have, and D, whose presence means a private key.
type jwk struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Y   string `json:"y"`
	N   string `json:"n"`
	E   string `json:"e"`
	D   string `json:"d"`
	Kid string `json:"kid"`
	Alg string `json:"alg"`
	Use string `json:"use"`
}

func parseJWKS(b []byte) ([]publicKey, error) {
	var set struct {
		Keys []jwk `json:"keys"`
	}
	if err := json.Unmarshal(b, &set); err != nil {
		return nil, fmt.Errorf("not a JWKS: %w", err)
	}
	var keys []publicKey
	for i, k := range set.Keys {
		if k.Use != "" && k.Use != "sig" {
			continue // an encryption key, say: no token is signed with it
		}
		pub, err := k.publicKey()
		if err != nil {
			return nil, fmt.Errorf("JWKS key %d (kid %q): %w", i+1, k.Kid, err)
		}
		alg, err := algOf(pub)
		if err != nil {
			return nil, fmt.Errorf("JWKS key %d (kid %q): %w", i+1, k.Kid, err)
		}
		if k.Alg != "" && k.Alg != alg {
			return nil, fmt.Errorf("JWKS key %d (kid %q): alg %q: a key of this kind verifies %s only", i+1, k.Kid, k.Alg, alg)
		}
		keys = append(keys, publicKey{kid: k.Kid, alg: alg, key: pub})
	}
	if len(keys) == 0 {
		return nil, errors.New("a JWKS with no signing key")
	}
	return keys, nil
}

func (k jwk) publicKey() (crypto.PublicKey, error) {
	if k.D != "" {
		return nil, errors.New("a private key: the file must hold public keys only")
	}
	switch {
	case k.Kty == "OKP" && k.Crv == "Ed25519":
		x, err := b64(k.X, "x")
		if err != nil {
			return nil, err
		}
		if len(x) != ed25519.PublicKeySize {
			return nil, fmt.Errorf("an Ed25519 key of %d bytes, not %d", len(x), ed25519.PublicKeySize)
		}
		return ed25519.PublicKey(x), nil
	case k.Kty == "EC" && k.Crv == "P-256":
		x, err := b64(k.X, "x")
		if err != nil {
			return nil, err
		}
		y, err := b64(k.Y, "y")
		if err != nil {
			return nil, err
		}
		if len(x) != 32 || len(y) != 32 {
			return nil, errors.New("a P-256 key whose x and y are not 32 bytes each")
		}
		pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), append(append([]byte{4}, x...), y...))
		if err != nil {
			return nil, fmt.Errorf("a P-256 key: %w", err)
		}
		return pub, nil
	case k.Kty == "RSA":
		n, err := b64(k.N, "n")
		if err != nil {
			return nil, err
		}
		e, err := b64(k.E, "e")
		if err != nil {
			return nil, err
		}
		exp := new(big.Int).SetBytes(e)
		if !exp.IsInt64() || exp.Int64() < 3 || exp.Int64() > 1<<31-1 || exp.Bit(0) == 0 {
			return nil, errors.New("an RSA key whose exponent e is not an odd number from 3 to 2^31-1")
		}
		return &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(exp.Int64())}, nil
	default:
		return nil, fmt.Errorf("kty %q, crv %q: only OKP Ed25519, EC P-256 and RSA keys are accepted", k.Kty, k.Crv)
	}
}

// b64 decodes the base64url field v (named name) of a JWK.
func b64(v, name string) ([]byte, error) {
	b, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil || len(b) == 0 {
		return nil, fmt.Errorf("field %q is not base64url", name)
	}
	return b, nil
}
