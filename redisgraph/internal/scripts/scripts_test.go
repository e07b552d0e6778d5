package scripts

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/redisgraph/internal/layout"
	"github.com/followgraph/followgraph/redisgraph/internal/redistest"
	"github.com/followgraph/followgraph/redisgraph/internal/wire"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// TestLayoutLua: lua/layout.lua is what package layout generates (run
// go generate ./redisgraph/... after changing the layout), and no other
// script declares what it declares again.
func TestLayoutLua(t *testing.T) {
	if luaLayout != layout.Lua() {
		t.Fatal("lua/layout.lua is not current: run go generate ./redisgraph/...")
	}
	names := regexp.MustCompile(`(?m)^local (NKEYS|USER_KEYS|SIDE_CODES|sides|flagOf|groups|groupOf|isHash)\b`)
	for f, b := range luaFiles(t) {
		if m := names.Find(b); m != nil {
			t.Errorf("%s declares %q again: it is generated (lua/layout.lua)", f, m)
		}
	}
}

// luaFiles returns the scripts' files but the generated one, by name.
func luaFiles(t *testing.T) map[string][]byte {
	t.Helper()
	files, err := filepath.Glob("lua/*.lua")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, f := range files {
		if filepath.Base(f) == "layout.lua" {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[f] = b
	}
	return out
}

// TestSeam: the scripts read their keys and arguments by name, never by
// number, and write no field or word of the layout as a literal
// (layout.Checked): each is declared once, in Go. A mutation that writes
// ARGV[1], or 'clk' again, in any script fails here.
func TestSeam(t *testing.T) {
	numbered := regexp.MustCompile(`\b(ARGV|KEYS)\[\s*\d`)
	quoted := regexp.MustCompile(`'([^'\n]*)'|"([^"\n]*)"`)
	checked := layout.Checked()
	for f, b := range luaFiles(t) {
		code := comment.ReplaceAllString(string(b), "")
		if m := numbered.FindString(code); m != "" {
			t.Errorf("%s reads %s...] by number: name it (its Keys or Args struct)", f, m)
		}
		for _, m := range quoted.FindAllStringSubmatch(code, -1) {
			if v := m[1] + m[2]; checked[v] {
				t.Errorf("%s writes %q: name it by its scalar (layout.Scalars)", f, v)
			}
		}
	}
}

// TestNamesDeclared: every name in capitals that a script reads is
// declared, in its header (a scalar, a key, an argument) or by the
// sources it is made of; a name no script may read is none of these.
func TestNamesDeclared(t *testing.T) {
	declared := regexp.MustCompile(`(?m)^\s*local ([A-Za-z0-9_, ]+?)\s*(=|$)`)
	strs := regexp.MustCompile(`'[^'\n]*'|"[^"\n]*"`)
	for _, s := range every {
		src := s.Source(64)
		known := map[string]bool{"KEYS": true, "ARGV": true}
		for _, m := range declared.FindAllStringSubmatch(src, -1) {
			for _, n := range strings.Split(m[1], ",") {
				known[strings.TrimSpace(n)] = true
			}
		}
		code := strs.ReplaceAllString(comment.ReplaceAllString(src, ""), "''")
		for _, n := range identifier.FindAllString(code, -1) {
			if !known[n] {
				t.Errorf("a script reads %s, which nothing declares:\n%.200s", n, src)
			}
		}
	}
}

// fill sets every field of the struct v to a value of its own, named
// after prefix, and returns them in the order of the fields.
func fill(v reflect.Value, prefix string) []string {
	var out []string
	for i := range v.NumField() {
		f, name := v.Field(i), fmt.Sprintf("%s%d", prefix, i)
		switch f.Kind() {
		case reflect.Struct:
			out = append(out, fill(f, name+".")...)
		case reflect.String:
			f.SetString(name)
			out = append(out, name)
		case reflect.Array:
			for j := range f.Len() {
				f.Index(j).SetString(fmt.Sprintf("%s.%d", name, j))
				out = append(out, f.Index(j).String())
			}
		case reflect.Slice:
			f.Set(reflect.ValueOf([]string{name + "s1", name + "s2"}))
			out = append(out, name+"s1", name+"s2")
		}
	}
	return out
}

// TestCallLists: each script's keys and arguments are listed in the
// order of their struct's fields, which is the order the script reads
// them by name; a field left out of its list, or two swapped, fails here.
func TestCallLists(t *testing.T) {
	for _, l := range []lister{ChangeKeys{}, ChangeArgs{}, EdgeKeys{}, EdgeArgs{}, EffectsKeys{}, EffectsArgs{},
		TiesKeys{}, TiesArgs{}, BulkKeys{}, BulkArgs{}, CensusKeys{}, LinksKeys{}, LinksArgs{}, ArchiveKeys{},
		ArchiveArgs{}, PairSideKeys{}, PairSideArgs{}, StateKeys{}, StateArgs{}, ApplyStateKeys{}, ApplyStateArgs{},
		JobDoneKeys{}, JobDoneArgs{}, GuardKeys{}, CheckpointKeys{}, CheckpointArgs{}, MarkerKeys{}, MarkerArgs{},
		LeaseKeys{}, LeaseArgs{}} {
		v := reflect.New(reflect.TypeOf(l)).Elem()
		want := fill(v, "f")
		if got := v.Interface().(lister).list(); !slices.Equal(got, want) {
			t.Errorf("%T lists %v, want %v", l, got, want)
		}
	}
}

// TestChunkHash: the scripts place a member in the chunk the Go side
// computes (lua/chunks.lua against layout.MemberHash and ChunkOf), for
// ids of every size and numbers of chunks of every level.
func TestChunkHash(t *testing.T) {
	c := redistest.Standalone(t)
	ctx := context.Background()
	src := luaChunks + `
local out = {}
for i = 1, #ARGV, 2 do out[#out + 1] = chunkOf(hashOf(ARGV[i]), tonumber(ARGV[i + 1])) end
return out`
	var args []string
	var want []int64
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		id := fg.UserID(r.Uint64() >> (1 + r.IntN(63)))
		if i < 10 {
			id = fg.UserID(i + 1)
		}
		if !id.Valid() {
			id = 1
		}
		n := 1 + r.IntN(300)
		args = append(args, wire.Member(id), strconv.Itoa(n))
		want = append(want, int64(layout.ChunkOf(layout.MemberHash(uint64(id)), n)))
	}
	got, err := c.Do(ctx, c.B().Eval().Script(src).Numkeys(0).Arg(args...).Build()).AsIntSlice()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("member %x of %s chunks: Lua %d, Go %d", args[2*i], args[2*i+1], got[i], want[i])
			}
		}
	}
}

