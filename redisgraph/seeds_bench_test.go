package redisgraph_test

// The seeds' literal design, the baseline of the benchmarks in
// redisgraph_bench_test.go, and the Redis plumbing the benchmarks share.
//
// The seeds are the four articles (in Chinese) that the product was
// described from, kept outside this repository, cited by file name:
//
//   - zset-lua-mq:   follow-high-concurrency-zset-lua-mq.txt
//   - set-zset:      redis-follow-set-zset-guide.txt
//   - practice:      redis-social-relations-practice.txt
//   - weibo-states:  weibo-follow-relation-states.txt
//
// Each method below does what its article does, command for command, so
// that the benchmarks measure the design and not a weaker or stronger
// rendering of it. Where the articles differ, the comment says which one
// is followed and why.

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/internal/testenv"
	"github.com/followgraph/followgraph/redisgraph"
)

// seedsFollowLua is the seeds' follow script. It lives in testdata so that
// follow_bench.sh drives redis-benchmark with the very same script.
//
//go:embed testdata/seeds_follow.lua
var seedsFollowLua string

var seedsFollowScript = rueidis.NewLuaScript(seedsFollowLua)

// seeds is the seeds' design on one standalone Redis, under a key prefix.
//
// Keys (zset-lua-mq §2): following:<uid> and follower:<uid>, sorted sets
// of user ids scored by follow time in unix ms; the counters in the hashes
// follow:count (followers, the article's hash) and following:count.
// set-zset (§1.3, §3.1) and practice (§2.1) keep the following lists as
// plain Sets too, for SINTER: user:<uid>:follow.
type seeds struct {
	c rueidis.Client
	p string
}

func (s seeds) following(u fg.UserID) string    { return s.p + "following:" + u.String() }
func (s seeds) follower(u fg.UserID) string     { return s.p + "follower:" + u.String() }
func (s seeds) followingSet(u fg.UserID) string { return s.p + "user:" + u.String() + ":follow" }
func (s seeds) followerCounts() string          { return s.p + "follow:count" }
func (s seeds) followingCounts() string         { return s.p + "following:count" }

// follow runs the seeds' follow script (testdata/seeds_follow.lua:
// zset-lua-mq §3, with both directions as set-zset §2.3 writes them) by
// EVALSHA, with the follow time taken by the caller as the article does.
// It reports whether the follow is new.
func (s seeds) follow(ctx context.Context, user, target fg.UserID, ms int64) (bool, error) {
	n, err := seedsFollowScript.Exec(ctx, s.c,
		[]string{s.following(user), s.follower(target), s.followerCounts(), s.followingCounts()},
		[]string{user.String(), target.String(), strconv.FormatInt(ms, 10)},
	).AsInt64()
	return n == 1, err
}

// relations is weibo-states' getChunkSets and getUserInfoList for a viewer
// looking at somebody else's list, the case where all four states occur:
// clear the viewer's temporary keys, ZADD the ids to look at into find:<v>
// one by one, ZINTERSTORE it with the viewer's following, followers and
// both, read the three intersections back with ZREVRANGE 0 -1, and decide
// each id's state (mutual, else follower, else following, else none). One
// command per round trip, as the article's PHP client sends them.
func (s seeds) relations(ctx context.Context, viewer fg.UserID, ids []fg.UserID) ([]fg.Relation, error) {
	var sets [3][]string
	for i, cmd := range s.relationsCommands(viewer, ids) {
		r := s.c.Do(ctx, cmd)
		if err := r.Error(); err != nil {
			return nil, err
		}
		if j := i - (len(ids) + 7); j >= 0 {
			sets[j], _ = r.AsStrSlice()
		}
	}
	return seedsStates(ids, sets), nil
}

// relationsPipelined sends the same commands as relations in one round
// trip: the method at its best, more than the article does.
func (s seeds) relationsPipelined(ctx context.Context, viewer fg.UserID, ids []fg.UserID) ([]fg.Relation, error) {
	var sets [3][]string
	for i, r := range s.c.DoMulti(ctx, s.relationsCommands(viewer, ids)...) {
		if err := r.Error(); err != nil {
			return nil, err
		}
		if j := i - (len(ids) + 7); j >= 0 {
			sets[j], _ = r.AsStrSlice()
		}
	}
	return seedsStates(ids, sets), nil
}

