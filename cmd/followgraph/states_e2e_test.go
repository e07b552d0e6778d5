package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/client"
)

// TestServe_StateJobKillNine: the job of an account state survives a
// kill -9 of serve, once in the middle of hiding a user with 30k
// followers and 1k followees, and once in the middle of restoring it.
// After each restart the job finishes, every counterpart's counts equal
// its lists, and restoring brings back every edge with its original since.
func TestServe_StateJobKillNine(t *testing.T) {
	const (
		user      = fg.UserID(1)
		followers = 30_000
		followees = 1_000
		rate      = "6000" // edges a second: a job of about 5 s
	)
	data := t.TempDir()
	file := filepath.Join(t.TempDir(), "edges.tsv")
	var b strings.Builder
	base := time.Now().Add(-time.Hour).UnixMilli()
	for i := range followers {
		fmt.Fprintf(&b, "%d %d %d\n", 100_000+i, user, base+int64(i))
	}
	for i := range followees {
		fmt.Fprintf(&b, "%d %d %d\n", user, 200_000+i, base+int64(i))
	}
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	runBinary(t, "import", file, "--data", data)
	var fers, fees []fg.UserID
	for i := range followers {
		fers = append(fers, fg.UserID(100_000+i))
	}
	for i := range followees {
		fees = append(fees, fg.UserID(200_000+i))
	}
	ctx := context.Background()

	s := start(t, data, "--jobs-rate", rate)
	firstSince := since(t, s.client, 100_000, user)
	for _, st := range []fg.State{fg.StateDeactivated, fg.StateActive} {
		set, err := s.client.SetState(ctx, user, st)
		if err != nil {
			t.Fatalf("SetState(%s): %v", st, err)
		}
		time.Sleep(1500 * time.Millisecond)
		mid, err := s.client.State(ctx, user)
		if err != nil || mid.Pending == 0 {
			t.Fatalf("State(1) 1.5 s into the %s job = %+v, %v: want it under way", st, mid, err)
		}
		s.kill()
		t.Logf("%s: killed with %d of %d edges pending", st, mid.Pending, followers+followees)

		s = start(t, data, "--jobs-rate", rate)
		done := waitPending(t, s.client, user)
		if done.State != st || !done.Since.Equal(set.Since) {
			t.Fatalf("State(1) after the restart = %+v, want %s since %v", done, st, set.Since)
		}
		want := int64(0)
		if st.Active() {
			want = 1
		}
		checkSides(t, s.client, fers, want, 0)
		checkSides(t, s.client, fees, 0, want)
		c, err := s.client.Counts(ctx, []fg.UserID{user})
		if err != nil {
			t.Fatal(err)
		}
		wantUser := fg.Counts{ID: user, State: st}
		if st.Active() {
			wantUser = fg.Counts{ID: user, FollowingCount: followees, FollowerCount: followers}
		}
		if c[0] != wantUser {
			t.Fatalf("Counts(1) after the %s job = %+v, want %+v", st, c[0], wantUser)
		}
	}
	if got := since(t, s.client, 100_000, user); !got.Equal(firstSince) {
		t.Errorf("100000→1 restored since %v, want the original %v", got, firstSince)
	}
	if n := len(list(t, func(req fg.PageRequest) (fg.Page, error) { return s.client.Followers(ctx, user, req) })); n != followers {
		t.Errorf("Followers(1) lists %d after the restore, want %d", n, followers)
	}
	s.stop(t)
}

// waitPending waits until user's job has nothing left.
func waitPending(t *testing.T, c *client.Client, user fg.UserID) fg.AccountState {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		a, err := c.State(context.Background(), user)
		if err != nil {
			t.Fatal(err)
		}
		if a.Pending == 0 {
			return a
		}
		if time.Now().After(deadline) {
			t.Fatalf("State(%d) still has %d pending after 60 s", user, a.Pending)
		}
	}
}

// checkSides checks that each of ids follows wantFollowing users and has
// wantFollowers followers, by its counts and by its lists.
func checkSides(t *testing.T, c *client.Client, ids []fg.UserID, wantFollowing, wantFollowers int64) {
	t.Helper()
	ctx := context.Background()
	for i := 0; i < len(ids); i += fg.MaxCountIDs {
		chunk := ids[i:min(i+fg.MaxCountIDs, len(ids))]
		cs, err := c.Counts(ctx, chunk)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range cs {
			if n.FollowingCount != wantFollowing || n.FollowerCount != wantFollowers {
				t.Fatalf("Counts(%d) = %+v, want %d following and %d followers", n.ID, n, wantFollowing, wantFollowers)
			}
		}
	}
	for _, u := range []fg.UserID{ids[0], ids[len(ids)/2], ids[len(ids)-1]} {
		fo, err := c.Following(ctx, u, fg.PageRequest{Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		fi, err := c.Followers(ctx, u, fg.PageRequest{Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(fo.Entries)) != wantFollowing || int64(len(fi.Entries)) != wantFollowers {
			t.Fatalf("%d follows %v and is followed by %v: its lists disagree with its counts", u, fo.Entries, fi.Entries)
		}
	}
}

func since(t *testing.T, c *client.Client, user, target fg.UserID) time.Time {
	t.Helper()
	e, err := c.IsFollowing(context.Background(), user, target)
	if err != nil || !e.Following {
		t.Fatalf("IsFollowing(%d, %d) = %+v, %v", user, target, e, err)
	}
	return e.Since
}

// TestServe_RedisRefusesStates: a node serving from Redis has no account
// states yet (docs/API.md, "Where they are served"): a PUT of a state
// other than active answers 503 unavailable and changes nothing, and
// every user stays active and shown.
func TestServe_RedisRefusesStates(t *testing.T) {
	url, prefix := testRedis(t)
	s := start(t, t.TempDir(), "--redis", url, "--redis-prefix", prefix)
	ctx := context.Background()
	if _, err := s.client.Follow(ctx, 2, 1); err != nil {
		t.Fatal(err)
	}
	for _, st := range []fg.State{fg.StateDeactivated, fg.StateSuspended, fg.StateDeleted} {
		if _, err := s.client.SetState(ctx, 1, st); fg.ErrorCode(err) != fg.EUnavailable {
			t.Errorf("SetState(1, %s) on Redis = %v, want unavailable", st, err)
		}
	}
	if a, err := s.client.State(ctx, 1); err != nil || a != (fg.AccountState{ID: 1}) {
		t.Errorf("State(1) after the refused changes = %+v, %v; want active, never set", a, err)
	}
	if a, err := s.client.SetState(ctx, 1, fg.StateActive); err != nil || a.State != fg.StateActive {
		t.Errorf("SetState(1, active) on Redis = %+v, %v; want active, no error", a, err)
	}
	if c, err := s.client.Counts(ctx, []fg.UserID{1, 2}); err != nil || c[0].FollowerCount != 1 || c[1].FollowingCount != 1 {
		t.Errorf("Counts(1, 2) after the refused changes = %+v, %v", c, err)
	}
}
