package auth

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/followgraph/followgraph"
)

func TestNew(t *testing.T) {
	tokens := writeFile(t, "tokens", "tok read\n")
	for _, tc := range []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"Nothing", Config{}, "no token file and no JWT key file"},
		{"IssuerWithoutKeys", Config{TokensFile: tokens, Issuer: "https://id.example"}, "a JWT issuer or audience without a JWT key file"},
		{"AudienceWithoutKeys", Config{TokensFile: tokens, Audience: "followgraph"}, "a JWT issuer or audience without a JWT key file"},
		{"MissingTokens", Config{TokensFile: tokens + ".missing"}, "auth: token file:"},
		{"MissingKeys", Config{TokensFile: tokens, JWTKeysFile: tokens + ".missing"}, "auth: JWT key file:"},
		{"BrokenKeys", Config{JWTKeysFile: tokens}, "auth: JWT key file " + tokens + ": neither a JWKS nor any PEM block"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := New(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("New: %v, %v; want the error %q", a, err, tc.wantErr)
			}
		})
	}
}

func TestAuthenticate_Header(t *testing.T) {
	a, _ := newAuth(t, Config{TokensFile: writeFile(t, "tokens", "tok-1 read one\n")})
	for _, tc := range []struct {
		header string
		want   error // nil: accepted as tok-1
	}{
		{"Bearer tok-1", nil},
		{"bearer tok-1", nil},
		{"BEARER tok-1", nil},
		{"Bearer    tok-1", nil},
		{"", ErrNoToken},
		{"Bearer", ErrNoToken},
		{"Bearer ", ErrNoToken},
		{"Bearer   ", ErrNoToken},
		{"Basic dXNlcjpwYXNz", ErrNoToken},
		{"Bearertok-1", ErrNoToken},
		{"Bearer\ttok-1", ErrNoToken},
		{" Bearer tok-1", ErrNoToken},
		{"Bearer tok-1 ", ErrMalformed},
		{"Bearer tok-1 tok-1", ErrMalformed},
		{"Bearer tok-1, Bearer tok-1", ErrMalformed},
		{"Bearer tok-1\x00", ErrMalformed},
		{"Bearer tok\x7f-1", ErrMalformed},
		{"Bearer tök-1", ErrMalformed},
		{"Bearer tok-2", ErrInvalid},
		{"Bearer TOK-1", ErrInvalid},
		{"Bearer a.b.c", ErrInvalid}, // looks like a JWT, but no keys are configured
	} {
		p, err := a.Authenticate(tc.header)
		switch {
		case tc.want == nil && (err != nil || p != Principal{Name: "one", Scopes: ScopeRead}):
			t.Errorf("Authenticate(%q) = %v, %v; want service one", tc.header, p, err)
		case tc.want != nil && (err != tc.want || p != Principal{}):
			t.Errorf("Authenticate(%q) = %v, %v; want %v", tc.header, p, err, tc.want)
		}
		if err != nil && followgraph.ErrorCode(err) != followgraph.EUnauthenticated {
			t.Errorf("Authenticate(%q): code %q, want unauthenticated", tc.header, followgraph.ErrorCode(err))
		}
	}

	if got := Challenge(ErrNoToken); got != "Bearer" {
		t.Errorf("Challenge(ErrNoToken) = %q, want Bearer", got)
	}
	for _, err := range []error{ErrMalformed, ErrInvalid, errExpired} {
		if got := Challenge(err); got != `Bearer error="invalid_token"` {
			t.Errorf("Challenge(%v) = %q, want Bearer error=\"invalid_token\"", err, got)
		}
	}
}

