// Package heal vouches for the Redis servers that hold the graph, and
// keeps what vouching rests on: the outbox streams and graph markers of a
// deployment (InitOutbox, MarkIntact), the layout record, the checkpoints
// (Checkpoint) and the heal leases.
//
// A Redis server may come to hold less than was acknowledged without
// losing everything: a replica promoted after its master died may lack
// the master's last writes, and a server restarted from an append-only
// file written once a second lacks its last second. Its graph markers
// and outbox streams are still there (packages guard and outbox), so nothing
// else tells. What does tell is the script cache: SCRIPT LOAD is neither
// replicated, nor written to the append-only file or a snapshot, so a
// server that is not the process the scripts were loaded into (restarted,
// or a replica promoted) does not have them.
//
// So the scripts that decide on what a server holds, and the guard that
// every read runs with its commands, are vouched scripts: they are never
// loaded by running them (no EVAL after NOSCRIPT), only by Vouch, once
// the deployment has checked that the server holds every acknowledged
// change (recovery.Redis replays what it may lack first). Until then
// every read and live write on it answers errs.Unvouched (503), and the
// WithOnUnvouched function is told, so that a node heals it.
//
// What a server may lack is bounded by its checkpoint: the key
// <prefix>:ckpt (on a Cluster, <prefix>:ckpt:{tag} in the server's
// lowest slot), which Checkpoint raises to the event log's last sequence
// it read before the write. Every change is made in Redis before its
// event is given a sequence (the hook publishes after the script; the
// relay settles before it publishes), and a server's replicas and
// append-only file take its commands in order, so a server holding
// checkpoint L holds every change whose event has a sequence up to L.
// What it may lack are the events after L, which the log and its window
// of applied events still hold.
//
// The vouched scripts carry the deployment's prefix in their source, so
// their digests are the deployment's own: deployments sharing a Redis
// vouch for their own data only.
package heal

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/redisgraph/internal/effects"
	"github.com/followgraph/followgraph/redisgraph/internal/errs"
	"github.com/followgraph/followgraph/redisgraph/internal/guard"
	"github.com/followgraph/followgraph/redisgraph/internal/keyspace"
	"github.com/followgraph/followgraph/redisgraph/internal/lease"
	"github.com/followgraph/followgraph/redisgraph/internal/scripts"
	"github.com/followgraph/followgraph/redisgraph/internal/topology"
)

// Vouched reports whether s is vouched for: it has the guard script.
func (h *Healer) Vouched(ctx context.Context, s topology.Server) (bool, error) {
	n, err := topology.Node(h.c, s)
	if err != nil {
		return false, err
	}
	ok, err := n.Do(ctx, n.B().ScriptExists().Sha1(h.lua.SHA(scripts.Guard.Script)).Build()).AsIntSlice()
	if err != nil || len(ok) != 1 {
		return false, errs.Wrap("vouched", err)
	}
	return ok[0] == 1, nil
}

// Checkpoint raises the checkpoint of every vouched server to seq, the
// event log's last sequence read before the call (see the comment at the
// top). A server that is not vouched for is skipped: its checkpoint
// moves only once it is healed. It returns the first error of a server
// that could not be reached.
func (h *Healer) Checkpoint(ctx context.Context, seq uint64) error {
	srvs, err := topology.Servers(ctx, h.c, h.ks.Cluster())
	if err != nil {
		return err
	}
	calls := make([]scripts.Call, len(srvs))
	for i, s := range srvs {
		calls[i] = scripts.Checkpoint.Call(scripts.CheckpointKeys{Checkpoint: h.ks.Checkpoint(int(s.First()))},
			scripts.CheckpointArgs{Seq: strconv.FormatUint(seq, 10)})
	}
	var fails []error
	for i, r := range h.lua.ExecMulti(ctx, calls) {
		if err := r.Error(); err != nil && !errs.IsNoScript(err) {
			fails = append(fails, fmt.Errorf("%s: %w", srvs[i], err))
		}
	}
	if err := errors.Join(fails...); err != nil {
		return errs.Wrap("checkpoint", err)
	}
	return nil
}

// CheckpointOf returns the checkpoint s holds: the lowest of those kept
// in its slots (a slot moved from another server brings that server's),
// and whether it holds any.
func (h *Healer) CheckpointOf(ctx context.Context, s topology.Server) (uint64, bool, error) {
	n, err := topology.Node(h.c, s)
	if err != nil {
		return 0, false, err
	}
	groups := s.Groups(h.ks)
	keys := make([]string, len(groups))
	for i, grp := range groups {
		keys[i] = h.ks.Checkpoint(grp)
	}
	var low uint64
	found := false
	err = topology.Each(ctx, n, keys, func(key string) rueidis.Completed { return n.B().Get().Key(key).Build() },
		func(_ int, r rueidis.RedisResult) error {
			v, err := r.ToString()
			switch {
			case rueidis.IsRedisNil(err):
				return nil
			case err != nil:
				return errs.Wrap("checkpoint", err)
			}
			seq, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return errs.Wrap("checkpoint", fmt.Errorf("checkpoint %q: %w", v, err))
			}
			if !found || seq < low {
				low = seq
			}
			found = true
			return nil
		})
	if err != nil {
		return 0, false, err
	}
	return low, found, nil
}

