// Command seedcost is the seed articles' Redis design of the follow graph,
// kept as a baseline to measure followgraph's Redis layout against in the
// same run (cmd/followgraph/testdata/seeds_ab.sh). It is not part of the
// product: nothing imports it, and the service never runs it.
//
// The design, as the seed articles build it (redisgraph/seeds_bench_test.go
// names the articles):
//
//	<prefix>follow:<uid>  sorted set: whom uid follows, score = follow time (ms)
//	<prefix>fans:<uid>    sorted set: who follows uid, score = follow time (ms)
//	<prefix>count:<uid>   hash: following, fans (the counters)
//
// A follow or an unfollow is one Lua script (ZSCORE check, ZADD or ZREM on
// both sorted sets, HINCRBY on both hashes); lists are paged by offset
// (ZREVRANGE start stop); the relation states of a user to 20 ids are the
// temporary-key ZINTERSTORE method (the ids into a sorted set, intersected
// with the user's follow and fans sets); a set query (mutuals, common
// following, known followers) is a ZINTERSTORE into a key of its own, then
// its first 20.
//
// Three modes:
//
//	seedcost -redis 127.0.0.1:6379 -load g.tsv       # load a graph written by followgraph gen
//	seedcost -redis 127.0.0.1:6379 -mix reads        # drive it with the mix of followgraph bench
//	seedcost -redis 127.0.0.1:6379 -keys fg:         # bytes of the keys under a prefix, by kind
//
// The driver sends the requests of `followgraph bench` (loadgen's mix, in
// the same proportions, with the same Zipf ids drawn from the same seeds in
// the same order) as the commands the design answers them with, and prints
// the requests made and the Redis CPU they took (INFO cpu before and after,
// used_cpu_sys + used_cpu_user). The writes mix's blocks (2%) and follow
// requests to private users (5%) have no counterpart in the design: they
// are sent as follows of the same ids, so every request is one write.
//
// Two options make the comparison with followgraph's writes closer:
// -rate sends the requests at a given rate (followgraph's, measured in the
// same run) rather than as fast as the clients go, since Redis's work per
// request depends on how many requests each of its reads and writes of a
// connection carries; -outbox adds what a durable write costs the design
// at the least: the follow and unfollow scripts also append the change's
// event to a stream, <prefix>outbox, in the same atomic step, and once a
// change is made the driver deletes its entry, as followgraph does once
// its event log has the event (what queued up as one XDEL).
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"
	"golang.org/x/time/rate"

	"github.com/followgraph/followgraph/loadgen"
)

const followLua = `
if redis.call('ZSCORE', KEYS[1], ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[2])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
redis.call('HINCRBY', KEYS[3], 'following', 1)
redis.call('HINCRBY', KEYS[4], 'fans', 1)
return 1`

// withEvent returns a write script that also appends the change's event to
// the stream KEYS[5], returning its entry id in place of 1.
func withEvent(src, op string) string {
	return strings.Replace(src, "return 1", "return redis.call('XADD', KEYS[5], '*', 'u', ARGV[1], 't', ARGV[2], 'op', '"+op+"', 'v', ARGV[3])", 1)
}

const unfollowLua = `
if not redis.call('ZSCORE', KEYS[1], ARGV[2]) then return 0 end
redis.call('ZREM', KEYS[1], ARGV[2])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('HINCRBY', KEYS[3], 'following', -1)
redis.call('HINCRBY', KEYS[4], 'fans', -1)
return 1`

var (
	followScript        = rueidis.NewLuaScript(followLua)
	unfollowScript      = rueidis.NewLuaScript(unfollowLua)
	followEventScript   = rueidis.NewLuaScript(withEvent(followLua, "follow"))
	unfollowEventScript = rueidis.NewLuaScript(withEvent(unfollowLua, "unfollow"))
)

type seeds struct {
	r      rueidis.Client
	prefix string
	outbox bool // the writes append their events, deleted once made (-outbox)
}

func (s seeds) key(kind string, u uint64) string {
	return s.prefix + kind + ":" + strconv.FormatUint(u, 10)
}