func TestAuthenticate_Service(t *testing.T) {
	h := sha256.Sum256([]byte("hashed-secret"))
	a, _ := newAuth(t, Config{TokensFile: writeFile(t, "tokens",
		"clear-secret read,write lb\nsha256:"+hex.EncodeToString(h[:])+" admin ops\nnameless read\n")})
	for tok, want := range map[string]Principal{
		"clear-secret":  {Name: "lb", Scopes: ScopeRead | ScopeWrite},
		"hashed-secret": {Name: "ops", Scopes: ScopeAdmin},
		"nameless":      {Scopes: ScopeRead},
	} {
		if p, err := a.Authenticate("Bearer " + tok); err != nil || p != want {
			t.Errorf("Authenticate(%s) = %v, %v; want %v", tok, p, err, want)
		}
	}
	// The hash is what the file keeps, not a token.
	if p, err := a.Authenticate("Bearer sha256:" + hex.EncodeToString(h[:])); err != ErrInvalid {
		t.Errorf("Authenticate(the hash) = %v, %v; want ErrInvalid", p, err)
	}
}

// userTokenCase is a user token and what Authenticate says of it.
type userTokenCase struct {
	name    string
	token   string
	want    followgraph.UserID // when err is nil
	wantErr error
}

func TestAuthenticate_User(t *testing.T) {
	ed, ec, rs := edKey(), ecKey(), rsaKey()
	keys := jwksOf(t, jwkOf(t, ed.public(), "ed-1", nil), jwkOf(t, ec.public(), "", nil), jwkOf(t, rs.public(), "rsa-1", nil))
	a, c := newAuth(t, Config{JWTKeysFile: writeFile(t, "keys.json", keys), Issuer: "https://id.example", Audience: "followgraph"})

	with := func(changes jwt.MapClaims) jwt.MapClaims {
		cl := claims()
		cl["iss"], cl["aud"] = "https://id.example", []string{"other", "followgraph"}
		for k, v := range changes {
			if v == nil {
				delete(cl, k)
			} else {
				cl[k] = v
			}
		}
		return cl
	}
	valid := sign(t, ed, with(nil), nil)
	parts := strings.Split(valid, ".")
	enc := base64.RawURLEncoding.EncodeToString

	// A token whose header says alg but that is signed by ed: the
	// signature of another algorithm never verifies.
	relabel := func(alg string) string {
		return enc([]byte(`{"alg":"`+alg+`","typ":"JWT"}`)) + "." + parts[1] + "." + parts[2]
	}
	// HS256 with the Ed25519 public key as the secret: the classic attack
	// on libraries that pick the algorithm from the token.
	hsToken, err := jwt.NewWithClaims(jwt.SigningMethodHS256, with(nil)).SignedString([]byte(pemOf(t, ed.public())))
	if err != nil {
		t.Fatal(err)
	}
	none, err := jwt.NewWithClaims(jwt.SigningMethodNone, with(nil)).SignedString(jwt.UnsafeAllowNoneSignatureType)
	if err != nil {
		t.Fatal(err)
	}

	for _, tc := range []userTokenCase{
		{name: "EdDSA", token: valid, want: 42},
		{name: "ES256", token: sign(t, ec, with(jwt.MapClaims{"sub": "7"}), nil), want: 7},
		{name: "RS256", token: sign(t, rs, with(jwt.MapClaims{"sub": "9223372036854775807"}), map[string]any{"kid": "rsa-1"}), want: followgraph.MaxUserID},
		{name: "EdDSAWithKid", token: sign(t, ed, with(nil), map[string]any{"kid": "ed-1"}), want: 42},
		{name: "AudienceString", token: sign(t, ed, with(jwt.MapClaims{"aud": "followgraph"}), nil), want: 42},
		{name: "ExpiredWithinLeeway", token: sign(t, ed, with(jwt.MapClaims{"exp": t0.Add(-Leeway + time.Second).Unix()}), nil), want: 42},
		{name: "NotBeforeWithinLeeway", token: sign(t, ed, with(jwt.MapClaims{"nbf": t0.Add(Leeway - time.Second).Unix()}), nil), want: 42},
		{name: "NotBeforePassed", token: sign(t, ed, with(jwt.MapClaims{"nbf": t0.Add(-time.Minute).Unix()}), nil), want: 42},

		{name: "Expired", token: sign(t, ed, with(jwt.MapClaims{"exp": t0.Add(-Leeway - time.Second).Unix()}), nil), wantErr: errExpired},
		{name: "NoExpiry", token: sign(t, ed, with(jwt.MapClaims{"exp": nil}), nil), wantErr: errNoExpiry},
		{name: "NotYetValid", token: sign(t, ed, with(jwt.MapClaims{"nbf": t0.Add(Leeway + time.Second).Unix()}), nil), wantErr: errNotYet},
		{name: "WrongSignature", token: parts[0] + "." + enc([]byte(`{"sub":"43","exp":9999999999,"iss":"https://id.example","aud":"followgraph"}`)) + "." + parts[2], wantErr: errSignature},
		{name: "UnknownKey", token: sign(t, edKey2(), with(nil), nil), wantErr: errSignature},
		{name: "UnknownKid", token: sign(t, ed, with(nil), map[string]any{"kid": "ed-2"}), wantErr: errNoKey},
		{name: "AlgNone", token: none, wantErr: errAlg},
		{name: "AlgNoneUnsigned", token: relabel("none"), wantErr: errAlg},
		{name: "HS256PublicKeyAsSecret", token: hsToken, wantErr: errAlg},
		{name: "AlgUnknown", token: relabel("XY999"), wantErr: errAlg},
		{name: "AlgNotAccepted", token: relabel("ES384"), wantErr: errAlg},
		{name: "AlgKeyMismatchES256", token: relabel("ES256"), wantErr: errSignature},
		{name: "AlgKeyMismatchRS256", token: relabel("RS256"), wantErr: errSignature},
		{name: "Crit", token: sign(t, ed, with(nil), map[string]any{"crit": []string{"exp"}}), wantErr: errCrit},
		{name: "WrongIssuer", token: sign(t, ed, with(jwt.MapClaims{"iss": "https://evil.example"}), nil), wantErr: errIssuer},
		{name: "NoIssuer", token: sign(t, ed, with(jwt.MapClaims{"iss": nil}), nil), wantErr: errIssuer},
		{name: "WrongAudience", token: sign(t, ed, with(jwt.MapClaims{"aud": []string{"other"}}), nil), wantErr: errAudience},
		{name: "NoAudience", token: sign(t, ed, with(jwt.MapClaims{"aud": nil}), nil), wantErr: errAudience},
		{name: "SubZero", token: sign(t, ed, with(jwt.MapClaims{"sub": "0"}), nil), wantErr: errSubject},
		{name: "SubName", token: sign(t, ed, with(jwt.MapClaims{"sub": "alice"}), nil), wantErr: errSubject},
		{name: "SubLeadingZero", token: sign(t, ed, with(jwt.MapClaims{"sub": "042"}), nil), wantErr: errSubject},
		{name: "SubTooLarge", token: sign(t, ed, with(jwt.MapClaims{"sub": "9223372036854775808"}), nil), wantErr: errSubject},
		{name: "NoSub", token: sign(t, ed, with(jwt.MapClaims{"sub": nil}), nil), wantErr: errSubject},
		{name: "SubNumber", token: sign(t, ed, with(jwt.MapClaims{"sub": 42}), nil), wantErr: ErrInvalid},
		{name: "NotJSON", token: enc([]byte("{")) + "." + parts[1] + "." + parts[2], wantErr: ErrInvalid},
		{name: "NotBase64", token: parts[0] + "." + parts[1] + "." + parts[2] + "~", wantErr: ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c.set(t0)
			p, err := a.Authenticate("Bearer " + tc.token)
			switch {
			case tc.wantErr == nil && (err != nil || p != Principal{User: tc.want}):
				t.Errorf("Authenticate = %v, %v; want user %d", p, err, tc.want)
			case tc.wantErr != nil && (err != tc.wantErr || p != Principal{}):
				t.Errorf("Authenticate = %v, %v; want %v", p, err, tc.wantErr)
			}
			if err != nil && followgraph.ErrorCode(err) != followgraph.EUnauthenticated {
				t.Errorf("code %q, want unauthenticated", followgraph.ErrorCode(err))
			}
			if err != nil && strings.Contains(err.Error(), tc.token) {
				t.Errorf("the error %q holds the token", err)
			}
		})
	}
}