// relationsCommands are getChunkSets' commands: 4 DEL, one ZADD per id,
// 3 ZINTERSTORE, then the 3 ZREVRANGE whose replies seedsStates reads.
func (s seeds) relationsCommands(viewer fg.UserID, ids []fg.UserID) rueidis.Commands {
	v := viewer.String()
	find, fofa := s.p+"find:"+v, s.p+"find_inter_fofa:"+v
	interFollow, interFans := s.p+"find_inter_follow:"+v, s.p+"find_inter_fans:"+v
	following, followers := s.following(viewer), s.follower(viewer)
	b := s.c.B()
	cmds := make(rueidis.Commands, 0, len(ids)+10)
	for _, k := range []string{find, fofa, interFollow, interFans} {
		cmds = append(cmds, b.Del().Key(k).Build())
	}
	for i, id := range ids {
		// The article stores each id with its score in the list looked
		// at; the position stands in for it (ZINTERSTORE ignores it).
		cmds = append(cmds, b.Zadd().Key(find).ScoreMember().ScoreMember(float64(i), id.String()).Build())
	}
	return append(cmds,
		b.Zinterstore().Destination(fofa).Numkeys(3).Key(find, followers, following).Build(),
		b.Zinterstore().Destination(interFollow).Numkeys(2).Key(find, following).Build(),
		b.Zinterstore().Destination(interFans).Numkeys(2).Key(find, followers).Build(),
		b.Zrevrange().Key(interFollow).Start(0).Stop(-1).Build(),
		b.Zrevrange().Key(interFans).Start(0).Stop(-1).Build(),
		b.Zrevrange().Key(fofa).Start(0).Stop(-1).Build(),
	)
}

// seedsStates is getUserInfoList's decision, from the replies of
// find∩following, find∩followers and find∩both.
func seedsStates(ids []fg.UserID, sets [3][]string) []fg.Relation {
	in := func(s []string, id string) bool {
		for _, x := range s { // in_array, as the article does
			if x == id {
				return true
			}
		}
		return false
	}
	out := make([]fg.Relation, len(ids))
	for i, id := range ids {
		k := id.String()
		switch {
		case in(sets[2], k):
			out[i] = fg.RelationMutual
		case in(sets[1], k):
			out[i] = fg.RelationFollower
		case in(sets[0], k):
			out[i] = fg.RelationFollowing
		default:
			out[i] = fg.RelationNone
		}
	}
	return out
}

// commonSINTER is common following as set-zset §3.1, practice §3.2 and
// weibo-states ("实现一" §七) do it: SINTER of the two following Sets, the
// whole intersection in one reply.
func (s seeds) commonSINTER(ctx context.Context, a, b fg.UserID) ([]string, error) {
	return s.c.Do(ctx, s.c.B().Sinter().Key(s.followingSet(a), s.followingSet(b)).Build()).AsStrSlice()
}

// commonZInter is set-zset §3.3-3.4, the article's choice once the lists
// are sorted sets: ZINTERSTORE user:<a>:common:<b> of the two following
// sorted sets (its reply is the count), then ZREVRANGE 0 limit-1 for the
// first page, and a TTL on the stored result, which the article keeps as a
// cache of 5 to 10 minutes.
func (s seeds) commonZInter(ctx context.Context, a, b fg.UserID, limit int) (int64, []rueidis.ZScore, error) {
	dst := s.p + "user:" + a.String() + ":common:" + b.String()
	n, err := s.c.Do(ctx, s.c.B().Zinterstore().Destination(dst).Numkeys(2).
		Key(s.following(a), s.following(b)).Build()).AsInt64()
	if err != nil {
		return 0, nil, err
	}
	res := s.c.DoMulti(ctx,
		s.c.B().Zrevrange().Key(dst).Start(0).Stop(int64(limit-1)).Withscores().Build(),
		s.c.B().Expire().Key(dst).Seconds(300).Build())
	if err := res[1].Error(); err != nil {
		return 0, nil, err
	}
	page, err := res[0].AsZScores()
	return n, page, err
}

