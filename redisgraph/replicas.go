package redisgraph

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/rueidis"
)

// Reads from replicas. With WithReplicaClients (a standalone primary's
// replicas) or WithClusterReplicas (a Cluster's), a read that does not go
// through the client-side cache goes to a replica of the master of its
// slots, and is answered from there only if the replica had, before it
// ran the read, every change the master had when the read began:
//
//  1. After the read began, the master's tick is moved on: the guard
//     of its lowest slot's marker (so the master is one vouched for:
//     vouch.go, and its epoch is the one the Graph knows), then HINCRBY
//     of that epoch's field in the hash <prefix>:tick (on a Cluster, in
//     the master's lowest slot), pipelined. Concurrent reads share one such call per master, at most one
//     every readIndexGap, each sent after every read that takes it
//     arrived.
//  2. The replica reads the tick's field, then runs the read's commands,
//     then the GETs of the read's markers, in one pipeline on one
//     connection. Its answer is used only if the field is at least the
//     count (the replica has applied the tick, and so everything the
//     master did before it) and the markers hold the epochs the read
//     knew (guard.go). A replica of another history (before a failover)
//     has no field of the new epoch that the heal drew.
//
// So a read from a replica sees every change acknowledged before it
// began (its own user's included), as a read from the master does.
// A replica that lags (checked once more a moment later), answers an
// error, or does not answer within replicaTimeout is skipped: the read
// goes to the master, and the replica is left alone for replicaRest after
// an error. The client-side cache is the master's only: the replicas'
// connections cache nothing.

// replicaTimeout bounds a read's wait for a replica; replicaRest is how
// long a replica that failed is skipped.
const (
	replicaTimeout = 100 * time.Millisecond
	replicaRest    = time.Second
)

// WithReplicaClients makes reads go to the replicas of a standalone Redis
// through clients (see replicas.go); the clients must reach replicas of
// the Graph's Redis, and are closed by their caller after the Graph.
func WithReplicaClients(clients ...rueidis.Client) Option {
	return func(g *Graph) {
		rs := &replicaSet{}
		for i, c := range clients {
			rs.fixed = append(rs.fixed, &replica{name: "replica " + strconv.Itoa(i+1), c: c})
		}
		g.replicas = rs
	}
}

// WithClusterReplicas makes reads go to the replicas of the masters of a
// Cluster (see replicas.go), found in CLUSTER SLOTS and reached through
// clients dial makes (a client of the one node at addr, caching nothing).
// Close closes them.
func WithClusterReplicas(dial func(addr string) (rueidis.Client, error)) Option {
	return func(g *Graph) { g.replicas = &replicaSet{dial: dial, byAddr: map[string]*replica{}} }
}

// replicaSet is what a Graph knows of the replicas.
type replicaSet struct {
	fixed []*replica                                // a standalone Redis's
	dial  func(addr string) (rueidis.Client, error) // a Cluster's
	next  atomic.Uint64                             // round robin

	mu      sync.Mutex
	byAddr  map[string]*replica   // a Cluster's, by address
	servers []Server              // a Cluster's masters, as last read
	read    time.Time             // when servers was read
	indexes map[string]*readIndex // per master address

	served, lagged, failed atomic.Uint64
}

type replica struct {
	name string
	c    rueidis.Client
	rest atomic.Int64 // Unix ms until which it is skipped
}

// readIndex is the master's offset call shared by concurrent reads: at
// most one every readIndexGap, each sent after every read that takes its
// answer arrived.
type readIndex struct {
	mu        sync.Mutex
	scheduled bool        // a goroutine sends the calls
	next      *offsetCall // the call the reads arriving now take
	lastSent  time.Time
}

// readIndexGap is the least time between two offset calls to one master:
// a read waits at most that for its call, and the master answers at most
// a thousand calls a second, however many reads there are.
const readIndexGap = 2 * time.Millisecond

type offsetCall struct {
	done  chan struct{}
	epoch string
	tick  int64
	err   error
}

// get returns the master's epoch and tick, moved on after get was
// called, by send.
func (ri *readIndex) get(ctx context.Context, send func() (string, int64, error)) (string, int64, error) {
	ri.mu.Lock()
	if ri.next == nil {
		ri.next = &offsetCall{done: make(chan struct{})}
	}
	c := ri.next
	if !ri.scheduled {
		ri.scheduled = true
		go ri.fire(send)
	}
	ri.mu.Unlock()
	select {
	case <-c.done:
		return c.epoch, c.tick, c.err
	case <-ctx.Done():
		return "", 0, ctx.Err()
	}
}