// TestAuthenticate_UserPEM checks tokens verified with keys from a PEM
// file, which have no key ids, and without issuer or audience.
func TestAuthenticate_UserPEM(t *testing.T) {
	ed, ec, rs := edKey(), ecKey(), rsaKey()
	a, _ := newAuth(t, Config{JWTKeysFile: writeFile(t, "keys.pem", pemOf(t, ed.public(), ec.public(), rs.public()))})
	for _, s := range []signer{ed, ec, rs} {
		for _, header := range []map[string]any{nil, {"kid": "any"}} {
			tok := sign(t, s, claims(), header)
			if p, err := a.Authenticate("Bearer " + tok); err != nil || p != (Principal{User: 42}) {
				t.Errorf("%s, header %v: Authenticate = %v, %v; want user 42", s.method.Alg(), header, p, err)
			}
		}
	}
	if p, err := a.Authenticate("Bearer " + sign(t, edKey2(), claims(), nil)); err != errSignature {
		t.Errorf("a token of another key: Authenticate = %v, %v; want errSignature", p, err)
	}

	// With Ed25519 keys only, a token signed with ES256 or RS256 has no key
	// to be verified with, whoever signed it.
	a, _ = newAuth(t, Config{JWTKeysFile: writeFile(t, "ed.pem", pemOf(t, ed.public()))})
	for _, s := range []signer{ec, rs} {
		if p, err := a.Authenticate("Bearer " + sign(t, s, claims(), nil)); err != errNoKey {
			t.Errorf("%s with Ed25519 keys only: Authenticate = %v, %v; want errNoKey", s.method.Alg(), p, err)
		}
	}
}

