package redisgraph

import (
	"testing"
	"time"
)

// TestOutboxLease: one owner at a time holds a stream's lease; the owner
// renews it, another takes it once it is released or has run out.
func TestOutboxLease(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			g := newTestGraph(t, m.client(t))
			ctx := t.Context()
			stream := g.outbox(7)
			t.Cleanup(func() { g.c.Do(ctx, g.c.B().Unlink().Key(stream+":lease").Build()) })
			claim := func(owner string, ttl time.Duration) bool {
				t.Helper()
				ok, err := g.claimOutbox(ctx, stream, owner, ttl)
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
			if err := g.releaseOutbox(ctx, stream, "a"); err != nil {
				t.Fatal(err)
			}
			if claim("a", time.Minute) {
				t.Fatal("a's release of a lease it no longer holds freed b's")
			}
			if err := g.releaseOutbox(ctx, stream, "b"); err != nil {
				t.Fatal(err)
			}
			if !claim("a", time.Minute) {
				t.Fatal("a could not take a released lease")
			}
		})
	}
}
