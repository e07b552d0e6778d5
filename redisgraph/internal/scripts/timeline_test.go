package scripts

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/rueidis"

	"github.com/followgraph/followgraph/redisgraph/internal/redistest"
)

// timelineHarness drives lua/timeline.lua alone, a side of one user with
// the member index holding each member's ms: KEYS the side's set, its
// directory, its fields' hash, the index; ARGV an op and its arguments:
//
//	add ms member   adds (or moves) the member's entry; 1 if it changed
//	rem member      removes it; 1 if it was there
//	page n [ms member]  the newest n entries after the cursor, {member, ms, …}
const timelineHarness = `
local t = tlOpen(KEYS[1], KEYS[2], KEYS[3], KEYS[4], 'k', 'n', 'g', 'x')
local op = ARGV[1]
if op == 'add' then
  local ms, m = tonumber(ARGV[2]), ARGV[3]
  local v = tlGet(t, m)
  if v then
    if tonumber(v) == ms then return 0 end
    tlRem(t, tonumber(v), m)
  end
  tlAdd(t, ms, m)
  tlSet(t, m, ARGV[2])
  return 1
elseif op == 'rem' then
  local m = ARGV[2]
  local v = tlGet(t, m)
  if not v then return 0 end
  tlRem(t, tonumber(v), m)
  tlDel(t, m)
  return 1
elseif op == 'page' then
  if ARGV[3] then return tlPage(t, tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]) end
  return tlPage(t, tonumber(ARGV[2]))
end
return redis.error_reply('unknown op ' .. op)
`

// timeline is a timeline of the harness on a Redis: its keys, and the
// harness loaded for a chunk bound.
type timeline struct {
	c    rueidis.Client
	keys []string
	lua  *rueidis.Lua
	tb   int
	xb   int
	win  *window // the directory's window pageOut reads from
	// whole makes pageOut read the whole directory into its window, and
	// keep it while the directory does not change.
	whole bool
}

func newTimeline(tb testing.TB, c rueidis.Client, bound, indexSplit int) *timeline {
	tb.Helper()
	src, err := os.ReadFile("lua/timeline.lua")
	if err != nil {
		tb.Fatal(err)
	}
	header := fmt.Sprintf("local TB, XB = %d, %d\n", bound, indexSplit)
	base := fmt.Sprintf("tl%d:{%d}", rand.Uint32(), rand.Uint32())
	t := &timeline{c: c, keys: []string{base + ":z", base + ":d", base + ":h", base + ":x"}, tb: bound, xb: indexSplit,
		lua: rueidis.NewLuaScript(header + luaChunks + string(src) + timelineHarness)}
	tb.Cleanup(func() { t.drop(context.Background()) })
	return t
}

// drop deletes the timeline's keys.
func (t *timeline) drop(ctx context.Context) {
	scanKeys(ctx, t.c, strings.TrimSuffix(t.keys[0], ":z")+"*", func(keys []string) error {
		return t.c.Do(ctx, t.c.B().Unlink().Key(keys...).Build()).Error()
	})
}

func (t *timeline) add(ctx context.Context, ms int64, id uint64) (int64, error) {
	return t.lua.Exec(ctx, t.c, t.keys, []string{"add", strconv.FormatInt(ms, 10), member(id)}).AsInt64()
}

func (t *timeline) rem(ctx context.Context, id uint64) (int64, error) {
	return t.lua.Exec(ctx, t.c, t.keys, []string{"rem", member(id)}).AsInt64()
}

// tlEntry is an entry of a timeline: a member's id and ms.
type tlEntry struct {
	id uint64
	ms int64
}

// newer orders entries newest first: by ms, then by id, both descending.
func newer(a, b tlEntry) int {
	return cmp.Or(cmp.Compare(b.ms, a.ms), cmp.Compare(b.id, a.id))
}

func (t *timeline) page(ctx context.Context, n int, after *tlEntry) ([]tlEntry, error) {
	args := []string{"page", strconv.Itoa(n)}
	if after != nil {
		args = append(args, strconv.FormatInt(after.ms, 10), member(after.id))
	}
	vals, err := t.lua.Exec(ctx, t.c, t.keys, args).AsStrSlice()
	if err != nil {
		return nil, err
	}
	return parseEntries(vals)
}