func TestAuthenticate_Cache(t *testing.T) {
	ed := edKey()
	keys := writeFile(t, "keys.pem", pemOf(t, ed.public()))
	a, c := newAuth(t, Config{JWTKeysFile: keys})
	tok := sign(t, ed, claims(), nil) // expires at t0 + 1h
	for range 3 {
		if p, err := a.Authenticate("Bearer " + tok); err != nil || p.User != 42 {
			t.Fatalf("Authenticate = %v, %v; want user 42", p, err)
		}
	}
	if n := a.cached(); n != 1 {
		t.Errorf("%d tokens remembered after 3 uses of one, want 1", n)
	}

	// A remembered token is still refused once it expired.
	c.set(t0.Add(time.Hour + Leeway - time.Second))
	if _, err := a.Authenticate("Bearer " + tok); err != nil {
		t.Errorf("within the leeway after exp: %v", err)
	}
	c.set(t0.Add(time.Hour + Leeway))
	if _, err := a.Authenticate("Bearer " + tok); err != errExpired {
		t.Errorf("at exp + leeway: %v, want errExpired", err)
	}

	// A reload forgets what was verified with the old keys.
	c.set(t0)
	if _, err := a.Authenticate("Bearer " + tok); err != nil {
		t.Fatal(err)
	}
	rewrite(t, keys, pemOf(t, edKey2().public()))
	if err := a.Reload(); err != nil {
		t.Fatal(err)
	}
	if p, err := a.Authenticate("Bearer " + tok); err != errSignature {
		t.Errorf("after the key was replaced: Authenticate = %v, %v; want errSignature", p, err)
	}
}

