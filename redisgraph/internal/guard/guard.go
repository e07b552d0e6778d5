// Package guard is how redisgraph knows that Redis still holds the graph
// a read answers from, and that a write is made on the servers it was
// sent to.
//
// A read never answers a guess: a Redis that lost its data (restarted
// empty, a master replaced by an empty one) would answer every read with
// nothing, and nothing reads as a user without edges. So each slot's graph
// has a marker (keyspace.Marker: one per slot on a Cluster, in the slot of
// its outbox stream), holding an epoch: a random number drawn when the
// graph is marked as whole (InitOutbox, after a deployment's first start
// or a Rebuild). A loss takes the marker with it, and only a rebuild
// brings a marker back, with a new epoch.
//
// Every read that goes to Redis is pipelined with a check of the marker of
// each slot it reads (the guard script, which a server not vouched for
// lacks: docs/design/recovery.md), after the read's own commands, on the
// same connection: the read is answered only if the marker holds the
// epoch the Guard knew before it sent the read. Then the marker held that
// epoch continuously from before the read until after it (a lost marker
// comes back with another epoch), and so did the graph. A marker that is
// gone answers 503 (errs.GraphLost) and tells the loss function; one with
// another epoch (rebuilt meanwhile by some node) is learnt, and the read
// sent again.
//
// Reads served from the client-side cache go to no Redis at the time; a
// cached entry is trusted if it was filled (as rueidis says: the entry's
// expiry less its time to live) after the epoch was learnt and before a
// check that found it still there was sent. A command runs only on the
// Redis its connection reached, so an entry filled from a Redis that
// lost the graph can never be followed by such a check.
//
// A write is acknowledged only once a check of its servers' markers, sent
// after its event is in the log, finds the epochs the write was sent
// under (Confirm); concurrent writes share those checks.
package guard

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/redisgraph/internal/coalesce"
	"github.com/followgraph/followgraph/redisgraph/internal/errs"
	"github.com/followgraph/followgraph/redisgraph/internal/keyspace"
	"github.com/followgraph/followgraph/redisgraph/internal/scripts"
	"github.com/followgraph/followgraph/redisgraph/internal/topology"
)

// CacheTTL caps how long rueidis keeps a cached entry that no
// invalidation removed; invalidations, not the TTL, keep entries fresh.
// Every cached read is made with it, and Trusted reads when an entry was
// filled from it.
const CacheTTL = time.Minute

// confirmTimeout bounds one check of Confirm; a write stops waiting when
// its own context ends.
const confirmTimeout = 5 * time.Second

// Guard is what a Graph knows of the markers: per slot group (one for a
// standalone Redis), the epoch and when it was learnt, and when the last
// check that found it was sent.
type Guard struct {
	c        rueidis.Client
	ks       keyspace.Space
	lua      *scripts.Runner
	hooks    Hooks
	slots    []slotGuard
	replicas Replicas // nil: every read goes to the masters

	confirms sync.Map // slot group → *coalesce.Calls[[]rueidis.RedisResult]
	checks   atomic.Uint64
}

// Hooks are what a Guard tells its Graph. Each is called from the
// goroutine that met the case and must return at once; nil is none.
type Hooks struct {
	Lost      func()            // a read found a marker gone: Redis lost the graph
	Unvouched func(slot uint16) // a read or write met a server not vouched for
	NewEpoch  func()            // an epoch learnt replaced another: the graph was rebuilt
}

// Replicas serve a read from a replica when they can: the Guard asks them
// first (package replicas).
type Replicas interface {
	// Read returns the results of the commands build makes, read from a
	// replica that has everything the master had when the read began, or
	// false when the read is for the master.
	Read(ctx context.Context, build func() rueidis.Commands) ([]rueidis.RedisResult, bool)
}

type slotGuard struct {
	state atomic.Pointer[Epoch] // nil until learnt
	good  atomic.Int64          // Unix ms at which the last check that found the epoch was sent
}

// Epoch is a slot group's epoch as the Guard knows it.
type Epoch struct {
	Value string
	since int64 // Unix ms once the epoch was known (the reply that taught it)
}

