package auth

import (
	"crypto/sha256"
	"encoding/hex"
	"reflect"
	"strings"
	"testing"
)

func TestParseTokens(t *testing.T) {
	hashOf := func(tok string) [sha256.Size]byte { return sha256.Sum256([]byte(tok)) }
	hexOf := func(tok string) string { h := hashOf(tok); return hex.EncodeToString(h[:]) }

	file := strings.Join([]string{
		"# service tokens",
		"",
		"clear-token-1 read reader",
		"   # an indented comment",
		"sha256:" + hexOf("hashed-token-2") + " write,read writer",
		"sha256:" + strings.ToUpper(hexOf("hashed-token-3")) + "\tadmin",
		"\tclear-token-4  read,write,admin  all\r",
		"#clear-token-5 read commented out",
		"",
	}, "\n")
	got, err := parseTokens(file)
	if err != nil {
		t.Fatal(err)
	}
	want := []token{
		{hashOf("clear-token-1"), ScopeRead, "reader"},
		{hashOf("hashed-token-2"), ScopeRead | ScopeWrite, "writer"},
		{hashOf("hashed-token-3"), ScopeAdmin, ""},
		{hashOf("clear-token-4"), ScopeRead | ScopeWrite | ScopeAdmin, "all"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parseTokens:\n got %+v\nwant %+v", got, want)
	}

	for _, tc := range []struct{ name, file, wantErr string }{
		{"Empty", "", ""},
		{"OnlyComments", "# nothing\n\n  \n", ""},
		{"NoScopes", "# a comment\nsecret-token\n", "line 2: want a token, its scopes and an optional name"},
		{"TooManyFields", "secret-token read name more\n", "line 1: want a token"},
		{"UnknownScope", "ok-token read\nsecret-token reads\n", "line 2: the scopes must be read, write or admin"},
		{"TokenInScopeColumn", "read secret-token\n", "line 1: the scopes must be"},
		{"EmptyScope", "secret-token read,\n", "line 1: the scopes must be"},
		{"ScopeTwice", "secret-token read,write,read\n", "line 1: scope read is given twice"},
		{"ShortHash", "sha256:abcdef read\n", "line 1: sha256: must be followed by 64 hex digits"},
		{"NotHex", "sha256:" + strings.Repeat("g", 64) + " read\n", "line 1: sha256: must be followed by 64 hex digits"},
		{"NotASCII", "secret-tökén read\n", "line 1: the token has a character other than visible ASCII"},
		{"SameToken", "secret-token read a\nother-token read b\nsecret-token write c\n", "line 3: the same token as line 1"},
		{"SameTokenHashed", "secret-token read\nsha256:" + hexOf("secret-token") + " write\n", "line 2: the same token as line 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseTokens(tc.file)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("error %v, want none", err)
			case tc.wantErr == "":
			case err == nil:
				t.Fatalf("no error, want %q", tc.wantErr)
			case !strings.Contains(err.Error(), tc.wantErr):
				t.Errorf("error %q, want %q", err, tc.wantErr)
			case strings.Contains(err.Error(), "secret"):
				t.Errorf("error %q holds the token", err)
			}
		})
	}
}

func TestReadTokens(t *testing.T) {
	path := writeFile(t, "tokens", "tok read\nbroken\n")
	_, err := readTokens(path)
	if err == nil || !strings.Contains(err.Error(), path+": line 2:") {
		t.Errorf("readTokens of a broken file: %v, want an error naming the file and line 2", err)
	}
	if _, err := readTokens(path + ".missing"); err == nil || !strings.Contains(err.Error(), "auth: token file:") {
		t.Errorf("readTokens of a missing file: %v", err)
	}
}

func TestScopes(t *testing.T) {
	for _, tc := range []struct {
		s                  Scopes
		name               string
		read, write, admin bool
	}{
		{0, "", false, false, false},
		{ScopeRead, "read", true, false, false},
		{ScopeWrite, "write", false, true, false},
		{ScopeRead | ScopeWrite, "read,write", true, true, false},
		{ScopeAdmin, "admin", true, true, true},
	} {
		p := Principal{Name: "svc", Scopes: tc.s}
		if got := tc.s.String(); got != tc.name {
			t.Errorf("Scopes(%d).String() = %q, want %q", tc.s, got, tc.name)
		}
		if p.CanRead() != tc.read || p.CanWrite(7) != tc.write || p.CanWrite(0) != tc.write || p.IsAdmin() != tc.admin {
			t.Errorf("%v: CanRead %v, CanWrite(7) %v, CanWrite(0) %v, IsAdmin %v; want %v, %v, %v, %v",
				p, p.CanRead(), p.CanWrite(7), p.CanWrite(0), p.IsAdmin(), tc.read, tc.write, tc.write, tc.admin)
		}
	}
	u := Principal{User: 7}
	if !u.CanRead() || !u.CanWrite(7) || u.CanWrite(8) || u.CanWrite(0) || u.IsAdmin() {
		t.Errorf("user 7: CanRead %v, CanWrite(7) %v, CanWrite(8) %v, CanWrite(0) %v, IsAdmin %v; want true, true, false, false, false",
			u.CanRead(), u.CanWrite(7), u.CanWrite(8), u.CanWrite(0), u.IsAdmin())
	}
	if got := u.String(); got != "user 7" {
		t.Errorf("String() = %q, want %q", got, "user 7")
	}
}
