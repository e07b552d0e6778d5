// Package replicas reads from Redis replicas: a standalone primary's
// (given as clients) or a Cluster's (found in CLUSTER SLOTS). A read that
// does not go through the client-side cache goes to a replica of the
// master of its slots, and is answered from there only if the replica
// had, before it ran the read, every change the master had when the read
// began:
//
//  1. After the read began, the master's tick is moved on: the guard
//     of its lowest slot's marker (so the master is one vouched for,
//     and its epoch is the one the Graph knows), then HINCRBY of that
//     epoch's field in the tick hash (keyspace.Tick, in the master's
//     lowest slot), pipelined. Concurrent reads share one such call per
//     master, at most one every readIndexGap, each sent after every read
//     that takes it arrived (package coalesce).
//  2. The replica reads the tick's field, then runs the read's commands,
//     then the GETs of the read's markers, in one pipeline on one
//     connection. Its answer is used only if the field is at least the
//     count (the replica has applied the tick, and so everything the
//     master did before it) and the markers hold the epochs the read
//     knew (package guard). A replica of another history (before a
//     failover) has no field of the new epoch that the heal drew.
//
// So a read from a replica sees every change acknowledged before it
// began (its own user's included), as a read from the master does.
// A replica that lags (checked once more a moment later), answers an
// error, or does not answer within Timeout is skipped: the read
// goes to the master, and the replica is left alone for replicaRest after
// an error. The client-side cache is the master's only: the replicas'
// connections cache nothing.
package replicas

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

	"github.com/followgraph/followgraph/redisgraph/internal/coalesce"
	"github.com/followgraph/followgraph/redisgraph/internal/errs"
	"github.com/followgraph/followgraph/redisgraph/internal/guard"
	"github.com/followgraph/followgraph/redisgraph/internal/keyspace"
	"github.com/followgraph/followgraph/redisgraph/internal/topology"
)

// Timeout bounds a read's wait for a replica.
const Timeout = 100 * time.Millisecond

// replicaRest is how long a replica that failed is skipped.
const replicaRest = time.Second

// readIndexGap is the least time between two offset calls to one master:
// a read waits at most that for its call, and the master answers at most
// a thousand calls a second, however many reads there are.
const readIndexGap = 2 * time.Millisecond

// replicaRetry is how long a read waits before it asks a replica that
// lagged once more.
const replicaRetry = time.Millisecond

// Set is what a Graph knows of the replicas: it implements
// guard.Replicas.
type Set struct {
	c     rueidis.Client
	ks    keyspace.Space
	guard *guard.Guard
	fixed []*replica                                // a standalone Redis's
	dial  func(addr string) (rueidis.Client, error) // a Cluster's
	next  atomic.Uint64                             // round robin

	mu      sync.Mutex
	byAddr  map[string]*replica                    // a Cluster's, by address
	servers []topology.Server                      // a Cluster's masters, as last read
	read    time.Time                              // when servers was read
	indexes map[string]*coalesce.Calls[offsetCall] // per master address

	served, lagged, failed atomic.Uint64
}

type replica struct {
	name string
	c    rueidis.Client
	rest atomic.Int64 // Unix ms until which it is skipped
}

// offsetCall is a master's epoch and tick, as one offset call read them.
type offsetCall struct {
	epoch string
	tick  int64
	err   error
}

// Fixed returns the replicas of a standalone Redis, reached through
// clients, which their caller closes.
func Fixed(clients ...rueidis.Client) *Set {
	s := &Set{}
	for i, c := range clients {
		s.fixed = append(s.fixed, &replica{name: "replica " + strconv.Itoa(i+1), c: c})
	}
	return s
}

// Dialled returns the replicas of a Cluster's masters, found in CLUSTER
// SLOTS and reached through clients dial makes (a client of the one node
// at addr, caching nothing), which Close closes.
func Dialled(dial func(addr string) (rueidis.Client, error)) *Set {
	return &Set{dial: dial, byAddr: map[string]*replica{}}
}

// ForCluster reports whether the replicas are a Cluster's.
func (s *Set) ForCluster() bool { return s.dial != nil }