// fire sends the calls while reads wait for one.
func (ri *readIndex) fire(send func() (string, int64, error)) {
	for {
		ri.mu.Lock()
		wait := time.Until(ri.lastSent.Add(readIndexGap))
		ri.mu.Unlock()
		if wait > 0 {
			time.Sleep(wait)
		}
		ri.mu.Lock()
		c := ri.next
		ri.next, ri.lastSent = nil, time.Now()
		ri.mu.Unlock()
		c.epoch, c.tick, c.err = send()
		close(c.done)
		ri.mu.Lock()
		if ri.next == nil {
			ri.scheduled = false
			ri.mu.Unlock()
			return
		}
		ri.mu.Unlock()
	}
}

// initReplicas registers the replica metrics.
func (g *Graph) initReplicas() error {
	rs := g.replicas
	if rs == nil {
		return nil
	}
	rs.indexes = map[string]*readIndex{}
	if g.reg == nil {
		return nil
	}
	for result, n := range map[string]*atomic.Uint64{"served": &rs.served, "lagged": &rs.lagged, "failed": &rs.failed} {
		if err := g.reg.Register(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "followgraph_redis_replica_reads_total",
			Help:        "Reads sent to a Redis replica: served there, or sent to the master because the replica lagged or failed.",
			ConstLabels: prometheus.Labels{"result": result},
		}, func() float64 { return float64(n.Load()) })); err != nil {
			return err
		}
	}
	return nil
}

// closeReplicas closes the clients WithClusterReplicas dialled.
func (g *Graph) closeReplicas() {
	if g.replicas == nil || g.replicas.dial == nil {
		return
	}
	g.replicas.mu.Lock()
	defer g.replicas.mu.Unlock()
	for addr, r := range g.replicas.byAddr {
		r.c.Close()
		delete(g.replicas.byAddr, addr)
	}
}

