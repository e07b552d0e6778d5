package redisgraph

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/redisgraph/internal/errs"
	"github.com/followgraph/followgraph/redisgraph/internal/layout"
	"github.com/followgraph/followgraph/redisgraph/internal/lists"
	"github.com/followgraph/followgraph/redisgraph/internal/scripts"
	"github.com/followgraph/followgraph/redisgraph/internal/wire"
)

// Blocks, mutes, follow requests and the private setting are edges kept as
// follows are (package keyspace), changed by lua/edge.lua, each change one event in
// the outbox; on a Cluster the other user's side follows in a second step
// (edgeChange), as a follow's does. docs/design/
// relationships.md says what a reader may see between the steps.

// approveChunk is how many pending requests SetPrivate(false) approves
// from one read of the requests.
const approveChunk = 100

// Block makes user block target; see followgraph.Graph. On the blocker's
// side the block and the end of the follows and requests between the two
// are one atomic step, with the event; the target's side follows in the
// same step on a standalone Redis, in a second step on a Cluster.
func (g *Graph) Block(ctx context.Context, user, target fg.UserID) (fg.LinkResult, error) {
	return g.link(ctx, "block", user, target, 0)
}

// Unblock ends user's block of target; see followgraph.Graph and Block.
func (g *Graph) Unblock(ctx context.Context, user, target fg.UserID) (bool, error) {
	return g.unlink(ctx, "unblock", user, target)
}

// Mute makes user mute target for d; see followgraph.Graph. A mute is on
// the muter's side only. Its expiry is checked at each read against the
// Graph's clock (WithClock); nothing is written at expiry.
func (g *Graph) Mute(ctx context.Context, user, target fg.UserID, d time.Duration) (fg.LinkResult, error) {
	if err := fg.CheckMute(d); err != nil {
		return fg.LinkResult{}, err
	}
	return g.link(ctx, "mute", user, target, d)
}

// Unmute ends user's mute of target; see followgraph.Graph.
func (g *Graph) Unmute(ctx context.Context, user, target fg.UserID) (bool, error) {
	return g.unlink(ctx, "unmute", user, target)
}

func (g *Graph) link(ctx context.Context, op string, user, target fg.UserID, d time.Duration) (fg.LinkResult, error) {
	if err := fg.CheckLinkIDs(user, target); err != nil {
		return fg.LinkResult{}, err
	}
	if g.ks.Cluster() { // the target's state is not on the user's slot (targetRefused)
		cs, err := g.readCounters(ctx, []fg.UserID{target})
		if err != nil {
			return fg.LinkResult{}, errs.Wrap(op, err)
		}
		if err := g.targetRefused(ctx, op, user, cs[0], true); err != nil {
			return fg.LinkResult{}, err
		}
	}
	r, err := g.live(ctx, op, user, target, g.writeRate, scripts.EdgeArgs{Mute: strconv.FormatInt(d.Milliseconds(), 10)})
	if err != nil {
		return fg.LinkResult{}, err
	}
	return fg.LinkResult{Created: r.changed && (op != "mute" || r.since.Equal(r.v.Time())), Since: r.since, Expires: r.expires}, nil
}

func (g *Graph) unlink(ctx context.Context, op string, user, target fg.UserID) (bool, error) {
	if err := fg.CheckIDs(user, target); err != nil {
		return false, err
	}
	if user == target {
		return false, nil
	}
	r, err := g.live(ctx, op, user, target, g.writeRate, scripts.EdgeArgs{})
	return r.changed, err
}

// live makes op by lua/edge.lua after the write gate.
func (g *Graph) live(ctx context.Context, op string, user, target fg.UserID, rate string, x scripts.EdgeArgs) (changeResult, error) {
	if g.gate != nil {
		if err := g.gate(ctx); err != nil {
			return changeResult{}, fmt.Errorf("redisgraph: %s: %w", op, err)
		}
	}
	return g.edgeChange(ctx, op, user, target, rate, "0", x)
}

// Approve approves requester's pending request to user; see
// followgraph.Graph. It is decided on user's side, where the request is;
// on a Cluster the requester's side follows in a second step.
func (g *Graph) Approve(ctx context.Context, user, requester fg.UserID) (fg.FollowResult, error) {
	return g.approve(ctx, user, requester, g.writeRate)
}

func (g *Graph) approve(ctx context.Context, user, requester fg.UserID, rate string) (fg.FollowResult, error) {
	if err := fg.CheckLinkIDs(user, requester); err != nil {
		return fg.FollowResult{}, err
	}
	r, err := g.live(ctx, layout.OpApprove, user, requester, rate, scripts.EdgeArgs{})
	if err != nil {
		return fg.FollowResult{}, err
	}
	return fg.FollowResult{Created: r.changed && r.op == fg.OpFollow, Since: r.since}, nil
}

// RemoveFollower ends follower's follow of user, or rejects its request;
// see followgraph.Graph and Approve.
func (g *Graph) RemoveFollower(ctx context.Context, user, follower fg.UserID) (bool, error) {
	return g.unlink(ctx, "remove", user, follower)
}

// Settings returns user's settings, read through the client-side cache as
// counts are.
func (g *Graph) Settings(ctx context.Context, user fg.UserID) (fg.Settings, error) {
	if err := fg.CheckIDs(user); err != nil {
		return fg.Settings{}, err
	}
	cs, err := g.readCounters(ctx, []fg.UserID{user})
	if err != nil {
		return fg.Settings{}, errs.Wrap("settings", err)
	}
	return fg.Settings{ID: user, Private: cs[0].private}, nil
}

