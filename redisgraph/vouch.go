package redisgraph

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	fg "github.com/followgraph/followgraph"
)

// A Redis server may come to hold less than was acknowledged without
// losing everything: a replica promoted after its master died may lack
// the master's last writes, and a server restarted from an append-only
// file written once a second lacks its last second. Its graph markers
// and outbox streams are still there (guard.go, init.go), so nothing
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
// every read and live write on it answers errUnvouched (503), and the
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

// errUnvouched is the error of a read or write on a server that is not
// vouched for (not yet healed after a failover or a restart).
var errUnvouched = &fg.Error{Code: fg.EUnavailable,
	Message: "a Redis server is being checked after a failover or a restart: retry shortly"}

// WithOnUnvouched sets a function called with the slot of each read or
// write that met a server not vouched for: the node that sees it heals
// the server. It is called from the goroutine that met it and must return
// at once.
func WithOnUnvouched(f func(slot uint16)) Option { return func(g *Graph) { g.onUnvouched = f } }

func (g *Graph) unvouched(slot uint16) {
	if g.onUnvouched != nil {
		g.onUnvouched(slot)
	}
}

// scriptGuard is every read's check of a slot's marker (guard.go): the
// marker's value.
var scriptGuard = newVouchedScript(`#!lua flags=no-writes
return redis.call('GET', KEYS[1])`, true)

// scriptCheckpoint raises the checkpoint KEYS[1] to ARGV[1] (a log
// sequence, decimal) and returns what it holds.
var scriptCheckpoint = newVouchedScript(`
local cur = tonumber(redis.call('GET', KEYS[1]) or '0')
local seq = tonumber(ARGV[1])
if seq > cur then
  redis.call('SET', KEYS[1], ARGV[1])
  return seq
end
return cur`, false)

