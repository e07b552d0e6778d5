package httpapi_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/auth"
	"github.com/followgraph/followgraph/httpapi"
)

// authFixture is a fixture whose server authenticates with service tokens
// of each scope and users' tokens signed by key.
type authFixture struct {
	*fixture
	auth *auth.Authenticator
	key  ed25519.PrivateKey
}

// Service tokens of the authFixture, by scope.
const (
	readToken  = "read-token-0123456789abcdef"
	writeToken = "write-token-0123456789abcdef"
	adminToken = "admin-token-0123456789abcdef"
)

func newAuthFixture(tb testing.TB) *authFixture {
	tb.Helper()
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		tb.Fatal(err)
	}
	dir := tb.TempDir()
	tokens := filepath.Join(dir, "tokens")
	keys := filepath.Join(dir, "keys.pem")
	if err := os.WriteFile(tokens, []byte(readToken+" read reader\n"+writeToken+" write writer\n"+adminToken+" admin ops\n"), 0o600); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(keys, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o600); err != nil {
		tb.Fatal(err)
	}
	a, err := auth.New(auth.Config{TokensFile: tokens, JWTKeysFile: keys})
	if err != nil {
		tb.Fatal(err)
	}
	return &authFixture{fixture: newFixture(tb, fixtureConfig{opts: []httpapi.Option{httpapi.WithAuth(a)}}), auth: a, key: key}
}

// userToken returns a token of user, valid from an hour ago to exp.
func (f *authFixture) userToken(user string, exp time.Time) string {
	f.tb.Helper()
	tok, err := jwt.NewWithClaims(jwt.SigningMethodEdDSA, jwt.MapClaims{
		"sub": user, "exp": exp.Unix(), "nbf": time.Now().Add(-time.Hour).Unix(),
	}).SignedString(f.key)
	if err != nil {
		f.tb.Fatal(err)
	}
	return tok
}

// send sends a request with the Authorization header authz (none when
// ""). The answers of an authenticating server are not checked against
// api/openapi.yaml, which does not list 401 and 403 yet.
func (f *authFixture) send(method, target, body, authz string) answer {
	f.tb.Helper()
	var rb io.Reader
	if body != "" {
		rb = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, f.srv.URL+target, rb)
	if err != nil {
		f.tb.Fatal(err)
	}
	if authz != "" {
		req.Header.Set("Authorization", authz)
	}
	resp, err := f.srv.Client().Do(req)
	if err != nil {
		f.tb.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		f.tb.Fatal(err)
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: data}
}

