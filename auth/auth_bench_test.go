package auth

import (
	"crypto/sha256"
	"fmt"
	"strings"
	"testing"
)

// BenchmarkAuthenticate measures Authenticate of one Authorization header:
// a service token among a token file of 10 or 100; a user token that was
// verified before; and a user token verified anew (its cache entry is
// dropped before each call) for each kind of key. The token file has 10
// tokens in the user tokens' cases, which are checked first.
func BenchmarkAuthenticate(b *testing.B) {
	tokensFile := func(n int) string {
		var sb strings.Builder
		for i := range n {
			fmt.Fprintf(&sb, "service-token-%032d read svc%d\n", i, i)
		}
		return writeFile(b, "tokens", sb.String())
	}
	keys := writeFile(b, "keys.pem", pemOf(b, edKey().public(), ecKey().public(), rsaKey().public()))
	for _, n := range []int{10, 100} {
		b.Run(fmt.Sprintf("Service/%dTokens", n), func(b *testing.B) {
			a, _ := newAuth(b, Config{TokensFile: tokensFile(n), JWTKeysFile: keys})
			header := fmt.Sprintf("Bearer service-token-%032d", n/2)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := a.Authenticate(header); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	a, _ := newAuth(b, Config{TokensFile: tokensFile(10), JWTKeysFile: keys})
	b.Run("CachedJWT", func(b *testing.B) {
		header := "Bearer " + sign(b, edKey(), claims(), nil)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := a.Authenticate(header); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, s := range []signer{edKey(), ecKey(), rsaKey()} {
		b.Run("UncachedJWT/"+s.method.Alg(), func(b *testing.B) {
			tok := sign(b, s, claims(), nil)
			header := "Bearer " + tok
			h := sha256.Sum256([]byte(tok))
			sh := a.state.Load().users.cache.shard(h)
			b.ReportAllocs()
			for b.Loop() {
				sh.mu.Lock()
				delete(sh.tokens, h)
				sh.mu.Unlock()
				if _, err := a.Authenticate(header); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
