package redisgraph

import (
	"math/rand/v2"
	"slices"
	"testing"

	fg "github.com/followgraph/followgraph"
)

// TestOutbox makes changes, some of which change nothing, and checks that
// each acknowledged change is in the outbox once, in order per user, with
// its version; that the outbox reads from an entry id and trims up to one.
func TestOutbox(t *testing.T) {
	for _, m := range modes {
		t.Run(m.Name, func(t *testing.T) {
			g := newTestGraph(t, m.Client(t))
			ctx := t.Context()
			users := []fg.UserID{1, 2, 3, 4, 5, fg.MaxUserID}
			rng := rand.New(rand.NewPCG(1, 2))
			want := make(map[fg.UserID][]fg.Event) // by user, in order
			for range 400 {
				a, b := users[rng.IntN(len(users))], users[rng.IntN(len(users))]
				if a == b {
					continue
				}
				op := fg.OpFollow
				if rng.IntN(2) == 0 {
					op = fg.OpUnfollow
				}
				var changed bool
				var since int64
				if op == fg.OpFollow {
					res, err := g.Follow(ctx, a, b)
					if err != nil {
						t.Fatal(err)
					}
					changed, since = res.Created, res.Since.UnixMilli()
				} else {
					removed, err := g.Unfollow(ctx, a, b)
					if err != nil {
						t.Fatal(err)
					}
					changed, since = removed, -1
				}
				if changed {
					want[a] = append(want[a], fg.Event{User: a, Target: b, Op: op, Time: fg.Millis(since)})
				}
			}

			got := make(map[fg.UserID][]fg.Event)
			for _, es := range outboxEvents(t, g, users) {
				for _, e := range es {
					got[e.User] = append(got[e.User], e)
				}
			}
			for _, u := range users {
				if len(got[u]) != len(want[u]) {
					t.Errorf("user %d: %d events in the outbox, want %d", u, len(got[u]), len(want[u]))
					continue
				}
				for i, e := range got[u] {
					w := want[u][i]
					if e.Target != w.Target || e.Op != w.Op || (w.Op == fg.OpFollow && !e.Time.Equal(w.Time)) {
						t.Errorf("user %d, event %d = %s %d→%d at %v, want %s %d→%d at %v",
							u, i, e.Op, e.User, e.Target, e.Time, w.Op, w.User, w.Target, w.Time)
					}
					if i > 0 && e.Version <= got[u][i-1].Version {
						t.Errorf("user %d, event %d: version %d after %d: versions of a user's changes must grow",
							u, i, e.Version, got[u][i-1].Version)
					}
				}
			}

			pending, err := g.outbox.Pending(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, u := range users {
				if len(want[u]) > 0 && !slices.Contains(pending, g.ks.Outbox(u)) {
					t.Errorf("PendingOutboxStreams() = %v, without %s, which holds the events of %d", pending, g.ks.Outbox(u), u)
				}
			}

			// Read from an entry id, and trim up to one.
			key := g.ks.Outbox(1)
			all, err := g.outbox.Read(ctx, key, "", 1_000_000)
			if err != nil {
				t.Fatal(err)
			}
			if len(all) < 5 {
				t.Fatalf("only %d events in %s", len(all), key)
			}
			rest, err := g.outbox.Read(ctx, key, all[2].ID, 1_000_000)
			if err != nil {
				t.Fatal(err)
			}
			if len(rest) != len(all)-3 || rest[0] != all[3] {
				t.Errorf("ReadOutbox after the third entry returned %d entries starting %v, want %d starting %v",
					len(rest), rest[0], len(all)-3, all[3])
			}
			n, err := g.outbox.Trim(ctx, key, all[2].ID)
			if err != nil || n != 3 {
				t.Errorf("TrimOutbox through the third entry = %d, %v; want 3, nil", n, err)
			}
			after, err := g.outbox.Read(ctx, key, "", 1_000_000)
			if err != nil {
				t.Fatal(err)
			}
			if len(after) != len(all)-3 || after[0] != all[3] {
				t.Errorf("after the trim the outbox starts %v, want %v", after[0], all[3])
			}
			if _, err := g.outbox.Trim(ctx, key, all[len(all)-1].ID); err != nil {
				t.Fatal(err)
			}
			if pending, err = g.outbox.Pending(ctx); err != nil || slices.Contains(pending, key) {
				t.Errorf("PendingOutboxStreams() after %s was trimmed whole = %v, %v; want it left out", key, pending, err)
			}
		})
	}
}

// TestOutboxBound fills an outbox: the next change fails with unavailable
// and changes nothing, until the outbox is trimmed. Apply, which writes no
// events, goes on.
func TestOutboxBound(t *testing.T) {
	for _, m := range modes {
		t.Run(m.Name, func(t *testing.T) {
			g := newTestGraph(t, m.Client(t), WithOutboxLimit(3))
			ctx := t.Context()
			for _, target := range []fg.UserID{2, 3, 4} {
				if _, err := g.Follow(ctx, 1, target); err != nil {
					t.Fatal(err)
				}
			}
			before := describe(t, g, 1, 2, 5)
			_, err := g.Follow(ctx, 1, 5)
			if code := fg.ErrorCode(err); code != fg.EUnavailable {
				t.Errorf("Follow(1, 5) with the outbox full: error %v, want code %s", err, fg.EUnavailable)
			}
			_, err = g.Unfollow(ctx, 1, 2)
			if code := fg.ErrorCode(err); code != fg.EUnavailable {
				t.Errorf("Unfollow(1, 2) with the outbox full: error %v, want code %s", err, fg.EUnavailable)
			}
			if res, err := g.Follow(ctx, 1, 2); err != nil || res.Created {
				t.Errorf("Follow(1, 2), which changes nothing, with the outbox full = %+v, %v; want not created, no error", res, err)
			}
			if after := describe(t, g, 1, 2, 5); after != before {
				t.Errorf("refused changes changed the graph:\nbefore: %s\nafter:  %s", before, after)
			}
			if err := g.Apply(ctx, []fg.Event{fg.NewEvent(6, 7, fg.OpFollow, fg.VersionAt(1_700_000_000_000))}); err != nil {
				t.Errorf("Apply with the outbox full: %v", err)
			}

			entries, err := g.outbox.Read(ctx, g.ks.Outbox(1), "", 10)
			if err != nil || len(entries) != 3 {
				t.Fatalf("ReadOutbox = %d entries, %v; want 3", len(entries), err)
			}
			if _, err := g.outbox.Trim(ctx, g.ks.Outbox(1), entries[0].ID); err != nil {
				t.Fatal(err)
			}
			if res, err := g.Follow(ctx, 1, 5); err != nil || !res.Created {
				t.Errorf("Follow(1, 5) after a trim = %+v, %v; want created", res, err)
			}
		})
	}
}

// describe returns the counts and first pages of ids, to compare.
func describe(tb testing.TB, g fg.Graph, ids ...fg.UserID) string {
	tb.Helper()
	ctx := tb.Context()
	c, err := g.Counts(ctx, ids)
	if err != nil {
		tb.Fatal(err)
	}
	s := ""
	for i, id := range ids {
		out, err := g.Following(ctx, id, fg.PageRequest{})
		if err != nil {
			tb.Fatal(err)
		}
		in, err := g.Followers(ctx, id, fg.PageRequest{})
		if err != nil {
			tb.Fatal(err)
		}
		s += fmtEntries(c[i], out.Entries, in.Entries)
	}
	return s
}

func fmtEntries(c fg.Counts, out, in []fg.Entry) string {
	s := c.ID.String() + ":"
	for _, e := range out {
		s += " →" + e.ID.String()
	}
	for _, e := range in {
		s += " ←" + e.ID.String()
	}
	return s + " (" + fg.UserID(c.FollowingCount).String() + "/" + fg.UserID(c.FollowerCount).String() + "); "
}