// Start makes s read the graph of ks through c, with the markers of g,
// and registers its metrics on reg (nil: not registered):
//
//	followgraph_redis_replica_reads_total{result="served|lagged|failed"}
func (s *Set) Start(c rueidis.Client, ks keyspace.Space, g *guard.Guard, reg prometheus.Registerer) error {
	s.c, s.ks, s.guard, s.indexes = c, ks, g, map[string]*coalesce.Calls[offsetCall]{}
	if reg == nil {
		return nil
	}
	for result, n := range map[string]*atomic.Uint64{"served": &s.served, "lagged": &s.lagged, "failed": &s.failed} {
		if err := reg.Register(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "followgraph_redis_replica_reads_total",
			Help:        "Reads sent to a Redis replica: served there, or sent to the master because the replica lagged or failed.",
			ConstLabels: prometheus.Labels{"result": result},
		}, func() float64 { return float64(n.Load()) })); err != nil {
			return err
		}
	}
	return nil
}

// Stats returns how many reads were served by a replica, and how many
// went to the master because the replica lagged.
func (s *Set) Stats() (served, lagged uint64) { return s.served.Load(), s.lagged.Load() }

// Close closes the clients Dialled dialled.
func (s *Set) Close() {
	if s.dial == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for addr, r := range s.byAddr {
		r.c.Close()
		delete(s.byAddr, addr)
	}
}

