package lease

import (
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	"github.com/followgraph/followgraph/redisgraph/internal/redistest"
	"github.com/followgraph/followgraph/redisgraph/internal/scripts"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// TestLease: one owner at a time holds a lease; the owner renews it,
// another takes it once it is released or has run out.
func TestLease(t *testing.T) {
	for _, m := range redistest.Modes {
		t.Run(m.Name, func(t *testing.T) {
			c := m.Client(t)
			r := scripts.NewRunner(c, "fgtest", 100, nil)
			ctx := t.Context()
			var b [6]byte
			rand.Read(b[:])
			key := "fgtest-lease-" + hex.EncodeToString(b[:])
			t.Cleanup(func() { c.Do(ctx, c.B().Unlink().Key(key).Build()) })
			claim := func(owner string, ttl time.Duration) bool {
				t.Helper()
				ok, err := Claim(ctx, r, "test lease", key, owner, ttl)
				if err != nil {
					t.Fatal(err)
				}
				return ok
			}
			if !claim("a", time.Minute) {
				t.Fatal("a could not take a free lease")
			}
			if claim("b", time.Minute) {
				t.Fatal("b took a lease a holds")
			}
			if !claim("a", 150*time.Millisecond) {
				t.Fatal("a could not renew its lease")
			}
			time.Sleep(300 * time.Millisecond)
			if !claim("b", time.Minute) {
				t.Fatal("b could not take a lease that ran out")
			}
			if err := Release(ctx, r, "test lease", key, "a"); err != nil {
				t.Fatal(err)
			}
			if claim("a", time.Minute) {
				t.Fatal("a's release of a lease it no longer holds freed b's")
			}
			if err := Release(ctx, r, "test lease", key, "b"); err != nil {
				t.Fatal(err)
			}
			if !claim("a", time.Minute) {
				t.Fatal("a could not take a released lease")
			}
		})
	}
}