// TestNextVersion: lua/version.lua's nextv gives the version
// followgraph.NextVersion does, for clocks behind, at and ahead of the
// time, counters at the end of a millisecond, every region, and the time
// 0 that lua/edge.lua raises a version with.
func TestNextVersion(t *testing.T) {
	c := redistest.Standalone(t)
	src := luaVersion + `
local out = {}
for i = 1, #ARGV, 3 do out[#out + 1] = nextv(ARGV[i], tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])) end
return out`
	const ms = 1_764_000_000_000
	var args, want []string
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 3000 {
		ctr := fg.Version(r.IntN(1 << fg.VersionCounterBits))
		if i%3 == 0 {
			ctr = 1<<fg.VersionCounterBits - 1 - fg.Version(r.IntN(40))
		}
		clk := fg.VersionAt(ms+int64(r.IntN(3))) + ctr
		now := []int64{0, ms, ms + 1, ms + 2}[r.IntN(4)]
		region := r.IntN(fg.MaxRegion + 1)
		args = append(args, wire.VersionHex(clk), strconv.FormatInt(now, 10), strconv.Itoa(region))
		want = append(want, wire.VersionHex(fg.NextVersion(clk, now, region)))
	}
	got, err := c.Do(t.Context(), c.B().Eval().Script(src).Numkeys(0).Arg(args...).Build()).AsStrSlice()
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("nextv(%s, %s, %s) = %s, NextVersion %s", args[3*i], args[3*i+1], args[3*i+2], got[i], want[i])
		}
	}
}

// changeHeader returns the header of the follow script: the locals it
// declares before its sources.
func changeHeader() string {
	h, _, _ := strings.Cut(Change.Source(0), luaVersion)
	return h
}

// BenchmarkScriptHeader: what a script pays at every call for the
// generated declarations it starts with, as Redis's time per call (INFO
// commandstats) of a script that does nothing else: none, the follow
// script's header (the names it reads), lua/layout.lua (the tables of
// the scripts that read them). Each run starts a Redis of its own.
func BenchmarkScriptHeader(b *testing.B) {
	for _, h := range []struct{ name, src string }{
		{"None", ""},
		{"ChangeHeader", changeHeader()},
		{"Layout", luaLayout},
	} {
		b.Run(h.name, func(b *testing.B) {
			addr, _ := redistest.Private(b)
			c := redistest.SingleClient(b, addr)
			ctx := context.Background()
			sha, err := c.Do(ctx, c.B().ScriptLoad().Script(h.src+"return 1\n").Build()).ToString()
			if err != nil {
				b.Fatal(err)
			}
			calls0, usec0 := redistest.CommandStat(b, c, "evalsha")
			b.SetParallelism(32)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := c.Do(ctx, c.B().Evalsha().Sha1(sha).Numkeys(0).Build()).Error(); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			calls1, usec1 := redistest.CommandStat(b, c, "evalsha")
			if calls1 > calls0 {
				b.ReportMetric(float64(usec1-usec0)/float64(calls1-calls0), "redis-µs/call")
			}
		})
	}
}
