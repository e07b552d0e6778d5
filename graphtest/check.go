package graphtest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/followgraph/followgraph"
)

// The checks in this file report with tb.Errorf and never stop the test,
// so goroutines other than the test's own may call them.

// entry returns the list entry of id followed at ms milliseconds.
func entry(id followgraph.UserID, ms int64) followgraph.Entry {
	return followgraph.Entry{ID: id, Since: followgraph.Millis(ms)}
}

func sameEntries(a, b []followgraph.Entry) bool {
	return slices.EqualFunc(a, b, func(x, y followgraph.Entry) bool {
		return x.ID == y.ID && x.Since.Equal(y.Since)
	})
}

func formatEntry(e followgraph.Entry) string {
	return fmt.Sprintf("%d@%s", e.ID, formatTime(e.Since))
}

func formatEntries(es []followgraph.Entry) string {
	s := make([]string, len(es))
	for i, e := range es {
		s[i] = formatEntry(e)
	}
	return "[" + strings.Join(s, " ") + "]"
}

// formatTime writes t to the millisecond, and the zero time as "zero".
func formatTime(t time.Time) string {
	if t.IsZero() {
		return "zero"
	}
	return t.UTC().Format(followgraph.TimeFormat)
}

func checkEntries(tb testing.TB, what string, got, want []followgraph.Entry) {
	tb.Helper()
	if !sameEntries(got, want) {
		tb.Errorf("%s =\n\t%s\nwant\n\t%s", what, formatEntries(got), formatEntries(want))
	}
}

// checkList reads list l in pages of limit entries and compares it with
// want. It returns false when they differ.
func checkList(tb testing.TB, ctx context.Context, l list, limit int, want []followgraph.Entry) bool {
	tb.Helper()
	got, err := readStatic(ctx, l, limit)
	if err != nil {
		tb.Error(err)
		return false
	}
	if !sameEntries(got, want) {
		tb.Errorf("%s read %d a page =\n\t%s\nwant\n\t%s", l.name, limit, formatEntries(got), formatEntries(want))
		return false
	}
	return true
}

// checkListEveryLimit reads list l with each of pageLimits, up to the
// first that gives another list than want.
func checkListEveryLimit(tb testing.TB, ctx context.Context, l list, want []followgraph.Entry) {
	tb.Helper()
	for _, limit := range pageLimits {
		if !checkList(tb, ctx, l, limit, want) {
			return
		}
	}
}

// checkTime reports unless got is the time of ms milliseconds.
func checkTime(tb testing.TB, what string, got time.Time, ms int64) {
	tb.Helper()
	if want := followgraph.Millis(ms); !got.Equal(want) {
		tb.Errorf("%s = %s, want %s", what, formatTime(got), formatTime(want))
	}
}

// checkCode reports unless err has the error code want.
func checkCode(tb testing.TB, what string, err error, want string) {
	tb.Helper()
	if got := followgraph.ErrorCode(err); got != want {
		tb.Errorf("%s: error %v (code %q), want code %q", what, err, got, want)
	}
}

func checkEdge(tb testing.TB, what string, got, want followgraph.Edge) {
	tb.Helper()
	if got.Following != want.Following || !got.Since.Equal(want.Since) {
		tb.Errorf("%s = {Following: %v, Since: %s}, want {Following: %v, Since: %s}",
			what, got.Following, formatTime(got.Since), want.Following, formatTime(want.Since))
	}
}

func checkCounts(tb testing.TB, what string, got, want []followgraph.Counts) {
	tb.Helper()
	if !slices.Equal(got, want) {
		tb.Errorf("%s =\n\t%+v\nwant\n\t%+v", what, got, want)
	}
}

func formatRelation(r followgraph.RelationInfo) string {
	var flags strings.Builder
	for _, f := range []struct {
		on   bool
		name string
	}{{r.Blocking, "blocking"}, {r.BlockedBy, "blocked_by"}, {r.Muting, "muting"}, {r.Requested, "requested"}, {r.RequestedBy, "requested_by"}} {
		if f.on {
			flags.WriteString(", " + f.name)
		}
	}
	return fmt.Sprintf("{%d %s following since %s, followed by since %s%s}",
		r.ID, r.Relation, formatTime(r.FollowingSince), formatTime(r.FollowedBySince), flags.String())
}

func checkRelations(tb testing.TB, what string, got, want []followgraph.RelationInfo) {
	tb.Helper()
	if len(got) != len(want) {
		tb.Errorf("%s: %d relations, want %d", what, len(got), len(want))
		return
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.ID != w.ID || g.Relation != w.Relation ||
			!g.FollowingSince.Equal(w.FollowingSince) || !g.FollowedBySince.Equal(w.FollowedBySince) ||
			g.Blocking != w.Blocking || g.BlockedBy != w.BlockedBy || g.Muting != w.Muting ||
			g.Requested != w.Requested || g.RequestedBy != w.RequestedBy {
			tb.Errorf("%s: relation %d = %s, want %s", what, i, formatRelation(g), formatRelation(w))
		}
	}
}

// checkLink reports unless got is want.
func checkLink(tb testing.TB, what string, got, want followgraph.Link) {
	tb.Helper()
	if got.On != want.On || !got.Since.Equal(want.Since) || !got.Expires.Equal(want.Expires) {
		tb.Errorf("%s = {On: %v, Since: %s, Expires: %s}, want {On: %v, Since: %s, Expires: %s}", what,
			got.On, formatTime(got.Since), formatTime(got.Expires), want.On, formatTime(want.Since), formatTime(want.Expires))
	}
}

// checkLinkResult reports unless got is want.
func checkLinkResult(tb testing.TB, what string, got, want followgraph.LinkResult) {
	tb.Helper()
	if got.Created != want.Created || !got.Since.Equal(want.Since) || !got.Expires.Equal(want.Expires) {
		tb.Errorf("%s = {Created: %v, Since: %s, Expires: %s}, want {Created: %v, Since: %s, Expires: %s}", what,
			got.Created, formatTime(got.Since), formatTime(got.Expires), want.Created, formatTime(want.Since), formatTime(want.Expires))
	}
}

func formatSuggestions(s []followgraph.Suggestion) string {
	parts := make([]string, len(s))
	for i, x := range s {
		parts[i] = fmt.Sprintf("%d(score %d)", x.ID, x.Score)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// checkSuggestions compares got with want by id, score and order. Each
// want's Via holds every one of the people user follows that follow that
// candidate; got's Via must name min(Score, 3) of them, each once.
func checkSuggestions(tb testing.TB, what string, got, want []followgraph.Suggestion) {
	tb.Helper()
	same := slices.EqualFunc(got, want, func(g, w followgraph.Suggestion) bool {
		return g.ID == w.ID && g.Score == w.Score
	})
	if !same {
		tb.Errorf("%s =\n\t%s\nwant\n\t%s", what, formatSuggestions(got), formatSuggestions(want))
		return
	}
	for i, s := range got {
		if n := min(s.Score, 3); int64(len(s.Via)) != n {
			tb.Errorf("%s: %d has score %d and via %v; want via to name %d users", what, s.ID, s.Score, s.Via, n)
		}
		for j, v := range s.Via {
			if !slices.Contains(want[i].Via, v) {
				tb.Errorf("%s: %d via %v names %d, which is none of %v, the followed users that follow %d",
					what, s.ID, s.Via, v, want[i].Via, s.ID)
			}
			if slices.Contains(s.Via[:j], v) {
				tb.Errorf("%s: %d via %v names %d twice", what, s.ID, s.Via, v)
			}
		}
	}
}
