package redisgraph

import (
	"context"
	"errors"
	"strconv"
	"sync"

	"github.com/redis/rueidis"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/redisgraph/internal/errs"
	"github.com/followgraph/followgraph/redisgraph/internal/keyspace"
	"github.com/followgraph/followgraph/redisgraph/internal/layout"
	"github.com/followgraph/followgraph/redisgraph/internal/scripts"
	"github.com/followgraph/followgraph/redisgraph/internal/topology"
	"github.com/followgraph/followgraph/redisgraph/internal/wire"
)

// Tombstones (docs/design/horizon.md). A tombstone is an entry of a
// versions hash whose edge is not in the side's sorted set
// (docs/design/redis-layout.md#versions-in-the-keys). The deployment's
// tombstone horizon is one key (keyspace.Horizon); each user's, in its
// counters hash (layout.FieldHorizon), is raised to a pass's bound by the
// script that removes the user's first tombstone of the pass, before it
// removes it (lua/purge.lua). lua/effects.lua refuses an edge turned on
// below the higher of the two, on a side that keeps no record of it.

// A step of PurgeTombstones visits purgeUsers users and makes purgeScans
// SCAN calls at most, so that a step over users without tombstones, or
// over a server of other keys, ends too.
const (
	purgeUsers = 256
	purgeScans = 16
)

// purgePass is where a pass of PurgeTombstones over every user is: the
// bound of the pass, the server and SCAN cursor it is at, the users of the
// last SCAN left to visit, and where the first of them stopped.
type purgePass struct {
	mu      sync.Mutex
	below   fg.Version // 0: no pass under way
	servers []topology.Server
	server  int
	cursor  uint64
	users   []fg.UserID
	at      scripts.PurgeArgs // where users[0]'s last step stopped
}

// TombstoneHorizon returns the deployment's tombstone horizon: tombstones
// below it may be gone (0: none ever removed).
func (g *Graph) TombstoneHorizon(ctx context.Context) (fg.Version, error) {
	s, err := g.c.Do(ctx, g.c.B().Get().Key(g.ks.Horizon()).Build()).ToString()
	if rueidis.IsRedisNil(err) {
		return 0, nil
	}
	if err != nil {
		return 0, errs.Wrap("tombstone horizon", err)
	}
	return wire.ParseVersion(s)
}

// RaiseTombstoneHorizon raises the deployment's tombstone horizon to h (a
// lower h leaves it), removing nothing: for a graph rebuilt from a store
// whose horizon is h. Apply refuses from then on an edge turned on below
// it of which a side keeps no record.
func (g *Graph) RaiseTombstoneHorizon(ctx context.Context, h fg.Version) error {
	if err := g.lua.Exec(ctx, scripts.Raise.Call(scripts.RaiseKeys{Horizon: g.ks.Horizon()},
		scripts.RaiseArgs{Version: wire.VersionHex(h)})).Error(); err != nil {
		return errs.Wrap("raising the tombstone horizon", err)
	}
	return nil
}

// PurgeTombstones removes at most limit tombstones below below, in one
// bounded step of a pass over every user (followgraph.TombstonePurger):
// a pass SCANs each server's users and runs lua/purge.lua on each, which
// reads a thousand entries of the user's versions hashes at most a call.
// A step visits purgeUsers users at most, and ends when it has removed
// limit. A new bound starts a new pass, after raising the deployment's
// horizon to it; a bound at or below the horizon removes nothing.
func (g *Graph) PurgeTombstones(ctx context.Context, below fg.Version, limit int) (removed int, more bool, err error) {
	p := &g.purge
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.below != below {
		h, err := g.TombstoneHorizon(ctx)
		if err != nil {
			return 0, false, err
		}
		if below <= h {
			return 0, false, nil
		}
		if err := g.RaiseTombstoneHorizon(ctx, below); err != nil {
			return 0, false, err
		}
		servers, err := topology.Servers(ctx, g.c, g.ks.Cluster())
		if err != nil {
			return 0, false, err
		}
		p.below, p.servers, p.server, p.cursor, p.users, p.at = below, servers, 0, 0, nil, scripts.PurgeArgs{}
	}
	if limit < 1 {
		return 0, true, nil
	}
	for visited, scans := 0, 0; removed < limit; {
		if len(p.users) == 0 {
			if p.server == len(p.servers) {
				p.below = 0 // done: the next call with this bound finds it at the horizon
				return removed, false, nil
			}
			if visited >= purgeUsers || scans == purgeScans {
				return removed, true, nil
			}
			scans++
			if err := g.scanUsers(ctx, p); err != nil {
				return removed, true, err
			}
			continue
		}
		if visited >= purgeUsers {
			return removed, true, nil
		}
		args := p.at
		args.Below, args.Limit = wire.VersionHex(below), strconv.Itoa(limit-removed)
		if args.Side == "" {
			args.Side, args.Chunk, args.Cursor = "1", "0", "0"
		}
		res, err := g.lua.Exec(ctx, scripts.Purge.Call(scripts.PurgeKeys{User: g.ks.UserKeys(p.users[0])}, args)).ToArray()
		if err == nil && len(res) < 4 {
			err = errors.New("a short reply")
		}
		if err != nil {
			return removed, true, errs.Wrap("purging tombstones", err)
		}
		n, _ := res[0].AsInt64()
		removed += int(n)
		side, _ := res[1].AsInt64()
		if side == 0 {
			p.users, p.at = p.users[1:], scripts.PurgeArgs{}
			visited++
			continue
		}
		chunk, _ := res[2].AsInt64()
		cursor, _ := res[3].ToString()
		p.at = scripts.PurgeArgs{Side: strconv.FormatInt(side, 10), Chunk: strconv.FormatInt(chunk, 10), Cursor: cursor}
	}
	return removed, true, nil
}

// scanUsers takes the next users of the pass p: a SCAN step on its
// server for the users' counters hashes, and the next server after the
// last step of one.
func (g *Graph) scanUsers(ctx context.Context, p *purgePass) error {
	node, err := topology.Node(g.c, p.servers[p.server])
	if err != nil {
		return errs.Wrap("purging tombstones", err)
	}
	pattern := keyspace.GlobEscape(g.ks.Prefix()) + ":{*}:" + string(layout.Counters)
	e, err := node.Do(ctx, node.B().Scan().Cursor(p.cursor).Match(pattern).Count(1000).Build()).AsScanEntry()
	if err != nil {
		return errs.Wrap("purging tombstones", err)
	}
	for _, key := range e.Elements {
		if u, ok := g.ks.UserOfKey(key); ok && key == g.ks.User(u, layout.Counters) {
			p.users = append(p.users, u)
		}
	}
	if p.cursor = e.Cursor; p.cursor == 0 {
		p.server++
	}
	return nil
}