// followersPage is paging as weibo-states ("实现一" §九) does it: the index
// of ZREVRANGE as the cursor, so page k of size n is ZREVRANGE k*n
// k*n+n-1 WITHSCORES.
func (s seeds) followersPage(ctx context.Context, user fg.UserID, offset, limit int) ([]rueidis.ZScore, error) {
	return s.c.Do(ctx, s.c.B().Zrevrange().Key(s.follower(user)).
		Start(int64(offset)).Stop(int64(offset+limit-1)).Withscores().Build()).AsZScores()
}

// load writes follow events as the follow script would leave them, both
// sorted sets and the counters, and with sets also the Set copy of each
// following list, with pipelined commands. It is fixture building, not
// part of the design being measured.
func (s seeds) load(ctx context.Context, events []fg.Event, sets bool) error {
	type member struct {
		score float64
		id    string
	}
	zsets := map[string][]member{}
	setMembers := map[string][]string{}
	followers, following := map[string]int64{}, map[string]int64{}
	for _, e := range events {
		ms := float64(e.Version.Millis())
		zsets[s.following(e.User)] = append(zsets[s.following(e.User)], member{ms, e.Target.String()})
		zsets[s.follower(e.Target)] = append(zsets[s.follower(e.Target)], member{ms, e.User.String()})
		followers[e.Target.String()]++
		following[e.User.String()]++
		if sets {
			setMembers[s.followingSet(e.User)] = append(setMembers[s.followingSet(e.User)], e.Target.String())
		}
	}
	p := benchPipe{c: s.c}
	const chunk = 1000
	for k, ms := range zsets {
		for len(ms) > 0 {
			n := min(chunk, len(ms))
			z := s.c.B().Zadd().Key(k).ScoreMember()
			for _, m := range ms[:n] {
				z = z.ScoreMember(m.score, m.id)
			}
			if err := p.add(ctx, z.Build()); err != nil {
				return err
			}
			ms = ms[n:]
		}
	}
	for k, ms := range setMembers {
		for len(ms) > 0 {
			n := min(chunk, len(ms))
			if err := p.add(ctx, s.c.B().Sadd().Key(k).Member(ms[:n]...).Build()); err != nil {
				return err
			}
			ms = ms[n:]
		}
	}
	for key, counts := range map[string]map[string]int64{s.followerCounts(): followers, s.followingCounts(): following} {
		for f, n := range counts {
			if err := p.add(ctx, s.c.B().Hincrby().Key(key).Field(f).Increment(n).Build()); err != nil {
				return err
			}
		}
	}
	return p.flush(ctx)
}

// benchPipe sends commands in pipelines of a few hundred.
type benchPipe struct {
	c    rueidis.Client
	cmds rueidis.Commands
}

func (p *benchPipe) add(ctx context.Context, cmd rueidis.Completed) error {
	p.cmds = append(p.cmds, cmd)
	if len(p.cmds) < 256 {
		return nil
	}
	return p.flush(ctx)
}

func (p *benchPipe) flush(ctx context.Context) error {
	if len(p.cmds) == 0 {
		return nil
	}
	res := p.c.DoMulti(ctx, p.cmds...)
	p.cmds = p.cmds[:0]
	for _, r := range res {
		if err := r.Error(); err != nil {
			return err
		}
	}
	return nil
}

// The Redis of the benchmarks is FOLLOWGRAPH_TEST_REDIS, shared by every
// benchmark of the process through one client. Every key is under
// fgbench:<run>:, where run is random per process; a process keeps
// fgbench:<run>:alive alive while it runs, and at start deletes the keys of
// runs whose alive key is gone (a process killed before its cleanups).
const benchRoot = "fgbench:"

var bench struct {
	once sync.Once
	c    rueidis.Client
	run  string
	err  error
	mu   sync.Mutex
	n    int
}

