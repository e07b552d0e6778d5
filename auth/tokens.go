package auth

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
)

// token is one line of a token file.
type token struct {
	Hash   [sha256.Size]byte
	Scopes Scopes
	Name   string
}

// readTokens reads the token file at path (see parseTokens).
func readTokens(path string) ([]token, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("auth: token file: %w", err)
	}
	tokens, err := parseTokens(string(b))
	if err != nil {
		return nil, fmt.Errorf("auth: token file %s: %w", path, err)
	}
	return tokens, nil
}

// parseTokens parses a token file: one service token a line,
//
//	<token or sha256:HEX> <scope>[,<scope>...] [name]
//
// separated by spaces or tabs, where the token is in clear (visible ASCII,
// as an Authorization header carries it) or the SHA-256 of it in 64 hex
// digits after "sha256:", and the scopes are read, write and admin. Blank
// lines and lines whose first field starts with # are skipped. A line that
// is none of these, or a token that an earlier line has, is an error that
// gives the line's number and never the token.
func parseTokens(file string) ([]token, error) {
	var tokens []token
	lineOf := make(map[[sha256.Size]byte]int)
	for i, line := range strings.Split(file, "\n") {
		n := i + 1
		fields := strings.Fields(line)
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		if len(fields) > 3 || len(fields) < 2 {
			return nil, fmt.Errorf("line %d: want a token, its scopes and an optional name, separated by spaces; found %d fields", n, len(fields))
		}
		var t token
		var err error
		if t.Hash, err = tokenHash(fields[0]); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if t.Scopes, err = parseScopes(fields[1]); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if len(fields) == 3 {
			t.Name = fields[2]
		}
		if first, ok := lineOf[t.Hash]; ok {
			return nil, fmt.Errorf("line %d: the same token as line %d", n, first)
		}
		lineOf[t.Hash] = n
		tokens = append(tokens, t)
	}
	return tokens, nil
}

const hashPrefix = "sha256:"

// tokenHash returns the SHA-256 of the token field f: f's own hash when it
// is "sha256:HEX", else the hash of f.
func tokenHash(f string) ([sha256.Size]byte, error) {
	var h [sha256.Size]byte
	if hexHash, ok := strings.CutPrefix(f, hashPrefix); ok {
		if len(hexHash) != 2*sha256.Size {
			return h, fmt.Errorf("%s must be followed by %d hex digits, the SHA-256 of the token", hashPrefix, 2*sha256.Size)
		}
		if _, err := hex.Decode(h[:], []byte(hexHash)); err != nil {
			return h, fmt.Errorf("%s must be followed by %d hex digits, the SHA-256 of the token", hashPrefix, 2*sha256.Size)
		}
		return h, nil
	}
	if !visible(f) {
		return h, fmt.Errorf("the token has a character other than visible ASCII, which no Authorization header can carry")
	}
	return sha256.Sum256([]byte(f)), nil
}

// parseScopes parses a comma-separated list of scopes, each once at most.
func parseScopes(f string) (Scopes, error) {
	var s Scopes
	for name := range strings.SplitSeq(f, ",") {
		scope, ok := scopeNamed(name)
		if !ok {
			// The field is not quoted: a token written in the wrong column
			// must not end up in a log.
			return 0, fmt.Errorf("the scopes must be read, write or admin, separated by commas")
		}
		if s&scope != 0 {
			return 0, fmt.Errorf("scope %s is given twice", name)
		}
		s |= scope
	}
	return s, nil
}

func scopeNamed(name string) (Scopes, bool) {
	for _, n := range scopeNames {
		if n.name == name {
			return n.s, true
		}
	}
	return 0, false
}
