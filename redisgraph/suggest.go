package redisgraph

import (
	"cmp"
	"context"
	"slices"
	"strconv"

	"github.com/redis/rueidis"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/redisgraph/internal/errs"
	"github.com/followgraph/followgraph/redisgraph/internal/layout"
	"github.com/followgraph/followgraph/redisgraph/internal/lists"
	"github.com/followgraph/followgraph/redisgraph/internal/wire"
)

// Suggestions bound their work: they consider the suggestFollowees people
// a user followed most recently, and of each the suggestPerFollowee people
// they followed most recently: at most 65,536 candidates, read with one
// command per followee (pipelined), each returning at most 256 members.
// Below those bounds the scores are exact.
const (
	suggestFollowees   = 256
	suggestPerFollowee = 256
)

// Suggestions returns people user may want to follow; see followgraph.Graph
// and the bounds above. Via names up to three of the considered followees
// that follow the candidate, most recently followed first.
func (g *Graph) Suggestions(ctx context.Context, user fg.UserID, limit int) ([]fg.Suggestion, error) {
	if err := fg.CheckIDs(user); err != nil {
		return nil, err
	}
	size, err := fg.CheckSuggestLimit(limit)
	if err != nil {
		return nil, err
	}
	cs, err := g.readCounters(ctx, []fg.UserID{user})
	if err != nil {
		return nil, errs.Wrap("suggestions", err)
	}
	if !cs[0].state.Active() {
		return []fg.Suggestion{}, nil // as for a user with no edges
	}
	out, err := g.suggest(ctx, user, cs[0], size)
	if err != nil {
		return nil, errs.Wrap("suggestions", err)
	}
	return out, nil
}

type candidate struct {
	id    fg.UserID
	score int64
	via   []fg.UserID
}

func (g *Graph) suggest(ctx context.Context, user fg.UserID, uc counters, size int) ([]fg.Suggestion, error) {
	newest := func(id fg.UserID, n int) rueidis.Completed {
		return g.c.B().Zrange().Key(g.ks.User(id, layout.Out)).Min("0").Max(strconv.Itoa(n - 1)).Rev().Build()
	}
	es, err := g.lists.Range(ctx, user, layout.Out, nil, suggestFollowees)
	if err != nil || len(es) == 0 {
		return []fg.Suggestion{}, err
	}
	followees := make([]fg.UserID, len(es))
	for i, e := range es {
		followees[i] = e.ID
	}
	// Each followee's newest follows, pipelined; a followee whose follows
	// are in several chunks by its view is read apart (rangeSide).
	res, vs, err := g.lists.ReadChunked(ctx, followees, func(vs []lists.View) rueidis.Commands {
		cmds := make(rueidis.Commands, len(followees))
		for i, f := range followees {
			cmds[i] = newest(f, suggestPerFollowee)
		}
		return cmds
	})
	if err != nil {
		return nil, err
	}
	byID := make(map[fg.UserID]*candidate)
	for i, r := range res {
		var ids []fg.UserID
		if vs[i].Chunks(layout.Out) > 1 {
			es, err := g.lists.Range(ctx, followees[i], layout.Out, nil, suggestPerFollowee)
			if err != nil {
				return nil, err
			}
			for _, e := range es {
				ids = append(ids, e.ID)
			}
		} else if ids, err = wire.IDs(r); err != nil {
			return nil, err
		}
		for _, id := range ids {
			if id == user {
				continue
			}
			c := byID[id]
			if c == nil {
				c = &candidate{id: id}
				byID[id] = c
			}
			c.score++
			if len(c.via) < 3 {
				c.via = append(c.via, followees[i])
			}
		}
	}
	cands := make([]*candidate, 0, len(byID))
	for _, c := range byID {
		cands = append(cands, c)
	}
	slices.SortFunc(cands, func(a, b *candidate) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	// Drop those user follows, has asked to follow, blocks, is blocked by
	// or mutes, testing the best first, in batches; the flags only when
	// user's counters, uc, say it has edges of the other kinds.
	const excluded = layout.FlagRequested | layout.FlagBlocking | layout.FlagBlockedBy | layout.FlagMuting
	out := []fg.Suggestion{}
	for len(cands) > 0 && len(out) < size {
		batch := cands[:min(len(cands), 2*(size-len(out))+16)]
		cands = cands[len(batch):]
		ms := make([]string, len(batch))
		for i, c := range batch {
			ms[i] = wire.Member(c.id)
		}
		scores, flags, err := g.probeFlags(ctx, user, uc.linked(), ms, layout.Out)
		if err != nil {
			return nil, err
		}
		for i, c := range batch {
			if scores[0][i] < 0 && flags[i]&excluded == 0 && len(out) < size {
				out = append(out, fg.Suggestion{ID: c.id, Score: c.score, Via: c.via})
			}
		}
	}
	return out, nil
}