// StreamsMissing reports how many of the outbox streams of s's slots are
// missing, of how many: all of them when s holds nothing of the graph
// (Redis lost it: see InitOutbox).
func (h *Healer) StreamsMissing(ctx context.Context, s topology.Server) (missing, total int, err error) {
	n, err := topology.Node(h.c, s)
	if err != nil {
		return 0, 0, err
	}
	groups := s.Groups(h.ks)
	keys := make([]string, len(groups))
	for i, grp := range groups {
		keys[i] = h.ks.OutboxOf(grp)
	}
	err = topology.Each(ctx, n, keys, func(key string) rueidis.Completed { return n.B().Exists().Key(key).Build() },
		func(_ int, r rueidis.RedisResult) error {
			e, err := r.AsInt64()
			if err != nil {
				return errs.Wrap("checking the outbox", err)
			}
			total++
			if e == 0 {
				missing++
			}
			return nil
		})
	if err != nil {
		return 0, 0, err
	}
	return missing, total, nil
}

// Vouch vouches for s, which holds every change whose event has a
// sequence up to seq: it gives the markers of s's slots a new epoch (so
// that no entry the client-side cache filled from s before is trusted),
// sets s's checkpoint to seq, and loads the scripts into s, the vouched
// ones last, after which reads and writes on it are served again.
func (h *Healer) Vouch(ctx context.Context, s topology.Server, seq uint64) error {
	n, err := topology.Node(h.c, s)
	if err != nil {
		return err
	}
	epoch := guard.NewEpoch()
	groups := s.Groups(h.ks)
	err = topology.EachCall(ctx, h.lua.On(n), len(groups), func(i int) scripts.Call {
		return scripts.Remark.Call(scripts.MarkerKeys{Stream: h.ks.OutboxOf(groups[i]), Marker: h.ks.Marker(groups[i])},
			scripts.MarkerArgs{Epoch: epoch})
	}, func(_ int, r rueidis.RedisResult) error { return r.Error() })
	if err != nil {
		return errs.Wrap("vouching for "+s.Addr, err)
	}
	if err := n.Do(ctx, n.B().Set().Key(h.ks.Checkpoint(int(s.First()))).Value(strconv.FormatUint(seq, 10)).Build()).Error(); err != nil {
		return errs.Wrap("vouching for "+s.Addr, err)
	}
	// The others too, so that the first calls do not each load them.
	if err := h.lua.LoadAll(ctx, n); err != nil {
		return errs.Wrap("vouching for "+s.Addr, err)
	}
	for _, grp := range groups {
		h.guard.Store(grp, epoch)
	}
	h.vouched()
	return nil
}

// VouchAll vouches for every server (Vouch), as after a rebuild from a
// source that holds every change whose event has a sequence up to seq.
func (h *Healer) VouchAll(ctx context.Context, seq uint64) error {
	srvs, err := topology.Servers(ctx, h.c, h.ks.Cluster())
	if err != nil {
		return err
	}
	for _, s := range srvs {
		if err := h.Vouch(ctx, s, seq); err != nil {
			return err
		}
	}
	return nil
}

// ClaimHeal takes or renews, for owner and for ttl, the lease of healing
// s, so that of the nodes that find s not vouched for one heals it, and
// reports whether owner holds it.
func (h *Healer) ClaimHeal(ctx context.Context, s topology.Server, owner string, ttl time.Duration) (bool, error) {
	n, err := topology.Node(h.c, s)
	if err != nil {
		return false, err
	}
	return lease.Claim(ctx, h.lua.On(n), "heal lease", h.ks.HealLease(int(s.First())), owner, ttl)
}

// ReleaseHeal gives up owner's lease of healing s, if it holds it.
func (h *Healer) ReleaseHeal(ctx context.Context, s topology.Server, owner string) error {
	n, err := topology.Node(h.c, s)
	if err != nil {
		return err
	}
	return lease.Release(ctx, h.lua.On(n), "heal lease", h.ks.HealLease(int(s.First())), owner)
}

// Touches reports whether e changes a side kept on s.
func (h *Healer) Touches(s topology.Server, e fg.Event) bool {
	if !h.ks.Cluster() {
		return true
	}
	for _, u := range effects.Users(e) {
		if s.Has(keyspace.SlotOf(u)) {
			return true
		}
	}
	return false
}

// Healer vouches for the servers of the graph of ks.
type Healer struct {
	c       rueidis.Client
	ks      keyspace.Space
	lua     *scripts.Runner
	guard   *guard.Guard
	vouched func() // called once a server is vouched for with a new epoch: what was counted before is stale
}

// New returns the healer of the graph of ks, whose markers g knows.
// vouched is called after each Vouch.
func New(c rueidis.Client, ks keyspace.Space, lua *scripts.Runner, g *guard.Guard, vouched func()) *Healer {
	return &Healer{c: c, ks: ks, lua: lua, guard: g, vouched: vouched}
}