// SetPrivate sets whether user's account is private; see
// followgraph.Graph. Turning it off approves the pending requests before
// it returns, approveChunk at a time, each as Approve does but not charged
// to user's write rate; when it fails part-way the account is public and
// the rest pending, and calling it again goes on with them. It stops when
// the account is made private again meanwhile. On a Cluster a
// request made while the account turned public may still arrive after;
// it stays pending until the requester follows again or SetPrivate(false)
// is repeated.
func (g *Graph) SetPrivate(ctx context.Context, user fg.UserID, private bool) (fg.Settings, error) {
	if err := fg.CheckIDs(user); err != nil {
		return fg.Settings{}, err
	}
	op := "public"
	if private {
		op = "private"
	}
	if _, err := g.live(ctx, op, user, 0, g.writeRate, scripts.EdgeArgs{}); err != nil {
		return fg.Settings{}, err
	}
	for !private {
		p, err := g.guard.ReadOne(ctx, func() rueidis.Completed {
			return g.c.B().Hget().Key(g.ks.User(user, layout.Counters)).Field("p").Build()
		})
		if err != nil {
			return fg.Settings{}, errs.Wrap("set-private", err)
		}
		if p, _ := p.ToString(); p == "1" {
			break // made private again meanwhile: what is pending stays so
		}
		es, err := g.lists.Range(ctx, user, layout.ReqIn, nil, approveChunk)
		if err != nil {
			return fg.Settings{}, errs.Wrap("set-private", err)
		}
		if len(es) == 0 {
			break
		}
		for _, e := range es {
			id := e.ID
			if _, err := g.approve(ctx, user, id, "0"); err != nil && fg.ErrorCode(err) != fg.ENoRequest {
				return fg.Settings{}, err
			}
		}
	}
	return fg.Settings{ID: user, Private: private}, nil
}

// Link reports user's edge of kind to target; see followgraph.Graph. An
// expired mute is not on.
func (g *Graph) Link(ctx context.Context, kind fg.Kind, user, target fg.UserID) (fg.Link, error) {
	side, ok := layout.SideOfKind(kind, false)
	k := side.Set
	if !ok || !kind.Info().Link { // follows are IsFollowing's
		return fg.Link{}, fg.Errorf(fg.EInvalidArgument, "link: kind %s is not block, mute or request", kind)
	}
	if err := fg.CheckIDs(user, target); err != nil {
		return fg.Link{}, err
	}
	if stop, err := g.inactive(ctx, "link", user); stop {
		return fg.Link{}, err // nil: as for a user with no edges
	}
	m := wire.Member(target)
	res, _, err := g.lists.ReadChunked(ctx, []fg.UserID{user}, func(vs []lists.View) rueidis.Commands {
		return rueidis.Commands{g.c.B().Zscore().Key(g.lists.ChunkKey(user, vs[0], k, m)).Member(m).Build(),
			g.c.B().Hget().Key(g.lists.ChunkKey(user, vs[0], layout.MuteExpiry, m)).Field(m).Build()}
	})
	if err != nil {
		return fg.Link{}, errs.Wrap("link", err)
	}
	ms, err := res[0].AsFloat64()
	switch {
	case rueidis.IsRedisNil(err):
		return fg.Link{}, nil
	case err != nil:
		return fg.Link{}, errs.Wrap("link", err)
	}
	l := fg.Link{On: true, Since: fg.Millis(int64(ms))}
	if kind == fg.KindMute {
		if x, err := res[1].AsInt64(); err == nil {
			if x <= g.now().UnixMilli() {
				return fg.Link{}, nil
			}
			l.Expires = fg.Millis(x)
		}
		// A mute of a user who is not active is not shown (Relations'
		// unexpired).
		if stop, err := g.inactive(ctx, "link", target); stop {
			return fg.Link{}, err
		}
	}
	return l, nil
}

// linkLists are the sides of the lists Links pages.
var linkLists = map[string]struct {
	kind fg.Kind
	in   bool
}{fg.ListBlocks: {fg.KindBlock, false}, fg.ListMutes: {fg.KindMute, false}, fg.ListFollowRequests: {fg.KindRequest, true}}

// Links returns a page of user's list; see followgraph.Graph. The mutes
// are read past the expired ones, which are not listed.
func (g *Graph) Links(ctx context.Context, list string, user fg.UserID, req fg.PageRequest) (fg.Page, error) {
	l, ok := linkLists[list]
	if !ok {
		return fg.Page{}, fg.Errorf(fg.EInvalidArgument, "links: no list %q", list)
	}
	side, _ := layout.SideOfKind(l.kind, l.in)
	k := side.Set
	q, err := req.Query(list, user)
	if err != nil {
		return fg.Page{}, err
	}
	if stop, err := g.inactive(ctx, list, user); stop {
		return fg.Page{}, err // nil: as for a user with no edges
	}
	if k != layout.MuteOut {
		es, err := g.lists.Range(ctx, user, k, q.After, q.Size+1)
		if err != nil {
			return fg.Page{}, errs.Wrap(list, err)
		}
		return q.Page(es), nil
	}
	var es []fg.Entry
	for after := q.After; len(es) < q.Size+1; {
		got, err := g.lists.Range(ctx, user, k, after, q.Size+1)
		if err != nil {
			return fg.Page{}, errs.Wrap(list, err)
		}
		ms, scores := make([]string, len(got)), make([]int64, len(got))
		for i, e := range got {
			ms[i] = wire.Member(e.ID)
		}
		if scores, err = g.unexpired(ctx, user, ms, scores); err != nil {
			return fg.Page{}, errs.Wrap(list, err)
		}
		for i, e := range got {
			if scores[i] >= 0 {
				es = append(es, e)
			}
		}
		if len(got) < q.Size+1 {
			break
		}
		k := got[len(got)-1].Key()
		after = &k
	}
	return q.Page(es[:min(len(es), q.Size+1)]), nil
}