// TestServer_Auth sends a request of each route class with each kind of
// token and checks the status: 401 without a valid token, 403 for a token
// that may not, 200 otherwise; and that a refused request changes nothing
// and leaves no token in the log.
func TestServer_Auth(t *testing.T) {
	f := newAuthFixture(t)
	f.follow(1, 3)
	f.follow(2, 3)
	in := time.Now().Add(time.Hour)
	principals := []struct{ name, authz string }{
		{"NoToken", ""},
		{"UnknownToken", "Bearer not-a-token"},
		{"Basic", "Basic cmVhZDpyZWFk"},
		{"ExpiredUser1", "Bearer " + f.userToken("1", time.Now().Add(-time.Hour))},
		{"Read", "Bearer " + readToken},
		{"Write", "bearer " + writeToken},
		{"Admin", "Bearer " + adminToken},
		{"User1", "Bearer " + f.userToken("1", in)},
		{"User2", "Bearer " + f.userToken("2", in)},
	}
	// The status of each request for each principal, in the order above.
	const (
		un  = http.StatusUnauthorized
		no  = http.StatusForbidden
		yes = http.StatusOK
	)
	for _, tc := range []struct {
		method, target, body string
		want                 [9]int
	}{
		{"GET", "/v1/users/1/following", "", [9]int{un, un, un, un, yes, no, yes, yes, yes}},
		{"GET", "/v1/users/2/following/3", "", [9]int{un, un, un, un, yes, no, yes, yes, yes}},
		{"HEAD", "/v1/users/1", "", [9]int{un, un, un, un, yes, no, yes, yes, yes}},
		{"POST", "/v1/users/2/relations", `{"ids": ["3"]}`, [9]int{un, un, un, un, yes, no, yes, yes, yes}},
		{"PUT", "/v1/users/1/following/2", "", [9]int{un, un, un, un, no, yes, yes, yes, no}},
		{"DELETE", "/v1/users/1/following/3", "", [9]int{un, un, un, un, no, yes, yes, yes, no}},
		{"PUT", "/v1/users/2/following/4", "", [9]int{un, un, un, un, no, yes, yes, no, yes}},
		{"GET", "/v1/users/1/blocks", "", [9]int{un, un, un, un, yes, no, yes, yes, yes}},
		{"GET", "/v1/users/2/settings", "", [9]int{un, un, un, un, yes, no, yes, yes, yes}},
		{"PUT", "/v1/users/1/blocks/3", "", [9]int{un, un, un, un, no, yes, yes, yes, no}},
		{"PUT", "/v1/users/1/mutes/4", `{"duration_seconds": 60}`, [9]int{un, un, un, un, no, yes, yes, yes, no}},
		{"DELETE", "/v1/users/2/followers/4", "", [9]int{un, un, un, un, no, yes, yes, no, yes}},
		// A user's settings: its own token, or scope admin; not scope write.
		{"PUT", "/v1/users/1/settings", `{"private": false}`, [9]int{un, un, un, un, no, no, yes, yes, no}},
		{"PUT", "/v1/users/2/settings", `{"private": false}`, [9]int{un, un, un, un, no, no, yes, no, yes}},
		// An account state: read by any reader; set with scope admin only,
		// not by a user token, not even the user's own.
		{"GET", "/v1/users/1/state", "", [9]int{un, un, un, un, yes, no, yes, yes, yes}},
		{"PUT", "/v1/users/1/state", `{"state": "active"}`, [9]int{un, un, un, un, no, no, yes, no, no}},
		{"GET", "/metrics", "", [9]int{un, un, un, un, no, no, yes, no, no}},
		{"GET", "/healthz", "", [9]int{yes, yes, yes, yes, yes, yes, yes, yes, yes}},
		{"GET", "/readyz", "", [9]int{yes, yes, yes, yes, yes, yes, yes, yes, yes}},
	} {
		for i, p := range principals {
			before := f.state(1, 2, 3, 4)
			a := f.send(tc.method, tc.target, tc.body, p.authz)
			what := tc.method + " " + tc.target + " as " + p.name
			if a.status != tc.want[i] {
				t.Errorf("%s: %d %s, want %d", what, a.status, a.body, tc.want[i])
			}
			if a.status != yes && f.state(1, 2, 3, 4) != before {
				t.Errorf("%s: answered %d, but changed the graph", what, a.status)
			}
			checkRefusal(t, what, a)
		}
	}
	log := f.log.String()
	if !strings.Contains(log, "httpapi: request refused") {
		t.Errorf("no refusal logged at debug level:\n%s", log)
	}
	for _, p := range principals {
		if _, tok, _ := strings.Cut(p.authz, " "); tok != "" && strings.Contains(log, tok) {
			t.Errorf("the log holds the token of %s:\n%s", p.name, log)
		}
	}
}

// checkRefusal checks a 401 or 403 answer: the error code of its status,
// WWW-Authenticate on a 401, as RFC 6750 says, and none on a 403.
func checkRefusal(tb testing.TB, what string, a answer) {
	tb.Helper()
	challenge := a.header.Get("WWW-Authenticate")
	switch a.status {
	case http.StatusUnauthorized:
		if a.errorCode() != followgraph.EUnauthenticated && len(a.body) > 0 { // HEAD has no body
			tb.Errorf("%s: 401 with code %q, want unauthenticated", what, a.errorCode())
		}
		if challenge != "Bearer" && challenge != `Bearer error="invalid_token"` {
			tb.Errorf("%s: 401 with WWW-Authenticate %q", what, challenge)
		}
	case http.StatusForbidden:
		if a.errorCode() != followgraph.EForbidden && len(a.body) > 0 {
			tb.Errorf("%s: 403 with code %q, want forbidden", what, a.errorCode())
		}
		if challenge != "" {
			tb.Errorf("%s: 403 with WWW-Authenticate %q", what, challenge)
		}
	}
}