func parseEntries(vals []string) ([]tlEntry, error) {
	out := make([]tlEntry, 0, len(vals)/2)
	for i := 0; i+1 < len(vals); i += 2 {
		ms, err := strconv.ParseInt(vals[i+1], 10, 64)
		if err != nil || len(vals[i]) != 8 {
			return nil, fmt.Errorf("entry %q %q", vals[i], vals[i+1])
		}
		out = append(out, tlEntry{binary.BigEndian.Uint64([]byte(vals[i])), ms})
	}
	return out, nil
}

func member(id uint64) string { return string(binary.BigEndian.AppendUint64(nil, id)) }

// check compares the timeline, as Redis holds it, with want (member →
// ms): the directory's chunks in order, each at most the bound and not
// empty, each entry at or above its chunk's bound and below the next's;
// the chunk count; the index; and every page walk.
func (t *timeline) check(ctx context.Context, tb testing.TB, want map[uint64]int64) {
	tb.Helper()
	c := t.c
	wantList := make([]tlEntry, 0, len(want))
	for id, ms := range want {
		wantList = append(wantList, tlEntry{id, ms})
	}
	slices.SortFunc(wantList, newer)

	fields, err := c.Do(ctx, c.B().Hgetall().Key(t.keys[2]).Build()).AsStrMap()
	if err != nil {
		tb.Fatal(err)
	}
	dir, err := c.Do(ctx, c.B().Zrange().Key(t.keys[1]).Min("0").Max("-1").Build()).AsStrSlice()
	if err != nil {
		tb.Fatal(err)
	}
	chunks := []string{t.keys[0]}
	tb.Logf("%d entries in %d chunks", len(want), max(1, len(dir)))
	if len(dir) > 0 {
		chunks = chunks[:0]
		for _, dm := range dir {
			if j := dm[16:]; j == "0" {
				chunks = append(chunks, t.keys[0])
			} else {
				chunks = append(chunks, t.keys[0]+":"+j)
			}
		}
		if len(dir) < 2 {
			tb.Fatalf("a directory of %d chunks", len(dir))
		}
	}
	if got := cmp.Or(fields["k"], "1"); got != strconv.Itoa(len(chunks)) {
		tb.Fatalf("field k says %s chunks, the directory %d", got, len(chunks))
	}
	var all []tlEntry
	for i, key := range chunks {
		zs, err := c.Do(ctx, c.B().Zrange().Key(key).Min("0").Max("-1").Withscores().Build()).AsZScores()
		if err != nil {
			tb.Fatal(err)
		}
		es := make([]tlEntry, len(zs))
		for i, z := range zs {
			es[i] = tlEntry{binary.BigEndian.Uint64([]byte(z.Member)), int64(z.Score)}
		}
		if len(es) > t.tb || len(chunks) > 1 && len(es) == 0 {
			tb.Fatalf("chunk %s holds %d entries (bound %d)", key, len(es), t.tb)
		}
		if len(dir) > 0 {
			lo := dir[i][:16]
			for _, e := range es {
				b := string(binary.BigEndian.AppendUint64(nil, uint64(e.ms))) + member(e.id)
				if i > 0 && b < lo || i+1 < len(dir) && b >= dir[i+1][:16] {
					tb.Fatalf("chunk %s holds %v outside its bounds", key, e)
				}
			}
		}
		slices.Reverse(es)
		all = append(es, all...)
	}
	if !slices.Equal(all, wantList) {
		tb.Fatalf("the chunks hold %d entries, want %d:\n%v\n%v", len(all), len(wantList), head(all), head(wantList))
	}

	xc, _ := strconv.Atoi(cmp.Or(fields["x"], "1"))
	index := map[uint64]int64{}
	for j := range xc {
		key := t.keys[3]
		if j > 0 {
			key += ":" + strconv.Itoa(j)
		}
		m, err := c.Do(ctx, c.B().Hgetall().Key(key).Build()).AsStrMap()
		if err != nil {
			tb.Fatal(err)
		}
		if len(m) > 3*t.xb {
			tb.Fatalf("index chunk %s holds %d members (split at %d)", key, len(m), t.xb)
		}
		for k, v := range m {
			ms, _ := strconv.ParseInt(v, 10, 64)
			index[binary.BigEndian.Uint64([]byte(k))] = ms
		}
	}
	if len(index) != len(want) {
		tb.Fatalf("the index holds %d members, want %d", len(index), len(want))
	}
	for id, ms := range want {
		if index[id] != ms {
			tb.Fatalf("the index holds %d at %d, want %d", id, index[id], ms)
		}
	}

	whole := *t
	whole.whole, whole.win = true, nil
	// n < 0: read outside a script; 1000 + n: from the whole directory.
	for _, n := range []int{1, 3, 7, 50, -1, -3, -50, 1007} {
		var got []tlEntry
		var after *tlEntry
		for {
			var p []tlEntry
			var err error
			switch {
			case n > 1000:
				p, err = whole.pageOutside(ctx, n-1000, after)
			case n > 0:
				p, err = t.page(ctx, n, after)
			default:
				p, err = t.pageOutside(ctx, -n, after)
			}
			if err != nil {
				tb.Fatal(err)
			}
			got = append(got, p...)
			if len(got) > len(wantList) {
				tb.Fatalf("pages of %d: more than %d entries: %v", n, len(wantList), head(got[len(wantList):]))
			}
			if len(p) < max(n%1000, -n) {
				break
			}
			after = &p[len(p)-1]
		}
		if !slices.Equal(got, wantList) {
			tb.Fatalf("pages of %d: %d entries, want %d:\n%v\n%v", n, len(got), len(wantList), head(got), head(wantList))
		}
	}
}