// New returns the guard of the markers of ks's slot groups, read through
// c and lua.
func New(c rueidis.Client, ks keyspace.Space, lua *scripts.Runner, hooks Hooks) *Guard {
	return &Guard{c: c, ks: ks, lua: lua, hooks: hooks, slots: make([]slotGuard, ks.Groups())}
}

// UseReplicas makes reads go to r first.
func (g *Guard) UseReplicas(r Replicas) { g.replicas = r }

// NewEpoch draws a marker's epoch.
func NewEpoch() string {
	var b [8]byte
	rand.Read(b[:])
	return strconv.FormatUint(binary.BigEndian.Uint64(b[:])>>1|1, 10)
}

func nowMs() int64 { return time.Now().UnixMilli() }

// Known returns the epoch of slot group i as the Guard knows it, or nil.
func (g *Guard) Known(i int) *Epoch { return g.slots[i].state.Load() }

// AnyKnown reports whether the Guard knows the epoch of any slot group:
// whether Redis holds a graph under the prefix, as far as Learn saw.
func (g *Guard) AnyKnown() bool {
	for i := range g.slots {
		if g.slots[i].state.Load() != nil {
			return true
		}
	}
	return false
}

// Store makes epoch the known one of slot group i (a server vouched for
// with a new epoch).
func (g *Guard) Store(i int, epoch string) {
	g.slots[i].state.Store(&Epoch{Value: epoch, since: nowMs()})
}

// Ticket is a call's set of slot groups, with the epoch each had before
// the call was sent: begun before a read or a write is sent, it checks
// (Settle, Confirm) that the markers held those epochs until after it.
type Ticket struct {
	groups []int
	snaps  []*Epoch
	sent   int64
	index  map[int]int // group → its place, once there are many
}

// Begin returns the ticket of the groups of cmds, as the read is sent.
func (g *Guard) Begin(cmds rueidis.Commands) Ticket {
	var t Ticket
	for _, c := range cmds {
		t.add(g, g.ks.Group(c.Slot()))
	}
	t.sent = nowMs()
	return t
}

// For returns the ticket of the slot groups of users, as a write to their
// keys is sent.
func (g *Guard) For(users ...fg.UserID) Ticket {
	var t Ticket
	for _, u := range users {
		t.add(g, g.ks.GroupOf(u))
	}
	t.sent = nowMs()
	return t
}

// Groups returns the ticket's slot groups.
func (t Ticket) Groups() []int { return t.groups }

// Epoch returns the epoch the ticket's i-th group had when it began (nil:
// not known).
func (t Ticket) Epoch(i int) *Epoch { return t.snaps[i] }

func (t *Ticket) add(g *Guard, group int) {
	if t.find(group) < 0 {
		t.put(group, g.slots[group].state.Load())
	}
}

// put adds group, with the epoch it had, to t, which lacks it.
func (t *Ticket) put(group int, snap *Epoch) {
	if t.index == nil && len(t.groups) == 16 {
		t.index = make(map[int]int)
		for i, x := range t.groups {
			t.index[x] = i
		}
	}
	if t.index != nil {
		t.index[group] = len(t.groups)
	}
	t.groups = append(t.groups, group)
	t.snaps = append(t.snaps, snap)
}

// find returns the place of group in t, or -1.
func (t *Ticket) find(group int) int {
	if t.index != nil {
		if i, ok := t.index[group]; ok {
			return i
		}
		return -1
	}
	for i, x := range t.groups {
		if x == group {
			return i
		}
	}
	return -1
}

// Of returns the part of t of the slot groups of users (each of which t
// has).
func (g *Guard) Of(t Ticket, users ...fg.UserID) Ticket {
	out := Ticket{sent: t.sent}
	for _, u := range users {
		grp := g.ks.GroupOf(u)
		if i := t.find(grp); i >= 0 && out.find(grp) < 0 {
			out.put(grp, t.snaps[i])
		}
	}
	return out
}