// TestServer_AuthChallenge checks the WWW-Authenticate header of a 401:
// "Bearer" when no bearer token was sent, with error="invalid_token" when
// one was, and that a route that does not exist under /v1/ is a 401 too
// before it is a 404 or a 405.
func TestServer_AuthChallenge(t *testing.T) {
	f := newAuthFixture(t)
	for _, tc := range []struct {
		method, target, authz string
		status                int
		challenge             string
	}{
		{"GET", "/v1/users/1", "", 401, "Bearer"},
		{"GET", "/v1/users/1", "Basic cmVhZDpyZWFk", 401, "Bearer"},
		{"GET", "/v1/users/1", "Bearer", 401, "Bearer"},
		{"GET", "/v1/users/1", "Bearer not-a-token", 401, `Bearer error="invalid_token"`},
		{"GET", "/v1/users/1", "Bearer " + readToken + " " + readToken, 401, `Bearer error="invalid_token"`},
		{"GET", "/v1/users/1", "Bearer " + f.userToken("abc", time.Now().Add(time.Hour)), 401, `Bearer error="invalid_token"`},
		{"GET", "/metrics", "", 401, "Bearer"},
		{"GET", "/v1/nowhere", "", 401, "Bearer"},
		{"GET", "/v1/nowhere", "Bearer " + readToken, 404, ""},
		{"PATCH", "/v1/users/1", "Bearer nope", 401, `Bearer error="invalid_token"`},
		{"PATCH", "/v1/users/1", "Bearer " + readToken, 405, ""},
		{"GET", "/nowhere", "", 404, ""},
	} {
		what := tc.method + " " + tc.target + " with " + tc.authz
		a := f.send(tc.method, tc.target, "", tc.authz)
		if a.status != tc.status || a.header.Get("WWW-Authenticate") != tc.challenge {
			t.Errorf("%s: %d, WWW-Authenticate %q, %s; want %d, %q", what, a.status, a.header.Get("WWW-Authenticate"), a.body, tc.status, tc.challenge)
		}
		if tc.status == 401 && (a.header.Get("Allow") != "" || a.errorCode() != followgraph.EUnauthenticated) {
			t.Errorf("%s: Allow %q, code %q; want no Allow and code unauthenticated", what, a.header.Get("Allow"), a.errorCode())
		}
	}

	// Two Authorization headers are refused, even when both hold the token.
	req, err := http.NewRequest("GET", f.srv.URL+"/v1/users/1", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Add("Authorization", "Bearer "+readToken)
	req.Header.Add("Authorization", "Bearer "+readToken)
	resp, err := f.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("two Authorization headers: %d, want 401", resp.StatusCode)
	}
}

// TestServer_AuthUserWrites checks that a user token writes as its own
// user only: the follow is made for user 1's token on user 1's path, and
// refused on user 2's and on a path whose user is not an id.
func TestServer_AuthUserWrites(t *testing.T) {
	f := newAuthFixture(t)
	user1 := "Bearer " + f.userToken("1", time.Now().Add(time.Hour))
	if a := f.send("PUT", "/v1/users/1/following/2", "", user1); a.status != http.StatusOK || !bytes.Contains(a.body, []byte(`"created":true`)) {
		t.Errorf("user 1 follows as itself: %d %s, want 200 created", a.status, a.body)
	}
	if a := f.send("PUT", "/v1/users/2/following/1", "", user1); a.status != http.StatusForbidden || a.errorCode() != followgraph.EForbidden {
		t.Errorf("user 1 follows as user 2: %d %s, want 403 forbidden", a.status, a.body)
	}
	if a := f.send("PUT", "/v1/users/x/following/1", "", user1); a.status != http.StatusForbidden {
		t.Errorf("user 1 follows as user x: %d %s, want 403", a.status, a.body)
	}
	if a := f.send("PUT", "/v1/users/x/following/1", "", "Bearer "+writeToken); a.status != http.StatusBadRequest || a.errorCode() != followgraph.EInvalidID {
		t.Errorf("a write token follows as user x: %d %s, want 400 invalid_id", a.status, a.body)
	}
	cs, err := f.g.Counts(t.Context(), []followgraph.UserID{1, 2})
	if err != nil {
		t.Fatal(err)
	}
	if want := []followgraph.Counts{{ID: 1, FollowingCount: 1}, {ID: 2, FollowerCount: 1}}; !reflect.DeepEqual(cs, want) {
		t.Errorf("the counts after the writes: %+v, want %+v", cs, want)
	}
}