func head(es []tlEntry) []tlEntry { return es[:min(len(es), 12)] }

// TestTimeline changes a timeline of chunks of at most 8 entries at random
// (adds in time order and out of it, with many entries in one
// millisecond, moves, removals down to nothing and growth again) and
// checks it against a map after every few changes: chunks, bounds,
// index and pages (check). It also pages from cursors that are not in
// the list.
func TestTimeline(t *testing.T) {
	c := redistest.Standalone(t)
	ctx := context.Background()
	for _, w := range []struct {
		name   string
		grow   float64 // the share of changes that add
		spread int64   // the ms an add's time is drawn from, back from now
	}{
		{"Appends", 0.9, 1},
		{"Random", 0.6, 1000},
		{"Ties", 0.6, 3},
		{"Shrink", 0.2, 100},
	} {
		t.Run(w.name, func(t *testing.T) {
			tl := newTimeline(t, c, 8, 6)
			r := rand.New(rand.NewPCG(1, uint64(len(w.name))))
			want := map[uint64]int64{}
			now := int64(1_700_000_000_000)
			for i := range 3000 {
				if w.name == "Shrink" && i == 1500 {
					// Down to nothing, in a random order, then growing back.
					ids := slices.Collect(maps.Keys(want))
					r.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
					for k, id := range ids {
						if n, err := tl.rem(ctx, id); err != nil || n != 1 {
							t.Fatalf("rem %d: %d %v", id, n, err)
						}
						delete(want, id)
						if k%13 == 0 {
							tl.check(ctx, t, want)
						}
					}
					tl.check(ctx, t, want)
					w.grow = 0.8
				}
				now += int64(r.IntN(3))
				id := uint64(1 + r.IntN(400))
				if r.Float64() < w.grow {
					ms := now - r.Int64N(w.spread)
					n, err := tl.add(ctx, ms, id)
					if err != nil {
						t.Fatal(err)
					}
					if (n == 1) != (want[id] != ms) {
						t.Fatalf("add %d at %d: %d", id, ms, n)
					}
					want[id] = ms
				} else {
					n, err := tl.rem(ctx, id)
					if err != nil {
						t.Fatal(err)
					}
					if _, ok := want[id]; (n == 1) != ok {
						t.Fatalf("rem %d: %d", id, n)
					}
					delete(want, id)
				}
				if i%97 == 0 || i == 2999 {
					tl.check(ctx, t, want)
					// A cursor that is not in the list: the entries after it.
					cur := tlEntry{uint64(1 + r.IntN(400)), now - r.Int64N(w.spread+50)}
					if _, ok := want[cur.id]; !ok {
						got, err := tl.page(ctx, 5, &cur)
						if err != nil {
							t.Fatal(err)
						}
						outside, err := tl.pageOutside(ctx, 5, &cur)
						if err != nil {
							t.Fatal(err)
						}
						if !slices.Equal(got, outside) {
							t.Fatalf("after %v: %v in a script, %v outside", cur, got, outside)
						}
						var exp []tlEntry
						for id, ms := range want {
							if e := (tlEntry{id, ms}); newer(cur, e) < 0 {
								exp = append(exp, e)
							}
						}
						slices.SortFunc(exp, newer)
						if !slices.Equal(got, exp[:min(5, len(exp))]) {
							t.Fatalf("after %v: %v, want %v", cur, got, head(exp))
						}
					}
				}
			}
			t.Logf("%d entries at the end", len(want))
		})
	}
}