func benchURL() string { return os.Getenv(testenv.Redis) }

func benchRedis(tb testing.TB) rueidis.Client {
	tb.Helper()
	url := testenv.Server(tb, testenv.Redis, testenv.RedisHint)
	bench.once.Do(func() {
		opt, err := redisgraph.ParseURL(url) // as followgraph serve --redis does
		if err != nil {
			bench.err = err
			return
		}
		if bench.c, bench.err = rueidis.NewClient(opt); bench.err != nil {
			return
		}
		var r [6]byte
		_, _ = rand.Read(r[:])
		bench.run = hex.EncodeToString(r[:])
		ctx := context.Background()
		alive := bench.c.B().Set().Key(benchRoot + bench.run + ":alive").Value("1").ExSeconds(60).Build().Pin()
		if bench.err = bench.c.Do(ctx, alive).Error(); bench.err != nil {
			return
		}
		go func() {
			for range time.Tick(20 * time.Second) {
				bench.c.Do(ctx, alive)
			}
		}()
		bench.err = benchSweep(ctx, bench.c)
	})
	if bench.err != nil {
		tb.Fatalf("redis %s: %v", url, bench.err)
	}
	return bench.c
}

// benchPrefix returns a new key prefix whose keys are deleted when tb ends.
func benchPrefix(tb testing.TB, c rueidis.Client) string {
	tb.Helper()
	bench.mu.Lock()
	bench.n++
	p := fmt.Sprintf("%s%s:%d:", benchRoot, bench.run, bench.n)
	bench.mu.Unlock()
	tb.Cleanup(func() {
		if err := benchDelete(context.Background(), c, p); err != nil {
			tb.Errorf("delete %s*: %v", p, err)
		}
	})
	return p
}

// benchDelete unlinks the keys under prefix p, and waits (up to a minute)
// for Redis to have freed them in the background, so that the next
// benchmark does not share Redis's CPU with the freeing.
func benchDelete(ctx context.Context, c rueidis.Client, p string) error {
	err := benchScan(ctx, c, p+"*", func(keys []string) error {
		return c.Do(ctx, c.B().Unlink().Key(keys...).Build()).Error()
	})
	for deadline := time.Now().Add(time.Minute); err == nil && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		var info string
		if info, err = c.Do(ctx, c.B().Info().Section("memory").Build()).ToString(); err == nil &&
			strings.Contains(info, "lazyfree_pending_objects:0\r\n") {
			break
		}
	}
	return err
}

// benchScan calls f with each batch of the keys matching pattern.
func benchScan(ctx context.Context, c rueidis.Client, pattern string, f func([]string) error) error {
	var cursor uint64
	for {
		e, err := c.Do(ctx, c.B().Scan().Cursor(cursor).Match(pattern).Count(1000).Build()).AsScanEntry()
		if err != nil {
			return err
		}
		if len(e.Elements) > 0 {
			if err := f(e.Elements); err != nil {
				return err
			}
		}
		if cursor = e.Cursor; cursor == 0 {
			return nil
		}
	}
}

// benchSweep deletes the keys of benchmark runs that ended without
// cleaning up.
func benchSweep(ctx context.Context, c rueidis.Client) error {
	live := map[string]bool{}
	var stale []string
	err := benchScan(ctx, c, benchRoot+"*", func(keys []string) error {
		for _, k := range keys {
			run, _, _ := strings.Cut(strings.TrimPrefix(k, benchRoot), ":")
			ok, seen := live[run]
			if !seen {
				n, err := c.Do(ctx, c.B().Exists().Key(benchRoot+run+":alive").Build()).AsInt64()
				if err != nil {
					return err
				}
				ok = n == 1
				live[run] = ok
			}
			if !ok {
				stale = append(stale, k)
			}
		}
		return nil
	})
	for len(stale) > 0 && err == nil {
		n := min(1000, len(stale))
		err = c.Do(ctx, c.B().Unlink().Key(stale[:n]...).Build()).Error()
		stale = stale[n:]
	}
	return err
}