// markers returns the checks of t's markers, to send after its commands.
// On a Cluster, each is the guard script, which reads a marker on a
// server vouched for only: a command with a key follows its slot when the
// slot has moved, so the check is redirected with the read. A standalone
// Redis redirects nothing and the commands of one pipeline all run on the
// server its connection reached (rueidis sends a pipeline again whole, on
// one connection), so there the check is two plain commands, a fifth of
// the script's cost in Redis: SCRIPT EXISTS of the guard (the server is
// vouched for), then GET of the marker.
func (g *Guard) markers(t Ticket) rueidis.Commands {
	if !g.ks.Cluster() && len(t.groups) > 0 {
		return rueidis.Commands{
			g.c.B().ScriptExists().Sha1(g.lua.SHA(scripts.Guard.Script)).Build(),
			g.c.B().Get().Key(g.ks.Marker(0)).Build(),
		}
	}
	cmds := make(rueidis.Commands, len(t.groups))
	for i, grp := range t.groups {
		cmds[i] = g.lua.Cmd(g.check(grp))
	}
	return cmds
}

// check returns the guard script's check of slot group i's marker.
func (g *Guard) check(i int) scripts.Call {
	return scripts.Guard.Call(scripts.GuardKeys{Marker: g.ks.Marker(i)}, scripts.NoArgs{})
}

// CheckOn returns the command of the guard script's check of slot group
// i's marker on n, one node of the client.
func (g *Guard) CheckOn(n rueidis.Client, i int) rueidis.Completed {
	return g.lua.On(n).Cmd(g.check(i))
}

// marker returns what the checks markers made say of the ticket's i-th
// group: its marker's epoch, or the guard's error (NOSCRIPT on a server
// not vouched for).
func (g *Guard) marker(replies []rueidis.RedisResult, i int) (string, error) {
	if g.ks.Cluster() {
		return replies[i].ToString()
	}
	vouched, err := replies[0].AsIntSlice()
	switch {
	case err != nil:
		return "", err
	case len(vouched) != 1:
		return "", fmt.Errorf("SCRIPT EXISTS answered %d values", len(vouched))
	case vouched[0] != 1:
		return "", errNoGuard
	}
	return replies[1].ToString()
}

// errNoGuard stands for SCRIPT EXISTS's answer that the guard is not
// loaded: the guard's NOSCRIPT.
var errNoGuard = errors.New("the guard script is not loaded")

// settle looks at the replies of t's markers: errs.GraphLost when one is
// gone, errs.Unvouched when a server is not vouched for; again true when
// one holds an epoch t did not know (learnt now: the read must be sent
// again); otherwise each group's last check is moved to t's sending.
func (g *Guard) settle(t Ticket, replies []rueidis.RedisResult) (again bool, err error) {
	for i := range t.groups {
		epoch, err := g.marker(replies, i)
		switch {
		case rueidis.IsRedisNil(err):
			if g.hooks.Lost != nil {
				g.hooks.Lost()
			}
			return false, fmt.Errorf("redisgraph: read: %w", errs.GraphLost)
		case errs.IsNoScript(err) || errors.Is(err, errNoGuard):
			if g.hooks.Unvouched != nil {
				g.hooks.Unvouched(uint16(t.groups[i]))
			}
			return false, fmt.Errorf("redisgraph: read: %w", errs.Unvouched)
		case err != nil:
			return false, errs.Wrap("read", err)
		}
		sg := &g.slots[t.groups[i]]
		if snap := t.snaps[i]; snap != nil && snap.Value == epoch {
			for {
				if good := sg.good.Load(); good >= t.sent || sg.good.CompareAndSwap(good, t.sent) {
					break
				}
			}
			continue
		}
		again = true
		if cur := sg.state.Load(); cur == nil || cur.Value != epoch {
			if sg.state.CompareAndSwap(cur, &Epoch{Value: epoch, since: nowMs()}) && cur != nil && g.hooks.NewEpoch != nil {
				g.hooks.NewEpoch() // what was counted on the graph before the rebuild is gone
			}
		}
	}
	return again, nil
}

// Read sends the commands build makes, followed by the checks of their
// markers, in one pipeline, and returns their results once the checks
// show the graph whole from before to after them (see the package's
// comment). build may be called again (commands are not reused: rueidis
// recycles them once sent).
func (g *Guard) Read(ctx context.Context, build func() rueidis.Commands) ([]rueidis.RedisResult, error) {
	if g.replicas != nil {
		if res, ok := g.replicas.Read(ctx, build); ok {
			return res, nil
		}
	}
	for range 3 {
		cmds := build()
		n := len(cmds)
		t := g.Begin(cmds)
		res := g.c.DoMulti(ctx, append(cmds, g.markers(t)...)...)
		again, err := g.settle(t, res[n:])
		if err != nil {
			return nil, err
		}
		if !again {
			return res[:n], nil
		}
	}
	return nil, fmt.Errorf("redisgraph: read: %w", errs.GraphChanging)
}