// scriptRemark gives the marker KEYS[2] the epoch ARGV[1] where the
// outbox stream KEYS[1] exists, and returns 1 then.
var scriptRemark = newScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('SET', KEYS[2], ARGV[1])
return 1`, false)

// Server is a Redis server holding part of the graph: a standalone Redis,
// or a master of a Cluster with the slots it serves.
type Server struct {
	Addr     string
	Slots    [][2]uint16 // ranges of slots, first to last; nil on a standalone Redis
	Replicas []string    // its replicas' addresses, as the Cluster lists them
}

// Has reports whether s serves slot.
func (s Server) Has(slot uint16) bool {
	if s.Slots == nil {
		return true
	}
	for _, r := range s.Slots {
		if slot >= r[0] && slot <= r[1] {
			return true
		}
	}
	return false
}

// first returns s's lowest slot.
func (s Server) first() uint16 {
	if len(s.Slots) == 0 {
		return 0
	}
	low := s.Slots[0][0]
	for _, r := range s.Slots {
		low = min(low, r[0])
	}
	return low
}

func (s Server) String() string { return s.Addr }

// Servers returns the servers that hold the graph: the standalone Redis,
// or the masters of the Cluster as CLUSTER SLOTS lists them.
func (g *Graph) Servers(ctx context.Context) ([]Server, error) {
	if !g.cluster {
		for addr := range g.c.Nodes() {
			return []Server{{Addr: addr}}, nil
		}
		return nil, unavailable("servers", errors.New("no Redis node"))
	}
	// Any node that answers: a dead master is still listed a while.
	var res []rueidis.RedisMessage
	err := errors.New("no Redis node")
	for _, n := range g.c.Nodes() {
		if res, err = n.Do(ctx, n.B().ClusterSlots().Build()).ToArray(); err == nil {
			break
		}
	}
	if err != nil {
		return nil, unavailable("servers", err)
	}
	byAddr := map[string]*Server{}
	var order []string
	for _, r := range res {
		f, err := r.ToArray()
		if err != nil || len(f) < 3 {
			return nil, unavailable("servers", fmt.Errorf("CLUSTER SLOTS entry %v", r))
		}
		lo, err1 := f[0].AsInt64()
		hi, err2 := f[1].AsInt64()
		addr, err3 := nodeAddr(f[2])
		if err := errors.Join(err1, err2, err3); err != nil {
			return nil, unavailable("servers", err)
		}
		s := byAddr[addr]
		if s == nil {
			s = &Server{Addr: addr}
			byAddr[addr] = s
			order = append(order, addr)
		}
		s.Slots = append(s.Slots, [2]uint16{uint16(lo), uint16(hi)})
		for _, rep := range f[3:] {
			if a, err := nodeAddr(rep); err == nil && !slices.Contains(s.Replicas, a) {
				s.Replicas = append(s.Replicas, a)
			}
		}
	}
	out := make([]Server, 0, len(order))
	for _, a := range order {
		out = append(out, *byAddr[a])
	}
	return out, nil
}

// nodeAddr reads the [ip, port, ...] of a node in a CLUSTER SLOTS reply.
func nodeAddr(m rueidis.RedisMessage) (string, error) {
	f, err := m.ToArray()
	if err != nil || len(f) < 2 {
		return "", fmt.Errorf("CLUSTER SLOTS node %v", m)
	}
	host, err1 := f[0].ToString()
	port, err2 := f[1].AsInt64()
	if err := errors.Join(err1, err2); err != nil {
		return "", err
	}
	return host + ":" + strconv.FormatInt(port, 10), nil
}

// ServerOf returns the server of slot.
func (g *Graph) ServerOf(ctx context.Context, slot uint16) (Server, error) {
	srvs, err := g.Servers(ctx)
	if err != nil {
		return Server{}, err
	}
	for _, s := range srvs {
		if s.Has(slot) {
			return s, nil
		}
	}
	return Server{}, unavailable("servers", fmt.Errorf("no master serves slot %d", slot))
}

// node returns the client of s alone, or an error when the client does
// not know it (yet: a Cluster's new master is learnt by a refresh).
func (g *Graph) node(s Server) (rueidis.Client, error) {
	n, ok := g.c.Nodes()[s.Addr]
	if !ok {
		return nil, unavailable("server "+s.Addr, errors.New("not connected to it yet"))
	}
	return n, nil
}

// Vouched reports whether s is vouched for: it has the guard script.
func (g *Graph) Vouched(ctx context.Context, s Server) (bool, error) {
	n, err := g.node(s)
	if err != nil {
		return false, err
	}
	ok, err := n.Do(ctx, n.B().ScriptExists().Sha1(g.run(scriptGuard).sha).Build()).AsIntSlice()
	if err != nil || len(ok) != 1 {
		return false, unavailable("vouched", err)
	}
	return ok[0] == 1, nil
}

// checkpointKey returns the key of the checkpoint kept in slot.
func (g *Graph) checkpointKey(slot uint16) string {
	if !g.cluster {
		return g.prefix + ":ckpt"
	}
	return g.prefix + ":ckpt:{" + g.outboxTags[slot] + "}"
}

// Checkpoint raises the checkpoint of every vouched server to seq, the
// event log's last sequence read before the call (see the comment at the
// top). A server that is not vouched for is skipped: its checkpoint
// moves only once it is healed. It returns the first error of a server
// that could not be reached.
func (g *Graph) Checkpoint(ctx context.Context, seq uint64) error {
	srvs, err := g.Servers(ctx)
	if err != nil {
		return err
	}
	calls := make([]rueidis.LuaExec, len(srvs))
	for i, s := range srvs {
		calls[i] = rueidis.LuaExec{Keys: []string{g.checkpointKey(s.first())}, Args: []string{strconv.FormatUint(seq, 10)}}
	}
	var errs []error
	for i, r := range g.execMulti(ctx, scriptCheckpoint, calls) {
		if err := r.Error(); err != nil && !isNoScript(err) {
			errs = append(errs, fmt.Errorf("%s: %w", srvs[i], err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return unavailable("checkpoint", err)
	}
	return nil
}

// CheckpointOf returns the checkpoint s holds: the lowest of those kept
// in its slots (a slot moved from another server brings that server's),
// and whether it holds any.
func (g *Graph) CheckpointOf(ctx context.Context, s Server) (uint64, bool, error) {
	n, err := g.node(s)
	if err != nil {
		return 0, false, err
	}
	var keys []string
	if !g.cluster {
		keys = []string{g.checkpointKey(0)}
	} else {
		for _, r := range s.Slots {
			for slot := int(r[0]); slot <= int(r[1]); slot++ {
				keys = append(keys, g.checkpointKey(uint16(slot)))
			}
		}
	}
	var low uint64
	found := false
	for chunk := range slices.Chunk(keys, 1024) {
		cmds := make(rueidis.Commands, len(chunk))
		for i, k := range chunk {
			cmds[i] = n.B().Get().Key(k).Build()
		}
		for _, r := range n.DoMulti(ctx, cmds...) {
			v, err := r.ToString()
			if rueidis.IsRedisNil(err) {
				continue
			}
			if err != nil {
				return 0, false, unavailable("checkpoint", err)
			}
			seq, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return 0, false, unavailable("checkpoint", fmt.Errorf("checkpoint %q: %w", v, err))
			}
			if !found || seq < low {
				low = seq
			}
			found = true
		}
	}
	return low, found, nil
}

// StreamsMissing reports how many of the outbox streams of s's slots are
// missing, of how many: all of them when s holds nothing of the graph
// (Redis lost it: see init.go).
func (g *Graph) StreamsMissing(ctx context.Context, s Server) (missing, total int, err error) {
	n, err := g.node(s)
	if err != nil {
		return 0, 0, err
	}
	var keys []string
	if !g.cluster {
		keys = []string{g.outbox(0)}
	} else {
		for _, r := range s.Slots {
			for slot := int(r[0]); slot <= int(r[1]); slot++ {
				keys = append(keys, g.outboxOfSlot(uint16(slot)))
			}
		}
	}
	for chunk := range slices.Chunk(keys, 1024) {
		cmds := make(rueidis.Commands, len(chunk))
		for i, k := range chunk {
			cmds[i] = n.B().Exists().Key(k).Build()
		}
		for _, r := range n.DoMulti(ctx, cmds...) {
			e, err := r.AsInt64()
			if err != nil {
				return 0, 0, unavailable("checking the outbox", err)
			}
			total++
			if e == 0 {
				missing++
			}
		}
	}
	return missing, total, nil
}

// Vouch vouches for s, which holds every change whose event has a
// sequence up to seq: it gives the markers of s's slots a new epoch (so
// that no entry the client-side cache filled from s before is trusted),
// sets s's checkpoint to seq, and loads the scripts into s, the vouched
// ones last, after which reads and writes on it are served again.
func (g *Graph) Vouch(ctx context.Context, s Server, seq uint64) error {
	n, err := g.node(s)
	if err != nil {
		return err
	}
	epoch := newEpoch()
	var slotsOf []int
	if !g.cluster {
		slotsOf = []int{0}
	} else {
		for _, r := range s.Slots {
			for slot := int(r[0]); slot <= int(r[1]); slot++ {
				slotsOf = append(slotsOf, slot)
			}
		}
	}
	for chunk := range slices.Chunk(slotsOf, 1024) {
		cmds := make(rueidis.Commands, len(chunk))
		for i, slot := range chunk {
			cmds[i] = scriptRemark.cmd(n, []string{g.outboxOfSlotOrOne(slot), g.markerKey(slot)}, []string{epoch})
		}
		for i, r := range n.DoMulti(ctx, cmds...) {
			r = scriptRemark.fix(ctx, n, r, []string{g.outboxOfSlotOrOne(chunk[i]), g.markerKey(chunk[i])}, []string{epoch})
			if err := r.Error(); err != nil {
				return unavailable("vouching for "+s.Addr, err)
			}
		}
	}
	if err := n.Do(ctx, n.B().Set().Key(g.checkpointKey(s.first())).Value(strconv.FormatUint(seq, 10)).Build()).Error(); err != nil {
		return unavailable("vouching for "+s.Addr, err)
	}
	// The others too, so that the first calls do not each load them.
	for _, vs := range slices.Concat(loadedScripts, vouchedScripts) {
		if err := n.Do(ctx, n.B().ScriptLoad().Script(g.run(vs).src).Build()).Error(); err != nil {
			return unavailable("vouching for "+s.Addr, err)
		}
	}
	for _, slot := range slotsOf {
		g.guard.slots[slot].state.Store(&epochState{epoch: epoch, since: nowMs()})
	}
	g.memo.clear()
	return nil
}

// VouchAll vouches for every server (Vouch), as after a rebuild from a
// source that holds every change whose event has a sequence up to seq.
func (g *Graph) VouchAll(ctx context.Context, seq uint64) error {
	srvs, err := g.Servers(ctx)
	if err != nil {
		return err
	}
	for _, s := range srvs {
		if err := g.Vouch(ctx, s, seq); err != nil {
			return err
		}
	}
	return nil
}

// WithVouchScope names the data the vouched scripts vouch for (default:
// the prefix): the Graphs of one deployment share it, and deployments
// sharing a Redis must not. Graphs on one Redis that share a scope share
// the vouched scripts (some 150 KB of Redis's memory a scope).
func WithVouchScope(name string) Option { return func(g *Graph) { g.scope = name } }

// outboxOfSlotOrOne is the outbox stream of slot group i.
func (g *Graph) outboxOfSlotOrOne(i int) string {
	if !g.cluster {
		return g.outbox(0)
	}
	return g.outboxOfSlot(uint16(i))
}

// healLeaseKey returns the key of the lease of healing s, in its lowest
// slot.
func (g *Graph) healLeaseKey(s Server) string {
	if !g.cluster {
		return g.prefix + ":heal:lease"
	}
	return g.prefix + ":heal:lease:{" + g.outboxTags[s.first()] + "}"
}

// ClaimHeal takes or renews, for owner and for ttl, the lease of healing
// s, so that of the nodes that find s not vouched for one heals it, and
// reports whether owner holds it.
func (g *Graph) ClaimHeal(ctx context.Context, s Server, owner string, ttl time.Duration) (bool, error) {
	n, err := g.node(s)
	if err != nil {
		return false, err
	}
	keys, args := []string{g.healLeaseKey(s)}, []string{owner, strconv.FormatInt(max(ttl.Milliseconds(), 1), 10)}
	v, err := scriptLease.fix(ctx, n, n.Do(ctx, scriptLease.cmd(n, keys, args)), keys, args).AsInt64()
	if err != nil {
		return false, unavailable("heal lease", err)
	}
	return v == 1, nil
}

// ReleaseHeal gives up owner's lease of healing s, if it holds it.
func (g *Graph) ReleaseHeal(ctx context.Context, s Server, owner string) error {
	n, err := g.node(s)
	if err != nil {
		return err
	}
	keys, args := []string{g.healLeaseKey(s)}, []string{owner}
	if err := scriptRelease.fix(ctx, n, n.Do(ctx, scriptRelease.cmd(n, keys, args)), keys, args).Error(); err != nil {
		return unavailable("heal lease", err)
	}
	return nil
}

// keySlot returns the Cluster slot of key, by its hash tag when it has
// one.
func keySlot(key string) uint16 {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	return crc16(key) & (slots - 1)
}

// Touches reports whether e changes a side kept on s.
func (g *Graph) Touches(s Server, e fg.Event) bool {
	if !g.cluster {
		return true
	}
	for _, u := range eventUsers(e) {
		if s.Has(slotOf(u)) {
			return true
		}
	}
	return false
}