// replicasOf returns the master of slot and its replicas, from the Cluster's
// slots as read at most a second ago.
func (g *Graph) replicasOf(ctx context.Context, slot uint16) (Server, []*replica, error) {
	rs := g.replicas
	if rs.dial == nil {
		srvs, err := g.Servers(ctx)
		if err != nil {
			return Server{}, nil, err
		}
		return srvs[0], rs.fixed, nil
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if time.Since(rs.read) > time.Second {
		srvs, err := g.Servers(ctx)
		if err != nil {
			return Server{}, nil, err
		}
		rs.servers, rs.read = srvs, time.Now()
	}
	for _, s := range rs.servers {
		if !s.Has(slot) {
			continue
		}
		var out []*replica
		for _, addr := range s.Replicas {
			r := rs.byAddr[addr]
			if r == nil {
				c, err := rs.dial(addr)
				if err != nil {
					continue
				}
				r = &replica{name: addr, c: c}
				rs.byAddr[addr] = r
			}
			out = append(out, r)
		}
		return s, out, nil
	}
	return Server{}, nil, fmt.Errorf("no master serves slot %d", slot)
}

// pick returns the next replica of rs that is not resting, or nil.
func (rs *replicaSet) pick(of []*replica) *replica {
	now := nowMs()
	for range len(of) {
		r := of[rs.next.Add(1)%uint64(len(of))]
		if r.rest.Load() <= now {
			return r
		}
	}
	return nil
}

// index returns the read index of master s.
func (rs *replicaSet) index(s Server) *readIndex {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	ri := rs.indexes[s.Addr]
	if ri == nil {
		ri = &readIndex{}
		rs.indexes[s.Addr] = ri
	}
	return ri
}

// readReplica sends the commands build makes to a replica (see the
// comment at the top) and returns their results, or false when the read
// is for the master: no replica, more than one master's slots, a replica
// that lags or fails, or markers the read did not know.
func (g *Graph) readReplica(ctx context.Context, build func() rueidis.Commands) ([]rueidis.RedisResult, bool) {
	rs := g.replicas
	cmds := build()
	cr := g.begin(cmds)
	master, of, err := g.replicasOf(ctx, uint16(cr.groups[0]))
	if err != nil || len(of) == 0 {
		return nil, false
	}
	for _, grp := range cr.groups[1:] {
		if !master.Has(uint16(grp)) {
			return nil, false // slots of several masters
		}
	}
	r := rs.pick(of)
	if r == nil {
		return nil, false
	}
	epoch, tick, err := rs.index(master).get(ctx, func() (string, int64, error) { return g.masterTick(master) })
	if err != nil {
		return nil, false
	}
	for attempt := 0; ; attempt++ {
		if attempt > 0 { // the replica lagged: once more, a moment later
			time.Sleep(replicaRetry)
			cmds = build()
		}
		res, outcome := g.tryReplica(ctx, r, cmds, cr, master, epoch, tick)
		switch {
		case outcome == replicaServed:
			rs.served.Add(1)
			return res, true
		case outcome == replicaLagged && attempt == 0:
			continue
		case outcome == replicaLagged:
			rs.lagged.Add(1)
		default:
			rs.failed.Add(1)
		}
		return nil, false
	}
}

// replicaRetry is how long a read waits before it asks a replica that
// lagged once more.
const replicaRetry = time.Millisecond

// What tryReplica found.
const (
	replicaServed = iota
	replicaLagged // behind the master's offset, or another history
	replicaFailed // an error, or markers the read did not know: the master's read tells
)

// tryReplica sends cmds to r, a replica of master, after the read of the
// tick's field epoch and before the GETs of cr's markers, and says
// whether the answer may be served.
func (g *Graph) tryReplica(ctx context.Context, r *replica, cmds rueidis.Commands, cr checkedRead, master Server, epoch string, tick int64) ([]rueidis.RedisResult, int) {
	n := len(cmds)
	rctx, cancel := context.WithTimeout(ctx, replicaTimeout)
	defer cancel()
	pipe := make(rueidis.Commands, 0, n+len(cr.groups)+2)
	if g.cluster {
		pipe = append(pipe, r.c.B().Readonly().Build())
	}
	pipe = append(pipe, r.c.B().Hget().Key(g.tickKey(master)).Field(epoch).Build())
	head := len(pipe)
	pipe = append(pipe, cmds...)
	for _, grp := range cr.groups {
		pipe = append(pipe, r.c.B().Get().Key(g.markerKey(grp)).Build())
	}
	res := r.c.DoMulti(rctx, pipe...)
	seen, err := res[head-1].AsInt64()
	switch {
	case rueidis.IsRedisNil(err):
		return nil, replicaLagged
	case err != nil:
		if _, ok := rueidis.IsRedisErr(err); !ok {
			r.rest.Store(nowMs() + replicaRest.Milliseconds())
		}
		return nil, replicaFailed
	case seen < tick:
		return nil, replicaLagged
	}
	for i := range cr.groups {
		epoch, err := res[head+n+i].ToString()
		if err != nil || cr.snaps[i] == nil || cr.snaps[i].epoch != epoch {
			return nil, replicaFailed
		}
	}
	for _, x := range res[head : head+n] {
		err := x.Error()
		if err == nil || rueidis.IsRedisNil(err) || isNoScript(err) { // a script's first run there: the caller loads it
			continue
		}
		if _, ok := rueidis.IsRedisErr(err); !ok { // the connection, not the command
			r.rest.Store(nowMs() + replicaRest.Milliseconds())
		}
		return nil, replicaFailed // MOVED, LOADING...
	}
	return res[head : head+n], replicaServed
}

// tickKey returns the key of master s's tick, in its lowest slot.
func (g *Graph) tickKey(s Server) string {
	if !g.cluster {
		return g.prefix + ":tick"
	}
	return g.prefix + ":tick:{" + g.outboxTags[s.first()] + "}"
}

// masterTick moves master s's tick on and returns the epoch and count:
// the guard of the marker of s's lowest slot (the master is vouched for,
// and its epoch is the one this Graph knows), then HINCRBY of that
// epoch's field, pipelined on one connection.
func (g *Graph) masterTick(s Server) (string, int64, error) {
	n, err := g.node(s)
	if err != nil {
		return "", 0, err
	}
	grp := g.group(s.first())
	known := g.guard.slots[grp].state.Load()
	if known == nil {
		return "", 0, errors.New("redisgraph: tick: the epoch is not known yet")
	}
	ctx, cancel := context.WithTimeout(context.Background(), replicaTimeout)
	defer cancel()
	res := n.DoMulti(ctx, g.run(scriptGuard).cmd(n, []string{g.markerKey(grp)}, nil),
		n.B().Hincrby().Key(g.tickKey(s)).Field(known.epoch).Increment(1).Build())
	epoch, err := res[0].ToString()
	if err != nil || epoch != known.epoch {
		return "", 0, fmt.Errorf("redisgraph: tick of %s: the marker holds %q, not %q (%w)", s, epoch, known.epoch, err)
	}
	tick, err := res[1].AsInt64()
	if err != nil {
		return "", 0, err
	}
	return epoch, tick, nil
}