// of returns the master of slot and its replicas, from the Cluster's
// slots as read at most a second ago.
func (s *Set) of(ctx context.Context, slot uint16) (topology.Server, []*replica, error) {
	if s.dial == nil {
		srvs, err := topology.Servers(ctx, s.c, false)
		if err != nil {
			return topology.Server{}, nil, err
		}
		return srvs[0], s.fixed, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if time.Since(s.read) > time.Second {
		srvs, err := topology.Servers(ctx, s.c, true)
		if err != nil {
			return topology.Server{}, nil, err
		}
		s.servers, s.read = srvs, time.Now()
	}
	for _, m := range s.servers {
		if !m.Has(slot) {
			continue
		}
		var out []*replica
		for _, addr := range m.Replicas {
			r := s.byAddr[addr]
			if r == nil {
				c, err := s.dial(addr)
				if err != nil {
					continue
				}
				r = &replica{name: addr, c: c}
				s.byAddr[addr] = r
			}
			out = append(out, r)
		}
		return m, out, nil
	}
	return topology.Server{}, nil, fmt.Errorf("no master serves slot %d", slot)
}

// pick returns the next replica of of that is not resting, or nil.
func (s *Set) pick(of []*replica) *replica {
	now := time.Now().UnixMilli()
	for range len(of) {
		r := of[s.next.Add(1)%uint64(len(of))]
		if r.rest.Load() <= now {
			return r
		}
	}
	return nil
}

// index returns the offset calls of master m.
func (s *Set) index(m topology.Server) *coalesce.Calls[offsetCall] {
	s.mu.Lock()
	defer s.mu.Unlock()
	ri := s.indexes[m.Addr]
	if ri == nil {
		ri = &coalesce.Calls[offsetCall]{Gap: readIndexGap}
		s.indexes[m.Addr] = ri
	}
	return ri
}

// Read sends the commands build makes to a replica (see the package's
// comment) and returns their results, or false when the read is for the
// master: no replica, more than one master's slots, a replica that lags
// or fails, or markers the read did not know.
func (s *Set) Read(ctx context.Context, build func() rueidis.Commands) ([]rueidis.RedisResult, bool) {
	cmds := build()
	t := s.guard.Begin(cmds)
	groups := t.Groups()
	master, of, err := s.of(ctx, uint16(groups[0]))
	if err != nil || len(of) == 0 {
		return nil, false
	}
	for _, grp := range groups[1:] {
		if !master.Has(uint16(grp)) {
			return nil, false // slots of several masters
		}
	}
	r := s.pick(of)
	if r == nil {
		return nil, false
	}
	at, err := s.index(master).Wait(ctx, func() offsetCall { return s.masterTick(master) })
	if err != nil || at.err != nil {
		return nil, false
	}
	for attempt := 0; ; attempt++ {
		if attempt > 0 { // the replica lagged: once more, a moment later
			time.Sleep(replicaRetry)
			cmds = build()
		}
		res, outcome := s.try(ctx, r, cmds, t, master, at)
		switch {
		case outcome == replicaServed:
			s.served.Add(1)
			return res, true
		case outcome == replicaLagged && attempt == 0:
			continue
		case outcome == replicaLagged:
			s.lagged.Add(1)
		default:
			s.failed.Add(1)
		}
		return nil, false
	}
}

// What try found.
const (
	replicaServed = iota
	replicaLagged // behind the master's offset, or another history
	replicaFailed // an error, or markers the read did not know: the master's read tells
)

// try sends cmds to r, a replica of master, after the read of the tick's
// field of at's epoch and before the GETs of t's markers, and says whether
// the answer may be served.
func (s *Set) try(ctx context.Context, r *replica, cmds rueidis.Commands, t guard.Ticket, master topology.Server, at offsetCall) ([]rueidis.RedisResult, int) {
	n := len(cmds)
	groups := t.Groups()
	rctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	pipe := make(rueidis.Commands, 0, n+len(groups)+2)
	if s.ks.Cluster() {
		pipe = append(pipe, r.c.B().Readonly().Build())
	}
	pipe = append(pipe, r.c.B().Hget().Key(s.ks.Tick(int(master.First()))).Field(at.epoch).Build())
	head := len(pipe)
	pipe = append(pipe, cmds...)
	for _, grp := range groups {
		pipe = append(pipe, r.c.B().Get().Key(s.ks.Marker(grp)).Build())
	}
	res := r.c.DoMulti(rctx, pipe...)
	seen, err := res[head-1].AsInt64()
	switch {
	case rueidis.IsRedisNil(err):
		return nil, replicaLagged
	case err != nil:
		if _, ok := rueidis.IsRedisErr(err); !ok {
			r.rest.Store(time.Now().UnixMilli() + replicaRest.Milliseconds())
		}
		return nil, replicaFailed
	case seen < at.tick:
		return nil, replicaLagged
	}
	for i := range groups {
		epoch, err := res[head+n+i].ToString()
		if err != nil || t.Epoch(i) == nil || t.Epoch(i).Value != epoch {
			return nil, replicaFailed
		}
	}
	for _, x := range res[head : head+n] {
		err := x.Error()
		if err == nil || rueidis.IsRedisNil(err) || errs.IsNoScript(err) { // a script's first run there: the caller loads it
			continue
		}
		if _, ok := rueidis.IsRedisErr(err); !ok { // the connection, not the command
			r.rest.Store(time.Now().UnixMilli() + replicaRest.Milliseconds())
		}
		return nil, replicaFailed // MOVED, LOADING...
	}
	return res[head : head+n], replicaServed
}

// masterTick moves master m's tick on and returns the epoch and count:
// the guard of the marker of m's lowest slot (the master is vouched for,
// and its epoch is the one the Graph knows), then HINCRBY of that
// epoch's field, pipelined on one connection.
func (s *Set) masterTick(m topology.Server) offsetCall {
	n, err := topology.Node(s.c, m)
	if err != nil {
		return offsetCall{err: err}
	}
	grp := s.ks.Group(m.First())
	known := s.guard.Known(grp)
	if known == nil {
		return offsetCall{err: errors.New("redisgraph: tick: the epoch is not known yet")}
	}
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	res := n.DoMulti(ctx, s.guard.CheckOn(n, grp),
		n.B().Hincrby().Key(s.ks.Tick(int(m.First()))).Field(known.Value).Increment(1).Build())
	epoch, err := res[0].ToString()
	if err != nil || epoch != known.Value {
		return offsetCall{err: fmt.Errorf("redisgraph: tick of %s: the marker holds %q, not %q (%w)", m, epoch, known.Value, err)}
	}
	tick, err := res[1].AsInt64()
	if err != nil {
		return offsetCall{err: err}
	}
	return offsetCall{epoch: epoch, tick: tick}
}