// benchSlowlog has Redis log every command of at least 100 µs from now on
// (restoring the settings when tb ends), so that report can tell the
// slowest single command that touched a prefix.
type benchSlowlog struct {
	c     rueidis.Client
	after int64 // the last entry id before the measurement
}

const benchSlowMicros = 100

func startSlowlog(tb testing.TB, c rueidis.Client) *benchSlowlog {
	tb.Helper()
	ctx := context.Background()
	old, err := c.Do(ctx, c.B().ConfigGet().Parameter("slowlog-log-slower-than", "slowlog-max-len").Build()).AsStrMap()
	if err != nil {
		tb.Fatal(err)
	}
	set := func(threshold, length string) error {
		return c.Do(ctx, c.B().ConfigSet().ParameterValue().
			ParameterValue("slowlog-log-slower-than", threshold).
			ParameterValue("slowlog-max-len", length).Build()).Error()
	}
	if err := set(strconv.Itoa(benchSlowMicros), "4096"); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := set(old["slowlog-log-slower-than"], old["slowlog-max-len"]); err != nil {
			tb.Error(err)
		}
	})
	s := &benchSlowlog{c: c, after: -1}
	if err := s.mark(ctx); err != nil {
		tb.Fatal(err)
	}
	return s
}

type benchSlowEntry struct {
	id, micros int64
	args       []string
}

func (s *benchSlowlog) entries(ctx context.Context, n int64) ([]benchSlowEntry, error) {
	arr, err := s.c.Do(ctx, s.c.B().SlowlogGet().Count(n).Build()).ToArray()
	if err != nil {
		return nil, err
	}
	out := make([]benchSlowEntry, 0, len(arr))
	for _, m := range arr {
		f, err := m.ToArray()
		if err != nil || len(f) < 4 {
			return nil, fmt.Errorf("slowlog entry: %v", err)
		}
		var e benchSlowEntry
		e.id, _ = f[0].AsInt64()
		e.micros, _ = f[2].AsInt64()
		e.args, _ = f[3].AsStrSlice()
		out = append(out, e)
	}
	return out, nil
}

// report adds two metrics to b: max-cmd-µs, the slowest single command
// since start whose arguments name a key under one of prefixes (0 when
// none took benchSlowMicros), and slow-cmds/op, the commands over 1 ms per
// operation.
func (s *benchSlowlog) report(b *testing.B, ops int, prefixes ...string) {
	b.Helper()
	slowest, which, over, err := s.slowest(context.Background(), prefixes)
	if err != nil {
		b.Fatal(err)
	}
	if which != nil {
		b.Logf("N=%d: slowest command %d µs: %.80q (%d args)", b.N, slowest, strings.Join(which, " "), len(which))
	}
	b.ReportMetric(float64(slowest), "max-cmd-µs")
	b.ReportMetric(float64(over)/float64(max(ops, 1)), "slow-cmds/op")
}

// slowest returns, of the commands logged since start (or the last mark)
// whose arguments name a key under one of prefixes, the slowest one's
// time and arguments, and how many took over 1 ms.
func (s *benchSlowlog) slowest(ctx context.Context, prefixes []string) (micros int64, args []string, over int64, err error) {
	es, err := s.entries(ctx, -1)
	if err != nil {
		return 0, nil, 0, err
	}
	for _, e := range es {
		if e.id <= s.after || !benchMentions(e.args, prefixes) {
			continue
		}
		if e.micros > micros {
			micros, args = e.micros, e.args
		}
		if e.micros > 1000 {
			over++
		}
	}
	return micros, args, over, nil
}

// mark makes slowest look only at the commands logged from now on.
func (s *benchSlowlog) mark(ctx context.Context) error {
	e, err := s.entries(ctx, 1)
	if err == nil && len(e) > 0 {
		s.after = e[0].id
	}
	return err
}

func benchMentions(args, prefixes []string) bool {
	for _, a := range args {
		for _, p := range prefixes {
			if strings.HasPrefix(a, p) {
				return true
			}
		}
	}
	return false
}
