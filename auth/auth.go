// Package auth says who sends a request from its Authorization header: a
// service, by a token from the operator's token file, with scopes; or a
// user, by a JWT that the product's identity service signed, whose sub is
// the user's id. Package httpapi decides with the Principal what the
// request may do, as docs/API.md ("Authentication") says.
//
// The token file has one service token a line, "<token> <scopes> [name]":
// the token in clear or as "sha256:" and the 64 hex digits of its SHA-256
// (printf %s "$TOKEN" | sha256sum), its scopes (read, write, admin) joined
// by commas, and a name for the logs; blank lines and lines starting with
// # are skipped. The key file is a JWKS, or PEM blocks of type PUBLIC KEY,
// of Ed25519, ECDSA P-256 or RSA keys (EdDSA, ES256, RS256).
//
// Tokens are kept only as SHA-256 hashes, and no error or log line of this
// package holds a token.
package auth

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/followgraph/followgraph"
)

// Leeway is how far the clocks of the identity service and of this server
// may differ: a user token is accepted up to Leeway after its exp and from
// Leeway before its nbf.
const Leeway = 30 * time.Second

// Scopes is a set of the scopes of a service token.
type Scopes uint8

const (
	ScopeRead  Scopes = 1 << iota // every read
	ScopeWrite                    // writes as any user
	ScopeAdmin                    // administration, and every read and write
)

var scopeNames = []struct {
	s    Scopes
	name string
}{{ScopeRead, "read"}, {ScopeWrite, "write"}, {ScopeAdmin, "admin"}}

// String returns the scopes as the token file writes them: "read,write".
func (s Scopes) String() string {
	var names []string
	for _, n := range scopeNames {
		if s&n.s != 0 {
			names = append(names, n.name)
		}
	}
	return strings.Join(names, ",")
}

// Principal is who sent a request: a service (Name, from the token file,
// and its Scopes) or a user (User, not 0).
type Principal struct {
	Name   string
	Scopes Scopes
	User   followgraph.UserID
}

// CanRead reports whether p may read: any user, and a service with scope
// read or admin.
func (p Principal) CanRead() bool { return p.User != 0 || p.Scopes&(ScopeRead|ScopeAdmin) != 0 }

// CanWrite reports whether p may write as user: a service with scope write
// or admin as any user, and a user as itself only. A user of 0 (a write
// that names no valid user) is written by services only.
func (p Principal) CanWrite(user followgraph.UserID) bool {
	return p.Scopes&(ScopeWrite|ScopeAdmin) != 0 || (p.User != 0 && p.User == user)
}

// IsAdmin reports whether p is a service with scope admin.
func (p Principal) IsAdmin() bool { return p.Scopes&ScopeAdmin != 0 }

// String names p for a log line: "service NAME (read,write)" or "user 42".
func (p Principal) String() string {
	if p.User != 0 {
		return "user " + strconv.FormatInt(int64(p.User), 10)
	}
	return fmt.Sprintf("service %q (%s)", p.Name, p.Scopes)
}

// Config says where the Authenticator finds its tokens and keys.
type Config struct {
	// TokensFile holds the service tokens; "" for none.
	TokensFile string
	// JWTKeysFile holds the public keys that users' tokens are signed
	// with; "" for no user tokens.
	JWTKeysFile string
	// Issuer, when set, is the iss a user token must have.
	Issuer string
	// Audience, when set, is a value a user token's aud must hold.
	Audience string
}

// Authenticator checks the bearer token of a request against the service
// tokens and the users' keys of its Config. It is safe for concurrent use.
type Authenticator struct {
	cfg   Config
	now   func() time.Time
	mu    sync.Mutex // serializes Reload
	state atomic.Pointer[state]
}

// state is what the files said when last read, with the users' tokens
// verified since.
type state struct {
	services map[uint64][]service // by the first 8 bytes of the token's hash
	users    *verifier            // nil: no user tokens
}

type service struct {
	hash [sha256.Size]byte
	p    Principal
}

// Option configures an Authenticator.
type Option func(*Authenticator)

// WithClock sets the clock that users' tokens are checked against; the
// default is time.Now.
func WithClock(now func() time.Time) Option { return func(a *Authenticator) { a.now = now } }

// New reads the files of cfg and returns an Authenticator. It returns an
// error when cfg names neither file, when it sets Issuer or Audience
// without a JWTKeysFile, or when a file cannot be read or is not valid (the
// error says which file, and which line or key).
func New(cfg Config, opts ...Option) (*Authenticator, error) {
	if cfg.TokensFile == "" && cfg.JWTKeysFile == "" {
		return nil, errors.New("auth: no token file and no JWT key file: nothing could authenticate")
	}
	if cfg.JWTKeysFile == "" && (cfg.Issuer != "" || cfg.Audience != "") {
		return nil, errors.New("auth: a JWT issuer or audience without a JWT key file")
	}
	a := &Authenticator{cfg: cfg, now: time.Now}
	for _, o := range opts {
		o(a)
	}
	if err := a.Reload(); err != nil {
		return nil, err
	}
	return a, nil
}