// window is a run of a timeline's directory, newest first, as read when
// the count of its changes was gen: pageOut reads pages from it while the
// count stays the same, so that a walk reads the directory once every
// few pages.
type window struct {
	gen         string
	dir         []string // the directory's members, newest first
	upto        string   // dir[0] is the chunk of the bounds up to this one (read from it)
	top, bottom bool     // dir holds the newest chunk, the oldest
	one         bool     // the timeline was one chunk (dir is empty)
}

// windowSize is the most chunks a window holds: 64 chunks' bounds are
// ~1.3 KB, and hold at least 2,048 entries (a quarter of 128 each).
const windowSize = 64

// chunks returns the window's run of chunk keys of timeline t from the
// chunk that holds bound b ("": the newest), at most most of them, or
// false when the window cannot tell (a newer chunk than it holds may hold
// b), or has fewer than most chunks after b's and not the oldest.
func (w *window) chunks(t *timeline, b string, most int) ([]string, bool) {
	if w.one {
		return []string{t.keys[0]}, true
	}
	if len(w.dir) == 0 || !w.top && (b == "" || b > w.upto) {
		return nil, false
	}
	i := slices.IndexFunc(w.dir, func(dm string) bool { return b == "" || dm[:16] <= b })
	if i < 0 {
		if !w.bottom {
			return nil, false
		}
		i = len(w.dir) - 1 // below the oldest bound: the oldest chunk
	}
	run := w.dir[i:min(len(w.dir), i+most)]
	if len(run) < most && !w.bottom {
		return nil, false
	}
	keys := make([]string, len(run))
	for k, dm := range run {
		if j := dm[16:]; j == "0" {
			keys[k] = t.keys[0]
		} else {
			keys[k] = t.keys[0] + ":" + j
		}
	}
	return keys, true
}

// readWindow reads the window of the directory from the chunk of bound b
// ("": the newest).
func (t *timeline) readWindow(ctx context.Context, b string) (*window, error) {
	c := t.c
	hi, size := "+", int64(windowSize)
	if t.whole {
		b, size = "", -1
	} else if b != "" {
		hi = "[" + b + "\xff"
	}
	rs := c.DoMulti(ctx,
		c.B().Hmget().Key(t.keys[2]).Field("k", "g").Build(),
		c.B().Zrevrangebylex().Key(t.keys[1]).Max(hi).Min("-").Limit(0, size).Build())
	fs, err := rs[0].ToArray()
	if err != nil {
		return nil, err
	}
	w := &window{top: b == "", upto: b}
	w.gen, _ = fs[1].ToString()
	if k, _ := fs[0].ToString(); k == "" {
		w.one = true
		return w, nil
	}
	if w.dir, err = rs[1].AsStrSlice(); err != nil {
		return nil, err
	}
	w.bottom = t.whole || len(w.dir) < windowSize
	if len(w.dir) == 0 { // below the oldest bound: the oldest chunk
		w.dir, err = c.Do(ctx, c.B().Zrange().Key(t.keys[1]).Min("0").Max("0").Build()).AsStrSlice()
	}
	return w, err
}

