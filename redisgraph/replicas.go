package redisgraph

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
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
// ran the read, everything the master had when the read began:
//
//  1. The master's replication offset is read after the read began
//     (INFO replication, with the guard of one of the read's slots, so
//     that the master is one vouched for: vouch.go). Concurrent reads
//     share one such call per master: one is in flight at a time, and
//     the reads that arrive meanwhile take the next, which is sent after
//     they arrived.
//  2. The replica runs INFO replication, then the read's commands, then
//     the GETs of its markers, in one pipeline on one connection. Its
//     answer is used only if it replicates the same history (the same
//     master_replid) and had processed up to the master's offset before
//     the commands (slave_repl_offset), and the markers hold the epochs
//     the read knew (guard.go).
//
// So a read from a replica sees every change acknowledged before it
// began (its own user's included), as a read from the master does.
// A replica that lags, answers an error or no answer within
// replicaTimeout is skipped: the read goes to the master, and the replica
// is left alone for replicaRest after an error. The client-side cache is
// the master's only: the replicas' connections cache nothing.

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

// readIndex is the master's offset call shared by concurrent reads.
type readIndex struct {
	mu       sync.Mutex
	inflight bool
	next     *offsetCall
}

type offsetCall struct {
	done   chan struct{}
	replid string
	offset int64
	err    error
}

// get returns the master's replication id and offset, read after get was
// called, by send.
func (ri *readIndex) get(ctx context.Context, send func() (string, int64, error)) (string, int64, error) {
	ri.mu.Lock()
	if ri.next == nil {
		ri.next = &offsetCall{done: make(chan struct{})}
	}
	c := ri.next
	if !ri.inflight {
		ri.inflight, ri.next = true, nil
		go ri.run(c, send)
	}
	ri.mu.Unlock()
	select {
	case <-c.done:
		return c.replid, c.offset, c.err
	case <-ctx.Done():
		return "", 0, ctx.Err()
	}
}

func (ri *readIndex) run(c *offsetCall, send func() (string, int64, error)) {
	c.replid, c.offset, c.err = send()
	close(c.done)
	ri.mu.Lock()
	defer ri.mu.Unlock()
	if n := ri.next; n != nil {
		ri.next = nil
		go ri.run(n, send)
		return
	}
	ri.inflight = false
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
	n := len(cmds)
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
	replid, offset, err := rs.index(master).get(ctx, func() (string, int64, error) { return g.masterOffset(master, cr.groups[0]) })
	if err != nil {
		return nil, false
	}
	rctx, cancel := context.WithTimeout(ctx, replicaTimeout)
	defer cancel()
	pipe := make(rueidis.Commands, 0, n+len(cr.groups)+2)
	if g.cluster {
		pipe = append(pipe, r.c.B().Readonly().Build())
	}
	pipe = append(pipe, r.c.B().Info().Section("replication").Build())
	head := len(pipe)
	pipe = append(pipe, cmds...)
	for _, grp := range cr.groups {
		pipe = append(pipe, r.c.B().Get().Key(g.markerKey(grp)).Build())
	}
	res := r.c.DoMulti(rctx, pipe...)
	info, err := res[head-1].ToString()
	if err != nil {
		r.rest.Store(nowMs() + replicaRest.Milliseconds())
		rs.failed.Add(1)
		return nil, false
	}
	if id, off := replicationOf(info, "master_replid:", "slave_repl_offset:"); id != replid || off < offset {
		rs.lagged.Add(1)
		return nil, false
	}
	for i := range cr.groups {
		epoch, err := res[head+n+i].ToString()
		if err != nil || cr.snaps[i] == nil || cr.snaps[i].epoch != epoch {
			rs.failed.Add(1)
			return nil, false // the master's read tells what is wrong
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
		rs.failed.Add(1)
		return nil, false // MOVED, LOADING...: the master's read tells
	}
	rs.served.Add(1)
	return res[head : head+n], true
}

// masterOffset reads the replication id and offset of master s, with the
// guard of slot group grp, so that s is vouched for.
func (g *Graph) masterOffset(s Server, grp int) (string, int64, error) {
	n, err := g.node(s)
	if err != nil {
		return "", 0, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), replicaTimeout)
	defer cancel()
	res := n.DoMulti(ctx, g.run(scriptGuard).cmd(n, []string{g.markerKey(grp)}, nil), n.B().Info().Section("replication").Build())
	if err := res[0].Error(); err != nil && !rueidis.IsRedisNil(err) {
		return "", 0, err
	}
	info, err := res[1].ToString()
	if err != nil {
		return "", 0, err
	}
	id, off := replicationOf(info, "master_replid:", "master_repl_offset:")
	if id == "" || !strings.Contains(info, "role:master") {
		return "", 0, errors.New("not a master")
	}
	return id, off, nil
}

// replicationOf reads a replication id and an offset, by their fields'
// names, from INFO replication.
func replicationOf(info, idField, offsetField string) (string, int64) {
	var id string
	var off int64 = -1
	for line := range strings.Lines(info) {
		line = strings.TrimSpace(line)
		if v, ok := strings.CutPrefix(line, idField); ok {
			id = v
		} else if v, ok := strings.CutPrefix(line, offsetField); ok {
			off, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	return id, off
}