// Reload reads the files of the Config again and, when both are valid,
// serves from them from then on: requests under way finish with what they
// started with, and users' tokens are verified anew with the new keys.
// When a file cannot be read or is not valid, it returns the error and
// keeps serving from what it read before.
func (a *Authenticator) Reload() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := &state{services: make(map[uint64][]service)}
	if a.cfg.TokensFile != "" {
		tokens, err := readTokens(a.cfg.TokensFile)
		if err != nil {
			return err
		}
		for _, t := range tokens {
			k := prefix(t.Hash)
			st.services[k] = append(st.services[k], service{hash: t.Hash, p: Principal{Name: t.Name, Scopes: t.Scopes}})
		}
	}
	if a.cfg.JWTKeysFile != "" {
		keys, err := readKeys(a.cfg.JWTKeysFile)
		if err != nil {
			return err
		}
		st.users = newVerifier(keys, a.cfg.Issuer, a.cfg.Audience, a.now)
	}
	a.state.Store(st)
	return nil
}

// Errors of Authenticate, each with code EUnauthenticated. Others name what
// is wrong with a token that was sent.
var (
	// ErrNoToken: the Authorization header is missing or holds no bearer token.
	ErrNoToken = &followgraph.Error{Code: followgraph.EUnauthenticated, Message: "this needs an Authorization header with a bearer token"}
	// ErrMalformed: the header holds something else than one bearer token.
	ErrMalformed = &followgraph.Error{Code: followgraph.EUnauthenticated, Message: "the Authorization header is not one bearer token"}
	// ErrInvalid: the token is none of the service tokens and no user token.
	ErrInvalid = &followgraph.Error{Code: followgraph.EUnauthenticated, Message: "the bearer token is not valid"}
)

// Challenge returns the WWW-Authenticate header of a 401 answered with
// err, an error of Authenticate: "Bearer" when no token was sent, with
// error="invalid_token" when one was (RFC 6750, section 3).
func Challenge(err error) string {
	if errors.Is(err, ErrNoToken) {
		return "Bearer"
	}
	return `Bearer error="invalid_token"`
}

// Authenticate returns who sends a request whose Authorization header is
// header: the service whose token it holds, or the user whose valid JWT it
// holds. Its errors have code EUnauthenticated: ErrNoToken, ErrMalformed,
// ErrInvalid, or one that says why a user token is not valid (expired, not
// valid yet, another issuer or audience, a sub that is not a user id, an
// algorithm or key it does not accept). A user token it verified is
// remembered until it expires, so that checking it again is a lookup.
func (a *Authenticator) Authenticate(header string) (Principal, error) {
	tok, err := bearerToken(header)
	if err != nil {
		return Principal{}, err
	}
	st := a.state.Load()
	h := hashToken(tok)
	if p, ok := st.service(h); ok {
		return p, nil
	}
	if st.users != nil && strings.Count(tok, ".") == 2 {
		user, err := st.users.verify(tok, h)
		if err != nil {
			return Principal{}, err
		}
		return Principal{User: user}, nil
	}
	return Principal{}, ErrInvalid
}

// service returns the service whose token hashes to h. It finds the
// candidates by the first 8 bytes of h and decides by comparing all of h
// with theirs in constant time, so that how long it takes says nothing of
// how closely h resembles a token's hash beyond those 8 bytes, which are
// of a hash: no help in finding a token (docs/design/security.md).
func (st *state) service(h [sha256.Size]byte) (Principal, bool) {
	for _, s := range st.services[prefix(h)] {
		if subtle.ConstantTimeCompare(h[:], s.hash[:]) == 1 {
			return s.p, true
		}
	}
	return Principal{}, false
}

func prefix(h [sha256.Size]byte) uint64 { return binary.LittleEndian.Uint64(h[:8]) }

// hashToken returns the SHA-256 of tok, without a copy of tok on the heap
// for tokens of up to 2 KiB.
func hashToken(tok string) [sha256.Size]byte {
	var buf [2048]byte
	if len(tok) <= len(buf) {
		return sha256.Sum256(append(buf[:0], tok...))
	}
	return sha256.Sum256([]byte(tok))
}

// bearerToken returns the token of an Authorization header "Bearer TOKEN":
// the scheme in any case, one or more spaces, and a token of visible ASCII
// characters with nothing after it. It returns ErrNoToken for an empty
// header, another scheme or a Bearer without a token, and ErrMalformed for
// anything else after "Bearer ".
func bearerToken(header string) (string, error) {
	const scheme = "Bearer"
	if len(header) <= len(scheme) || header[len(scheme)] != ' ' || !strings.EqualFold(header[:len(scheme)], scheme) {
		return "", ErrNoToken
	}
	tok := strings.TrimLeft(header[len(scheme):], " ")
	if tok == "" {
		return "", ErrNoToken
	}
	if !visible(tok) {
		return "", ErrMalformed
	}
	return tok, nil
}

// visible reports whether s is made of visible ASCII characters only: no
// spaces, no control characters, nothing beyond ASCII.
func visible(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c > '~' {
			return false
		}
	}
	return true
}