func (s seeds) edgeKeys(u, t uint64) []string {
	return []string{s.key("follow", u), s.key("fans", t), s.key("count", u), s.key("count", t)}
}

func main() {
	addr := flag.String("redis", "127.0.0.1:6379", "host:port of the Redis")
	prefix := flag.String("prefix", "sd:", "prefix of the design's keys")
	load := flag.String("load", "", "load this graph (lines: follower followee unix_ms, as followgraph gen writes them)")
	keys := flag.String("keys", "", "print the bytes (MEMORY USAGE) of the keys under this prefix, by kind, and exit")
	mix := flag.String("mix", "reads", "reads or writes, as followgraph bench")
	users := flag.Int("users", 200_000, "draw ids from 1..N, as followgraph bench --users")
	conc := flag.Int("concurrency", 64, "clients sending at once, as followgraph bench --concurrency")
	dur := flag.Duration("duration", 20*time.Second, "how long to send requests")
	skew := flag.Float64("skew", 1.1, "Zipf exponent of the ids' popularity (0: uniform), as followgraph bench --skew")
	seed := flag.Uint64("seed", 1, "seed of the ids and the mix, as followgraph bench --seed")
	perSec := flag.Float64("rate", 0, "requests per second, all clients together (0: as fast as they go)")
	outbox := flag.Bool("outbox", false, "writes append their events to a stream, deleted once made")
	flag.Parse()
	r, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{*addr}, DisableCache: true})
	if err != nil {
		fail(err)
	}
	defer r.Close()
	s := seeds{r: r, prefix: *prefix, outbox: *outbox}
	ctx := context.Background()
	switch {
	case *load != "":
		err = s.load(ctx, *load)
	case *keys != "":
		err = keyBytes(ctx, r, *keys)
	default:
		if *mix != "reads" && *mix != "writes" {
			fail(fmt.Errorf("mix %q: want reads or writes", *mix))
		}
		err = s.drive(ctx, *mix, *users, *conc, *dur, *skew, *seed, *perSec)
	}
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "seedcost:", err)
	os.Exit(1)
}

// load writes every edge of the file as the design does: ZADD on both
// sorted sets, HINCRBY on both hashes, pipelined.
func (s seeds) load(ctx context.Context, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	var cmds rueidis.Commands
	n := 0
	flush := func() error {
		for _, res := range s.r.DoMulti(ctx, cmds...) {
			if err := res.Error(); err != nil {
				return err
			}
		}
		cmds = cmds[:0]
		return nil
	}
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 3 || strings.HasPrefix(fs[0], "#") {
			continue
		}
		u, err1 := strconv.ParseUint(fs[0], 10, 64)
		t, err2 := strconv.ParseUint(fs[1], 10, 64)
		ms, err3 := strconv.ParseFloat(fs[2], 64)
		if err1 != nil || err2 != nil || err3 != nil {
			return fmt.Errorf("%s: bad line %q", path, sc.Text())
		}
		b := s.r.B()
		cmds = append(cmds,
			b.Zadd().Key(s.key("follow", u)).ScoreMember().ScoreMember(ms, fs[1]).Build(),
			b.Zadd().Key(s.key("fans", t)).ScoreMember().ScoreMember(ms, fs[0]).Build(),
			b.Hincrby().Key(s.key("count", u)).Field("following").Increment(1).Build(),
			b.Hincrby().Key(s.key("count", t)).Field("fans").Increment(1).Build())
		if n++; n%2000 == 0 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if err := flush(); err != nil {
		return err
	}
	fmt.Printf("loaded %d edges\n", n)
	return nil
}

// cpu returns the Redis server's CPU time so far, in seconds.
func cpu(ctx context.Context, r rueidis.Client) (float64, error) {
	info, err := r.Do(ctx, r.B().Info().Section("cpu").Build()).ToString()
	if err != nil {
		return 0, err
	}
	var t float64
	for _, l := range strings.Split(info, "\r\n") {
		if name, v, ok := strings.Cut(l, ":"); ok && (name == "used_cpu_sys" || name == "used_cpu_user") {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return 0, err
			}
			t += f
		}
	}
	return t, nil
}

