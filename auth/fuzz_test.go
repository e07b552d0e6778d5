package auth

import (
	"regexp"
	"testing"

	"github.com/followgraph/followgraph"
)

// bearerRef is a reading of a bearer Authorization header written apart
// from bearerToken, as RFC 6750 and docs/API.md put it: the scheme in any
// case, spaces, and one token of visible ASCII characters.
var bearerRef = regexp.MustCompile(`^(?i:bearer) +([!-~]+)$`)

// FuzzAuthorization sends Authorization headers to an Authenticator that
// knows one service token and one user token, and checks that it accepts
// exactly the headers that bearerRef reads as one of the two, with that
// token's principal, and refuses every other with an unauthenticated
// error. Never a panic.
func FuzzAuthorization(f *testing.F) {
	const service = "svc-token-0123456789"
	a, _ := newAuth(f, Config{
		TokensFile:  writeFile(f, "tokens", service+" read,write fuzz\n"),
		JWTKeysFile: writeFile(f, "keys.pem", pemOf(f, edKey().public())),
	})
	user := sign(f, edKey(), claims(), nil)
	want := map[string]Principal{
		service: {Name: "fuzz", Scopes: ScopeRead | ScopeWrite},
		user:    {User: 42},
	}
	for _, s := range []string{
		"Bearer " + service, "bearer  " + service, "BeArEr " + user, "Bearer " + user,
		"Bearer " + service + " ", "Bearer " + service + "\x00", "Bearer\t" + service, " Bearer " + service,
		"Bearer " + service + "x", "Bearer " + service[1:], "Bearer " + user + ".", "Bearer " + user[:len(user)-1],
		"Bearer " + user + "=", "Bearer " + user + " " + user, "Bearer " + service + ", Bearer " + service,
		"", "Bearer", "Bearer ", "Basic " + service, service, "Bearer a.b.c", "Bearer ..", "Bearer é",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		p, err := a.Authenticate(header)
		var wantP Principal
		ok := false
		if m := bearerRef.FindStringSubmatch(header); m != nil {
			wantP, ok = want[m[1]]
		}
		switch {
		case ok && (err != nil || p != wantP):
			t.Fatalf("Authenticate(%q) = %v, %v; want %v", header, p, err, wantP)
		case !ok && err == nil:
			t.Fatalf("Authenticate(%q) accepted %v", header, p)
		case !ok && (followgraph.ErrorCode(err) != followgraph.EUnauthenticated || p != Principal{}):
			t.Fatalf("Authenticate(%q) = %v, %v; want no principal and code unauthenticated", header, p, err)
		}
	})
}
