package auth

import (
	"crypto/sha256"
	"errors"
	"slices"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/followgraph/followgraph"
)

// algs are the algorithms users' tokens may be signed with; each verifies
// with one kind of key only (see algOf).
var algs = []string{algEdDSA, algES256, algRS256}

// verifier verifies users' tokens with a set of keys, and remembers those
// it verified until they expire.
type verifier struct {
	keys     []publicKey
	issuer   string
	audience string
	parser   *jwt.Parser
	now      func() time.Time
	cache    tokenCache
}

func newVerifier(keys []publicKey, issuer, audience string, now func() time.Time) *verifier {
	opts := []jwt.ParserOption{
		jwt.WithValidMethods(algs),
		jwt.WithExpirationRequired(),
		jwt.WithLeeway(Leeway),
		jwt.WithTimeFunc(now),
		jwt.WithStrictDecoding(),
	}
	if issuer != "" {
		opts = append(opts, jwt.WithIssuer(issuer))
	}
	if audience != "" {
		opts = append(opts, jwt.WithAudience(audience))
	}
	v := &verifier{keys: keys, issuer: issuer, audience: audience, parser: jwt.NewParser(opts...), now: now}
	v.cache.init()
	return v
}

// Why a user token is not valid.
var (
	errAlg       = unauthenticated("the bearer token is signed with an algorithm this server does not accept (it accepts EdDSA, ES256 and RS256)")
	errNoKey     = unauthenticated("the bearer token's algorithm or key id (alg, kid) is that of none of this server's keys")
	errCrit      = unauthenticated("the bearer token has critical header parameters (crit), which this server does not know")
	errSignature = unauthenticated("the bearer token's signature does not verify with this server's keys")
	errNoExpiry  = unauthenticated("the bearer token has no expiry (exp)")
	errExpired   = unauthenticated("the bearer token has expired")
	errNotYet    = unauthenticated("the bearer token is not valid yet (nbf)")
	errIssuer    = unauthenticated("the bearer token is not from the expected issuer (iss)")
	errAudience  = unauthenticated("the bearer token is not meant for this service (aud)")
	errSubject   = unauthenticated("the bearer token's subject (sub) is not a user id")
)

func unauthenticated(msg string) *followgraph.Error {
	return &followgraph.Error{Code: followgraph.EUnauthenticated, Message: msg}
}

// verify returns the user of the JWT tok, whose SHA-256 is h, or why it
// is not valid.
func (v *verifier) verify(tok string, h [sha256.Size]byte) (followgraph.UserID, error) {
	now := v.now()
	if user, ok := v.cache.get(h, now); ok {
		return user, nil
	}
	var claims jwt.RegisteredClaims
	t, err := v.parser.ParseWithClaims(tok, &claims, v.keyOf)
	if err != nil {
		return 0, v.why(t, &claims, err)
	}
	user, err := followgraph.ParseUserID(claims.Subject)
	if err != nil {
		return 0, errSubject
	}
	v.cache.put(h, user, claims.ExpiresAt.Add(Leeway), now)
	return user, nil
}

// keyOf returns the keys that may have signed t: those of its algorithm,
// with its key id when both t and the key have one.
func (v *verifier) keyOf(t *jwt.Token) (any, error) {
	if _, ok := t.Header["crit"]; ok {
		return nil, errCrit
	}
	alg := t.Method.Alg()
	kid, _ := t.Header["kid"].(string)
	var set jwt.VerificationKeySet
	for _, k := range v.keys {
		if k.alg == alg && (kid == "" || k.kid == "" || k.kid == kid) {
			set.Keys = append(set.Keys, k.key)
		}
	}
	if len(set.Keys) == 0 {
		return nil, errNoKey
	}
	return set, nil
}

// why returns the error of Authenticate for err, the error of parsing t
// into claims.
func (v *verifier) why(t *jwt.Token, claims *jwt.RegisteredClaims, err error) error {
	switch {
	case errors.Is(err, errCrit):
		return errCrit
	case errors.Is(err, errNoKey):
		return errNoKey
	case t == nil || errors.Is(err, jwt.ErrTokenMalformed):
		return ErrInvalid
	case t.Method == nil || !slices.Contains(algs, t.Method.Alg()):
		return errAlg
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		return errSignature
	case claims.ExpiresAt == nil:
		return errNoExpiry
	case errors.Is(err, jwt.ErrTokenExpired):
		return errExpired
	case errors.Is(err, jwt.ErrTokenNotValidYet):
		return errNotYet
	case v.issuer != "" && claims.Issuer != v.issuer:
		return errIssuer
	case v.audience != "" && !slices.Contains(claims.Audience, v.audience):
		return errAudience
	default:
		return ErrInvalid
	}
}