// drive sends the mix for dur from conc clients and prints what it took.
func (s seeds) drive(ctx context.Context, mix string, users, conc int, dur time.Duration, skew float64, seed uint64, perSec float64) error {
	if users < 2 || conc < 1 || dur <= 0 || perSec < 0 {
		return fmt.Errorf("users must be at least 2, concurrency and duration positive, rate not negative")
	}
	limit := rate.NewLimiter(rate.Inf, 0)
	if perSec > 0 {
		limit = rate.NewLimiter(rate.Limit(perSec), 1)
	}
	var drops *dropper
	if s.outbox {
		drops = newDropper(s.r, s.key("outbox", 0))
	}
	c0, err := cpu(ctx, s.r)
	if err != nil {
		return err
	}
	var done atomic.Bool
	var ops, errs atomic.Int64
	var firstErr atomic.Value
	start := time.Now()
	var wg sync.WaitGroup
	for i := range conc {
		// As loadgen.Run: one generator per client, seeded (seed, i), the
		// Zipf ids drawn from it.
		rng := rand.New(rand.NewPCG(seed, uint64(i)))
		w := &worker{s: s, mix: mix, users: users, rng: rng, tmp: s.prefix + "tmp:" + strconv.Itoa(i), drops: drops}
		if skew > 0 {
			w.zipf = rand.NewZipf(rng, skew, 10, uint64(users-1))
		}
		wg.Go(func() {
			for !done.Load() {
				if limit.Wait(ctx) != nil {
					return
				}
				if err := w.send(ctx); err != nil {
					errs.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
				}
				ops.Add(1)
			}
		})
	}
	time.Sleep(dur)
	done.Store(true)
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	if drops != nil {
		drops.close() // its deletes are the writes' work too
	}
	c1, err := cpu(ctx, s.r)
	if err != nil {
		return err
	}
	n := ops.Load()
	fmt.Printf("seeds %s: %d requests in %.1fs, %.0f requests/s, redis cpu %.2fs = %.1f us/request, errors %d\n",
		mix, n, elapsed, float64(n)/elapsed, c1-c0, 1e6*(c1-c0)/float64(n), errs.Load())
	if e := firstErr.Load(); e != nil {
		fmt.Printf("first error: %s\n", e)
	}
	return nil
}

// worker is one client: loadgen's worker, its requests answered by the
// design's commands.
type worker struct {
	s        seeds
	mix      string
	users    int
	rng      *rand.Rand
	zipf     *rand.Zipf
	tmp      string      // this client's temporary keys
	drops    *dropper    // with -outbox: deletes the events of the changes made
	pages    [2][]uint64 // users whose first page was full: their second page exists
	followed [][2]uint64 // recent follows, to unfollow
}

// As loadgen's: the next pages and the follows a client keeps.
const (
	maxPages    = 16
	maxFollowed = 1024
	pageSize    = 20
)

func keep[T any](rng *rand.Rand, s []T, v T, n int) []T {
	if len(s) < n {
		return append(s, v)
	}
	s[rng.IntN(n)] = v
	return s
}

func (w *worker) id() uint64 {
	if w.zipf != nil {
		return 1 + w.zipf.Uint64()
	}
	return 1 + w.rng.Uint64N(uint64(w.users))
}

func (w *worker) other(u uint64) uint64 {
	for {
		if t := w.id(); t != u {
			return t
		}
	}
}

