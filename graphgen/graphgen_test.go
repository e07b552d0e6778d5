package graphgen

import (
	"math"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/followgraph/followgraph"
)

// small is the config most tests use: 200k edges over 4000 users.
var small = Default(200_000, 1)

// collect returns all the edges of c.
func collect(tb testing.TB, c Config) []Edge {
	tb.Helper()
	var edges []Edge
	for e := range Edges(c) {
		edges = append(edges, e)
	}
	return edges
}

func TestEdges_Reproducible(t *testing.T) {
	want := collect(t, small)

	t.Run("SameConfig", func(t *testing.T) {
		if got := collect(t, small); !slices.Equal(got, want) {
			t.Fatal("two runs of the same config differ")
		}
	})

	t.Run("ParallelGenerators", func(t *testing.T) {
		// Four generators, each taking every fourth follower, must agree
		// with the sequential stream.
		const workers = 4
		per := make([][][]Edge, workers) // per[w][u-1] = edges of follower u
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				g, err := New(small)
				if err != nil {
					t.Error(err)
					return
				}
				per[w] = make([][]Edge, small.Users)
				for u := w + 1; u <= small.Users; u += workers {
					per[w][u-1] = g.AppendEdges(nil, followgraph.UserID(u))
				}
			})
		}
		wg.Wait()
		var got []Edge
		for u := 1; u <= small.Users; u++ {
			got = append(got, per[(u-1)%workers][u-1]...)
		}
		if !slices.Equal(got, want) {
			t.Fatal("parallel generators differ from Edges")
		}
	})

	t.Run("OtherSeed", func(t *testing.T) {
		c := small
		c.Seed = 2
		got := collect(t, c)
		same := 0
		for i := range min(len(got), len(want)) {
			if got[i] == want[i] {
				same++
			}
		}
		if same > len(want)/100 {
			t.Fatalf("seed 2 repeats %d of %d edges of seed 1 in place", same, len(want))
		}
	})

	t.Run("Restart", func(t *testing.T) {
		// Breaking off and ranging again starts over.
		seq := Edges(small)
		var first []Edge
		for e := range seq {
			first = append(first, e)
			if len(first) == 10 {
				break
			}
		}
		if !slices.Equal(first, want[:10]) {
			t.Fatal("the first 10 edges differ from a full run's")
		}
		n := 0
		for range seq {
			n++
		}
		if n != len(want) {
			t.Fatalf("second range over the same sequence: %d edges, want %d", n, len(want))
		}
	})
}

func TestEdges_Valid(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
	}{
		{"Default", small},
		{"CustomTimes", Config{Users: 3000, Edges: 100_000, Seed: 7, Start: 1000, End: 1010}},
		{"Steep", Config{Users: 5000, Edges: 150_000, Seed: 3, OutExp: 3, InExp: 2}},
		{"DenseCap", Config{Users: 200, Edges: 10_000, Seed: 4, MaxOut: 150}},
		{"TwoUsers", Config{Users: 2, Edges: 2, Seed: 5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.cfg.withDefaults()
			edges := collect(t, tt.cfg)
			for i, e := range edges {
				if e.Follower < 1 || int(e.Follower) > c.Users || e.Followee < 1 || int(e.Followee) > c.Users {
					t.Fatalf("edge %d %+v: id outside 1..%d", i, e, c.Users)
				}
				if e.Follower == e.Followee {
					t.Fatalf("edge %d %+v: self edge", i, e)
				}
				if e.Millis < c.Start || e.Millis >= c.End {
					t.Fatalf("edge %d %+v: time outside [%d, %d)", i, e, c.Start, c.End)
				}
				// Strictly increasing (Follower, Followee) also rules out duplicates.
				if i > 0 {
					p := edges[i-1]
					if p.Follower > e.Follower || p.Follower == e.Follower && p.Followee >= e.Followee {
						t.Fatalf("edge %d %+v follows %+v: not strictly ordered", i, e, p)
					}
				}
			}
			if got, want := float64(len(edges)), float64(c.Edges); math.Abs(got-want) > 0.02*want {
				t.Fatalf("%d edges, want %d within 2%%", len(edges), c.Edges)
			}
		})
	}
}

func TestEdges_Times(t *testing.T) {
	c := small.withDefaults()
	if c.Start != defaultStart || c.End != defaultEnd {
		t.Fatalf("default times [%d, %d), want [%d, %d)", c.Start, c.End, defaultStart, defaultEnd)
	}
	// Uniform: each tenth of the range holds about a tenth of the edges.
	edges := collect(t, small)
	var tenths [10]int
	for _, e := range edges {
		tenths[(e.Millis-c.Start)*10/(c.End-c.Start)]++
	}
	for i, n := range tenths {
		if share := float64(n) / float64(len(edges)); math.Abs(share-0.1) > 0.01 {
			t.Errorf("tenth %d of the time range holds %.3f of the edges, want 0.1", i, share)
		}
	}
}