// pageOut reads a page as tlPage does, by plain reads outside a script:
// the chunks it needs, from the window of the directory the timeline last
// read (again when it does not hold them), with the count of the
// directory's changes after them, in one pipeline. It reports false when
// the count is not the window's (the caller reads again), and errShort
// when the page needs more chunks than it read (the caller reads on from
// the last entry).
func (t *timeline) pageOut(ctx context.Context, n int, after *tlEntry) ([]tlEntry, bool, error) {
	c := t.c
	var b string
	if after != nil {
		b = string(binary.BigEndian.AppendUint64(nil, uint64(after.ms))) + member(after.id)
	}
	// Enough chunks for a page if they are three quarters full, and one.
	most := n/(t.tb*3/4) + 2
	var keys []string
	ok := false
	if t.win != nil {
		keys, ok = t.win.chunks(t, b, most)
	}
	if !ok {
		w, err := t.readWindow(ctx, b)
		if err != nil {
			return nil, false, err
		}
		t.win = w
		if keys, ok = w.chunks(t, b, most); !ok {
			return nil, false, fmt.Errorf("a window read from %x does not hold it", b)
		}
	}
	var cmds rueidis.Commands
	if after != nil {
		s := strconv.FormatInt(after.ms, 10)
		cmds = append(cmds,
			c.B().Zrange().Key(keys[0]).Min(s).Max(s).Byscore().Rev().Withscores().Build(),
			c.B().Zrange().Key(keys[0]).Min("("+s).Max("-inf").Byscore().Rev().Limit(0, int64(n)).Withscores().Build())
	} else {
		cmds = append(cmds, c.B().Zrange().Key(keys[0]).Min("0").Max(strconv.Itoa(n-1)).Rev().Withscores().Build())
	}
	for _, k := range keys[1:] {
		cmds = append(cmds, c.B().Zrange().Key(k).Min("0").Max(strconv.Itoa(n-1)).Rev().Withscores().Build())
	}
	cmds = append(cmds, c.B().Hget().Key(t.keys[2]).Field("g").Build())
	rs := c.DoMulti(ctx, cmds...)
	if g, _ := rs[len(rs)-1].ToString(); g != t.win.gen {
		t.win = nil
		return nil, false, nil
	}
	out := make([]tlEntry, 0, n)
	for i, r := range rs[:len(rs)-1] {
		zs, err := r.AsZScores()
		if err != nil {
			return nil, false, err
		}
		for _, z := range zs {
			e := tlEntry{binary.BigEndian.Uint64([]byte(z.Member)), int64(z.Score)}
			if i == 0 && after != nil && e.id >= after.id {
				continue // a tie at or above the cursor
			}
			if len(out) < n {
				out = append(out, e)
			}
		}
	}
	if len(out) < n && len(keys) == most {
		return out, true, errShort
	}
	return out, true, nil
}

// errShort says that a page read outside a script needs more chunks than
// it read: the caller reads on after its last entry.
var errShort = errors.New("the page needs more chunks")

// pageOutside reads a page by pageOut, again while the directory changes
// under it (three times at most, then by the script), and on from its last
// entry while it needs more chunks.
func (t *timeline) pageOutside(ctx context.Context, n int, after *tlEntry) ([]tlEntry, error) {
	var out []tlEntry
	for tries := 0; len(out) < n; {
		p, ok, err := t.pageOut(ctx, n-len(out), after)
		switch {
		case err == errShort:
			out = append(out, p...)
			if len(p) > 0 {
				after = &out[len(out)-1]
			}
		case err != nil:
			return nil, err
		case !ok && tries < 3:
			tries++
		case !ok:
			p, err := t.page(ctx, n-len(out), after)
			return append(out, p...), err
		default:
			return append(out, p...), nil
		}
	}
	return out, nil
}