// send makes the next request of the mix, drawing as loadgen's next does.
func (w *worker) send(ctx context.Context) error {
	s, r := w.s, w.s.r
	b := r.B()
	u := w.id()
	x := w.rng.IntN(100)
	if w.mix == "writes" {
		t := w.other(u)
		switch {
		case x < 2: // a block: sent as a follow
		case x < 7: // a follow request to a private user: sent as a follow
			if t = uint64(w.users - w.rng.IntN(min(loadgen.PrivateTargets, w.users/2))); t == u {
				t--
			}
		case x < 70:
			w.followed = keep(w.rng, w.followed, [2]uint64{u, t}, maxFollowed)
		default:
			if n := len(w.followed); n > 0 {
				i := w.rng.IntN(n)
				u, t = w.followed[i][0], w.followed[i][1]
				w.followed[i] = w.followed[n-1]
				w.followed = w.followed[:n-1]
			}
			return w.write(ctx, unfollowScript, unfollowEventScript, u, t)
		}
		return w.write(ctx, followScript, followEventScript, u, t)
	}
	switch {
	case x < 40: // a page of 20 (offset paging); half the time the second page of a full first one
		dir := w.rng.IntN(2)
		kind := [2]string{"follow", "fans"}[dir]
		var off int64
		if ps := w.pages[dir]; len(ps) > 0 && w.rng.IntN(2) == 0 {
			u, off = ps[w.rng.IntN(len(ps))], pageSize
		}
		page, err := r.Do(ctx, b.Zrevrange().Key(s.key(kind, u)).Start(off).Stop(off+pageSize-1).Withscores().Build()).AsZScores()
		if err == nil && off == 0 && len(page) == pageSize {
			w.pages[dir] = keep(w.rng, w.pages[dir], u, maxPages)
		}
		return err
	case x < 70: // relation states of u to 20 ids: the temporary-key method
		fofa, fol, fan := w.tmp+":fofa", w.tmp+":fol", w.tmp+":fan"
		add := b.Zadd().Key(w.tmp).ScoreMember()
		for range 20 {
			add = add.ScoreMember(0, strconv.FormatUint(w.id(), 10))
		}
		return firstError(r.DoMulti(ctx,
			b.Del().Key(w.tmp, fofa, fol, fan).Build(),
			add.Build(),
			b.Zinterstore().Destination(fofa).Numkeys(3).Key(w.tmp, s.key("fans", u), s.key("follow", u)).Build(),
			b.Zinterstore().Destination(fol).Numkeys(2).Key(w.tmp, s.key("follow", u)).Build(),
			b.Zinterstore().Destination(fan).Numkeys(2).Key(w.tmp, s.key("fans", u)).Build(),
			b.Zrevrange().Key(fofa).Start(0).Stop(-1).Build(),
			b.Zrevrange().Key(fol).Start(0).Stop(-1).Build(),
			b.Zrevrange().Key(fan).Start(0).Stop(-1).Build()))
	case x < 80: // counts of 10 ids (loadgen draws them after dropping u)
		cmds := make(rueidis.Commands, 10)
		for i := range cmds {
			cmds[i] = b.Hgetall().Key(s.key("count", w.id())).Build()
		}
		return firstError(r.DoMulti(ctx, cmds...))
	case x < 90: // counts of one
		return r.Do(ctx, b.Hgetall().Key(s.key("count", u)).Build()).Error()
	}
	// mutuals, common following, known followers: ZINTERSTORE, then the first 20
	a, c := s.key("follow", u), s.key("fans", u)
	switch w.rng.IntN(3) {
	case 1:
		c = s.key("follow", w.other(u))
	case 2:
		c = s.key("fans", w.other(u))
	}
	dst := w.tmp + ":c"
	return firstError(r.DoMulti(ctx,
		b.Zinterstore().Destination(dst).Numkeys(2).Key(a, c).Build(),
		b.Zrevrange().Key(dst).Start(0).Stop(pageSize-1).Build()))
}

// write runs the follow or unfollow script of u → t: plain, or with -outbox
// the one with the event, whose entry it then has deleted.
func (w *worker) write(ctx context.Context, plain, event *rueidis.Lua, u, t uint64) error {
	ms := strconv.FormatInt(time.Now().UnixMilli(), 10)
	args := []string{strconv.FormatUint(u, 10), strconv.FormatUint(t, 10), ms}
	if w.drops == nil {
		return plain.Exec(ctx, w.s.r, w.s.edgeKeys(u, t), args).Error()
	}
	res := event.Exec(ctx, w.s.r, append(w.s.edgeKeys(u, t), w.drops.stream), args)
	if id, err := res.ToString(); err == nil {
		w.drops.drop(id)
		return nil
	}
	return res.Error() // nil for 0: nothing changed, no event
}

