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
func TestServe_StateJobKillNine(t *testing.T) { stateJobKillNine(t) }

// TestServe_RedisStateJobKillNine is TestServe_StateJobKillNine on a
// standalone Redis, where the job's progress is in Redis (the hidden edges,
// the jobs set) and the restarted node takes the job over when the killed
// one's lease runs out.
func TestServe_RedisStateJobKillNine(t *testing.T) {
	url, prefix := testRedis(t)
	stateJobKillNine(t, "--redis", url, "--redis-prefix", prefix)
}

// stateJobKillNine runs TestServe_StateJobKillNine with engine, the flags
// of import and serve that name the engine (none: embedded).
func stateJobKillNine(t *testing.T, engine ...string) {
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
	runBinary(t, append([]string{"import", file, "--data", data}, engine...)...)
	var fers, fees []fg.UserID
	for i := range followers {
		fers = append(fers, fg.UserID(100_000+i))
	}
	for i := range followees {
		fees = append(fees, fg.UserID(200_000+i))
	}
	ctx := context.Background()

	flags := append([]string{"--jobs-rate", rate}, engine...)
	s := start(t, data, flags...)
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

		s = start(t, data, flags...)
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

// TestServe_RedisStates: a node serving from a standalone Redis runs
// account states (docs/API.md, "Where they are served"): a deactivated
// user's follow leaves its follower's counts once the job has run, and
// comes back with its since on active; a deleted user's state is final.
func TestServe_RedisStates(t *testing.T) {
	url, prefix := testRedis(t)
	s := start(t, t.TempDir(), "--redis", url, "--redis-prefix", prefix)
	ctx := context.Background()
	if _, err := s.client.Follow(ctx, 2, 1); err != nil {
		t.Fatal(err)
	}
	first := since(t, s.client, 2, 1)
	if a, err := s.client.SetState(ctx, 1, fg.StateDeactivated); err != nil || a.State != fg.StateDeactivated {
		t.Fatalf("SetState(1, deactivated) = %+v, %v", a, err)
	}
	waitPending(t, s.client, 1)
	if c, err := s.client.Counts(ctx, []fg.UserID{1, 2}); err != nil || c[0] != (fg.Counts{ID: 1, State: fg.StateDeactivated}) || c[1].FollowingCount != 0 {
		t.Errorf("Counts(1, 2) after the job = %+v, %v; want 1 deactivated, 2 following nobody", c, err)
	}
	if _, err := s.client.Follow(ctx, 3, 1); fg.ErrorCode(err) != fg.ETargetInactive {
		t.Errorf("Follow(3, 1) of a deactivated user = %v, want target_inactive", err)
	}
	if _, err := s.client.SetState(ctx, 1, fg.StateActive); err != nil {
		t.Fatal(err)
	}
	waitPending(t, s.client, 1)
	if got := since(t, s.client, 2, 1); !got.Equal(first) {
		t.Errorf("2→1 restored since %v, want the original %v", got, first)
	}
	if _, err := s.client.SetState(ctx, 4, fg.StateDeleted); err != nil {
		t.Fatal(err)
	}
	if _, err := s.client.SetState(ctx, 4, fg.StateActive); fg.ErrorCode(err) != fg.ETargetInactive {
		t.Errorf("SetState(4, active) of a deleted user = %v, want target_inactive", err)
	}
}

// TestServe_ClusterStateJobKillNine is TestServe_StateJobKillNine on a
// Redis Cluster of three masters, where each batch of the job takes two
// steps (the counterparts' sides, then the user's), so that the kill may
// land between the two as well as within either.
func TestServe_ClusterStateJobKillNine(t *testing.T) {
	c := startCluster(t)
	stateJobKillNine(t, "--redis", "redis+cluster://"+strings.Join(c.addrs, ","))
}