func TestTokenCache_Bound(t *testing.T) {
	var c tokenCache
	c.init()
	perShard := MaxCachedTokens / cacheShards
	var h [sha256.Size]byte // all in shard 0
	put := func(i int, until time.Time) {
		h[1], h[2], h[3] = byte(i), byte(i>>8), byte(i>>16)
		c.put(h, followgraph.UserID(i+1), until, t0)
	}
	shardLen := func() int { return len(c.shards[0].tokens) }

	// Full of live tokens but for one expired one: that one goes.
	for i := range perShard - 1 {
		put(i, t0.Add(time.Hour))
	}
	put(perShard-1, t0)
	put(perShard, t0.Add(time.Hour))
	if n := shardLen(); n != perShard {
		t.Errorf("after putting one into a full shard with an expired token: %d tokens, want %d", n, perShard)
	}
	// Full of live tokens: all go but the new one.
	put(perShard+1, t0.Add(time.Hour))
	if n := shardLen(); n != 1 {
		t.Errorf("after putting one into a full shard of live tokens: %d tokens, want 1", n)
	}
	if u, ok := c.get(h, t0); !ok || u != followgraph.UserID(perShard+2) {
		t.Errorf("get of the last token put = %d, %v; want %d", u, ok, perShard+2)
	}
}

func TestReload(t *testing.T) {
	ed := edKey()
	tokens := writeFile(t, "tokens", "old-token read old\n")
	keys := writeFile(t, "keys.pem", pemOf(t, ed.public()))
	a, _ := newAuth(t, Config{TokensFile: tokens, JWTKeysFile: keys})
	userToken := sign(t, ed, claims(), nil)
	check := func(what, tok string, want error) {
		t.Helper()
		if _, err := a.Authenticate("Bearer " + tok); err != want {
			t.Errorf("%s: Authenticate: %v, want %v", what, err, want)
		}
	}

	rewrite(t, tokens, "new-token read,write new\n")
	if err := a.Reload(); err != nil {
		t.Fatal(err)
	}
	check("after a reload, the new token", "new-token", nil)
	check("after a reload, the old token", "old-token", ErrInvalid)
	check("after a reload, a user token", userToken, nil)

	for _, broken := range []struct{ file, content, wantErr string }{
		{tokens, "new-token read,write new\nbroken\n", "line 2"},
		{keys, "not a key", "neither a JWKS nor any PEM block"},
	} {
		good, err := os.ReadFile(broken.file)
		if err != nil {
			t.Fatal(err)
		}
		rewrite(t, broken.file, broken.content)
		if err := a.Reload(); err == nil || !strings.Contains(err.Error(), broken.wantErr) {
			t.Errorf("Reload of a broken %s: %v, want an error with %q", broken.file, err, broken.wantErr)
		}
		check("after a failed reload, the token", "new-token", nil)
		check("after a failed reload, a user token", userToken, nil)
		rewrite(t, broken.file, string(good))
	}

	if err := os.Remove(keys); err != nil {
		t.Fatal(err)
	}
	if err := a.Reload(); err == nil {
		t.Error("Reload with the key file gone: no error")
	}
	check("after the key file went, a user token", userToken, nil)
}

// TestReload_Concurrent authenticates from several goroutines while the
// files are reloaded: a token that every version of the files accepts is
// accepted throughout.
func TestReload_Concurrent(t *testing.T) {
	ed := edKey()
	tokens := writeFile(t, "tokens", "stable read\n")
	a, _ := newAuth(t, Config{TokensFile: tokens, JWTKeysFile: writeFile(t, "keys.pem", pemOf(t, ed.public()))})
	userToken := sign(t, ed, claims(), nil)
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				for _, tok := range []string{"stable", userToken} {
					if _, err := a.Authenticate("Bearer " + tok); err != nil {
						t.Errorf("during reloads: %v", err)
						return
					}
				}
			}
		})
	}
	for i := range 50 {
		rewrite(t, tokens, fmt.Sprintf("stable read\nother-%d write\n", i))
		if err := a.Reload(); err != nil {
			t.Error(err)
		}
	}
	close(done)
	wg.Wait()
}