// dropper deletes the entries of one stream off the writers' path, what
// has queued up (up to 256) by one XDEL, as followgraph's writes do.
type dropper struct {
	r      rueidis.Client
	stream string
	queue  chan string
	done   chan struct{}
}

func newDropper(r rueidis.Client, stream string) *dropper {
	d := &dropper{r: r, stream: stream, queue: make(chan string, 4096), done: make(chan struct{})}
	go func() {
		defer close(d.done)
		for id := range d.queue {
			ids := []string{id}
		more:
			for len(ids) < 256 {
				select {
				case id, ok := <-d.queue:
					if !ok {
						break more
					}
					ids = append(ids, id)
				default:
					break more
				}
			}
			r.Do(context.Background(), r.B().Xdel().Key(stream).Id(ids...).Build())
		}
	}()
	return d
}

func (d *dropper) drop(id string) { d.queue <- id }

// close deletes what is queued and returns once it is done.
func (d *dropper) close() {
	close(d.queue)
	<-d.done
}

func firstError(res []rueidis.RedisResult) error {
	for _, r := range res {
		if err := r.Error(); err != nil && !rueidis.IsRedisNil(err) {
			return err
		}
	}
	return nil
}

// keyBytes prints, for each kind of key under prefix, how many keys there
// are and their MEMORY USAGE (SAMPLES 0: every element counted). The kind
// of a key is its name without the prefix and without the segments that are
// a user id (digits, or {digits}, the hash tag).
func keyBytes(ctx context.Context, r rueidis.Client, prefix string) error {
	type sum struct{ keys, bytes int64 }
	kinds := map[string]*sum{}
	var cursor uint64
	for {
		e, err := r.Do(ctx, r.B().Scan().Cursor(cursor).Match(prefix+"*").Count(1000).Build()).AsScanEntry()
		if err != nil {
			return err
		}
		if len(e.Elements) > 0 {
			cmds := make(rueidis.Commands, 0, len(e.Elements))
			for _, k := range e.Elements {
				cmds = append(cmds, r.B().MemoryUsage().Key(k).Samples(0).Build())
			}
			res := r.DoMulti(ctx, cmds...)
			for i, k := range e.Elements {
				n, err := res[i].AsInt64()
				if err != nil {
					if rueidis.IsRedisNil(err) { // gone since the SCAN
						continue
					}
					return err
				}
				kind := kindOf(strings.TrimPrefix(k, prefix))
				if kinds[kind] == nil {
					kinds[kind] = &sum{}
				}
				kinds[kind].keys++
				kinds[kind].bytes += n
			}
		}
		if cursor = e.Cursor; cursor == 0 {
			break
		}
	}
	names := make([]string, 0, len(kinds))
	var total int64
	for k, v := range kinds {
		names = append(names, k)
		total += v.bytes
	}
	sort.Slice(names, func(i, j int) bool { return kinds[names[i]].bytes > kinds[names[j]].bytes })
	fmt.Printf("%-16s %10s %14s %7s\n", "kind", "keys", "bytes", "share")
	for _, k := range names {
		v := kinds[k]
		fmt.Printf("%-16s %10d %14d %6.1f%%\n", k, v.keys, v.bytes, 100*float64(v.bytes)/float64(max(total, 1)))
	}
	fmt.Printf("%-16s %10s %14d\n", "total", "", total)
	return nil
}

func kindOf(k string) string {
	var kept []string
	for _, seg := range strings.Split(k, ":") {
		id := strings.TrimSuffix(strings.TrimPrefix(seg, "{"), "}")
		if _, err := strconv.ParseUint(id, 10, 64); err == nil {
			continue
		}
		kept = append(kept, seg)
	}
	return strings.Join(kept, ":")
}