func TestEdges_HeavyTails(t *testing.T) {
	c := small.withDefaults()
	in := make([]int, c.Users+1)
	out := make([]int, c.Users+1)
	for e := range Edges(c) {
		in[e.Followee]++
		out[e.Follower]++
	}
	in, out = in[1:], out[1:]
	total := 0
	for _, d := range out {
		total += d
	}
	mean := float64(total) / float64(c.Users)
	top := slices.Index(in, slices.Max(in)) + 1

	slices.Sort(in)
	slices.Sort(out)
	maxIn, medianOut, maxOut := in[len(in)-1], out[len(out)/2], out[len(out)-1]
	t.Logf("users %d, edges %d: in-degree max %d, median %d; out-degree median %d, mean %.1f, max %d",
		c.Users, total, maxIn, in[len(in)/2], medianOut, mean, maxOut)

	if float64(maxIn) < 20*mean {
		t.Errorf("max in-degree %d, want at least 20 times the mean %.1f", maxIn, mean)
	}
	if maxIn < c.Users/4 {
		t.Errorf("max in-degree %d, want a quarter of the %d users or more", maxIn, c.Users)
	}
	if float64(medianOut) > 0.75*mean {
		t.Errorf("median out-degree %d, want well under the mean %.1f", medianOut, mean)
	}
	if float64(maxOut) < 5*mean || maxOut > c.MaxOut {
		t.Errorf("max out-degree %d, want from 5 times the mean %.1f to MaxOut %d", maxOut, mean, c.MaxOut)
	}
	if out[0] < 1 {
		t.Errorf("min out-degree %d, want at least 1", out[0])
	}
	if top <= 3 {
		t.Errorf("the most followed user is id %d: popularity is not shuffled", top)
	}
}

func TestGenerator_PopularRank(t *testing.T) {
	// A config with more users than the table holds, so that draws cross
	// from the table to rand.Zipf; compare the share of draws in rank
	// ranges on both sides with the Zipf law.
	c := Config{Users: 100_000, Edges: 5_000_000, Seed: 9}
	g, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	g.pcg.Seed(1, 2)
	const draws = 2_000_000
	ranges := [][2]int{{0, 0}, {1, 9}, {10, headRanks/2 - 1}, {headRanks / 2, headRanks - 1}, {headRanks, 2*headRanks - 1}, {2 * headRanks, c.Users - 1}}
	counts := make([]int, len(ranges))
	for range draws {
		r := int(g.popularRank())
		for i, rg := range ranges {
			if rg[0] <= r && r <= rg[1] {
				counts[i]++
			}
		}
	}
	total := sumPow(1, c.Users, g.p.cfg.InExp)
	for i, rg := range ranges {
		want := sumPow(rg[0]+1, rg[1]+1, g.p.cfg.InExp) / total
		got := float64(counts[i]) / draws
		sd := math.Sqrt(want * (1 - want) / draws)
		if math.Abs(got-want) > 5*sd {
			t.Errorf("ranks %d..%d: %.5f of draws, want %.5f (sd %.5f)", rg[0], rg[1], got, want, sd)
		}
	}
}

func TestConfig_Validate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string // substring of the error; "" for valid
	}{
		{"Default", Default(200_000, 1), ""},
		{"ZeroUsersDefaultsToEdgesOver50", Config{Edges: 200_000}, ""},
		{"OneUser", Config{Users: 1, Edges: 1}, "users"},
		{"NoEdges", Config{Users: 10, Edges: 0}, "edges"},
		{"OutExpOne", Config{Users: 1000, Edges: 50_000, OutExp: 1}, "OutExp"},
		{"InExpBelowOne", Config{Users: 1000, Edges: 50_000, InExp: 0.9}, "InExp"},
		{"InExpNaN", Config{Users: 1000, Edges: 50_000, InExp: math.NaN()}, "InExp"},
		{"MaxOutAllUsers", Config{Users: 1000, Edges: 50_000, MaxOut: 1000}, "MaxOut"},
		{"NegativeMaxOut", Config{Users: 1000, Edges: 50_000, MaxOut: -1}, "MaxOut"},
		{"EmptyTimes", Config{Users: 1000, Edges: 50_000, Start: 5, End: 5}, "Start"},
		{"TimesOverflow", Config{Users: 1000, Edges: 50_000, Start: math.MinInt64, End: math.MaxInt64}, "Start"},
		{"MeanAboveMaxOut", Config{Users: 1000, Edges: 200_000, MaxOut: 100}, "mean out-degree"},
		{"MeanBelowMin", Config{Users: 100_000, Edges: 200_000}, "mean out-degree"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tt.want != "" && err == nil:
				t.Fatalf("Validate: nil, want an error about %s", tt.want)
			case tt.want != "" && !strings.Contains(err.Error(), tt.want):
				t.Fatalf("Validate: %v, want an error about %s", err, tt.want)
			}
		})
	}

	t.Run("EdgesPanics", func(t *testing.T) {
		defer func() {
			if recover() == nil {
				t.Fatal("Edges of an invalid config did not panic")
			}
		}()
		Edges(Config{Users: 1, Edges: 1})
	})
}

func TestPerm(t *testing.T) {
	for _, n := range []uint64{1, 2, 3, 4, 5, 17, 255, 256, 257, 1000, 4097, 65536} {
		p := newPerm(n, n*31)
		seen := make([]bool, n)
		for x := range n {
			y := p.at(x)
			if y >= n || seen[y] {
				t.Fatalf("n=%d: at(%d) = %d is out of range or repeated", n, x, y)
			}
			seen[y] = true
			if back := p.inverse(y); back != x {
				t.Fatalf("n=%d: inverse(at(%d)) = %d", n, x, back)
			}
		}
	}
}

func TestSumPow(t *testing.T) {
	for _, s := range []float64{0.5, 1, 1.1, 2, 3} {
		for _, ab := range [][2]int{{1, 1}, {1, 100}, {1, 5000}, {7, 130}, {200, 9000}, {5, 4}} {
			want := 0.0
			for k := ab[0]; k <= ab[1]; k++ {
				want += math.Pow(float64(k), -s)
			}
			if got := sumPow(ab[0], ab[1], s); math.Abs(got-want) > 1e-9*math.Max(1, want) {
				t.Errorf("sumPow(%d, %d, %g) = %.12g, want %.12g", ab[0], ab[1], s, got, want)
			}
		}
	}
}