// ReadOne is Read of one command.
func (g *Guard) ReadOne(ctx context.Context, build func() rueidis.Completed) (rueidis.RedisResult, error) {
	res, err := g.Read(ctx, func() rueidis.Commands { return rueidis.Commands{build()} })
	if err != nil {
		return rueidis.RedisResult{}, err
	}
	return res[0], nil
}

// Verify sends the checks of t's markers after its read has been
// answered (a read of the client-side cache that went to Redis), with the
// same meaning as Read's: again true when an epoch was learnt.
func (g *Guard) Verify(ctx context.Context, t Ticket) (again bool, err error) {
	t.sent = nowMs() // the checks' own sending, after the read's: they vouch for what it filled
	return g.settle(t, g.c.DoMulti(ctx, g.markers(t)...))
}

// Trusted reports whether r, a hit of the client-side cache of a key of
// slot group grp, may be served (see the package's comment).
func (g *Guard) Trusted(grp int, r rueidis.RedisResult) bool {
	sg := &g.slots[grp]
	st := sg.state.Load()
	if st == nil {
		return false
	}
	filled := r.CachePXAT() - CacheTTL.Milliseconds()
	return filled >= st.since && filled < sg.good.Load()
}

// Learn reads every marker, so that the first reads do not each learn
// theirs; a missing one is left unknown.
func (g *Guard) Learn(ctx context.Context) error {
	keys := make([]string, len(g.slots))
	for i := range keys {
		keys[i] = g.ks.Marker(i)
	}
	return topology.Each(ctx, g.c, keys, func(key string) rueidis.Completed { return g.c.B().Get().Key(key).Build() },
		func(i int, r rueidis.RedisResult) error {
			epoch, err := r.ToString()
			switch {
			case rueidis.IsRedisNil(err):
			case err != nil:
				return errs.Wrap("reading the graph's markers", err)
			default:
				g.Store(i, epoch)
			}
			return nil
		})
}

// Confirm checks, once a change's event is in the log, that each server
// the change was made on is still vouched for and its marker still holds
// the epoch t held before the change was sent. Otherwise the server may
// have been replaced (a failover) or healed since, and the heal may have
// read the log before this event was in it: the change may then be
// missing from Redis, so it is not acknowledged (errs.Replaced). Any check
// of a group's marker sent after that point serves, so concurrent writes
// share checks (package coalesce).
func (g *Guard) Confirm(ctx context.Context, t Ticket) error {
	answers := make([]*coalesce.Answer[[]rueidis.RedisResult], len(t.groups))
	for i, grp := range t.groups {
		v, _ := g.confirms.LoadOrStore(grp, &coalesce.Calls[[]rueidis.RedisResult]{})
		answers[i] = v.(*coalesce.Calls[[]rueidis.RedisResult]).Join(func() []rueidis.RedisResult {
			g.checks.Add(1)
			ctx, cancel := context.WithTimeout(context.Background(), confirmTimeout)
			defer cancel()
			return g.c.DoMulti(ctx, g.markers(Ticket{groups: []int{grp}})...)
		})
	}
	for i, a := range answers {
		replies, err := a.Wait(ctx)
		if err != nil {
			return fmt.Errorf("%w (%w)", errs.Replaced, err)
		}
		one := Ticket{groups: t.groups[i : i+1], snaps: t.snaps[i : i+1], sent: t.sent}
		again, err := g.settle(one, replies)
		switch {
		case err != nil:
			return fmt.Errorf("%w (%w)", errs.Replaced, err)
		case again: // an epoch learnt now: the next change is checked against it
			return errs.Replaced
		}
	}
	return nil
}

// Checks returns how many checks Confirm sent.
func (g *Guard) Checks() uint64 { return g.checks.Load() }
