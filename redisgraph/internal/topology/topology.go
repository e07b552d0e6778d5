// Package topology is what redisgraph knows of the Redis servers that
// hold the graph: the standalone Redis, or the masters of a Cluster with
// their slots and replicas; and how it sends a command to each of many
// slots' keys (an outbox stream, a marker, a checkpoint a slot), a round
// trip at most Round of them.
package topology

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/redis/rueidis"

	"github.com/followgraph/followgraph/redisgraph/internal/errs"
	"github.com/followgraph/followgraph/redisgraph/internal/keyspace"
	"github.com/followgraph/followgraph/redisgraph/internal/scripts"
)

// Round is the most commands sent in one round trip to many slots.
const Round = 1024

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

// First returns s's lowest slot: where the keys kept per server
// (checkpoint, tick, heal lease) are.
func (s Server) First() uint16 {
	if len(s.Slots) == 0 {
		return 0
	}
	low := s.Slots[0][0]
	for _, r := range s.Slots {
		low = min(low, r[0])
	}
	return low
}

// Groups returns the slot groups of ks that s serves: every slot of its
// ranges on a Cluster, the one group of a standalone Redis.
func (s Server) Groups(ks keyspace.Space) []int {
	if !ks.Cluster() {
		return []int{0}
	}
	var out []int
	for _, r := range s.Slots {
		for slot := int(r[0]); slot <= int(r[1]); slot++ {
			out = append(out, slot)
		}
	}
	return out
}

func (s Server) String() string { return s.Addr }

// Servers returns the servers that hold the graph: the standalone Redis,
// or the masters of the Cluster as CLUSTER SLOTS lists them.
func Servers(ctx context.Context, c rueidis.Client, cluster bool) ([]Server, error) {
	if !cluster {
		for addr := range c.Nodes() {
			return []Server{{Addr: addr}}, nil
		}
		return nil, errs.Wrap("servers", errors.New("no Redis node"))
	}
	// Any node that answers: a dead master is still listed a while.
	var res []rueidis.RedisMessage
	err := errors.New("no Redis node")
	for _, n := range c.Nodes() {
		if res, err = n.Do(ctx, n.B().ClusterSlots().Build()).ToArray(); err == nil {
			break
		}
	}
	if err != nil {
		return nil, errs.Wrap("servers", err)
	}
	byAddr := map[string]*Server{}
	var order []string
	for _, r := range res {
		f, err := r.ToArray()
		if err != nil || len(f) < 3 {
			return nil, errs.Wrap("servers", fmt.Errorf("CLUSTER SLOTS entry %v", r))
		}
		lo, err1 := f[0].AsInt64()
		hi, err2 := f[1].AsInt64()
		addr, err3 := nodeAddr(f[2])
		if err := errors.Join(err1, err2, err3); err != nil {
			return nil, errs.Wrap("servers", err)
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
func ServerOf(ctx context.Context, c rueidis.Client, cluster bool, slot uint16) (Server, error) {
	srvs, err := Servers(ctx, c, cluster)
	if err != nil {
		return Server{}, err
	}
	for _, s := range srvs {
		if s.Has(slot) {
			return s, nil
		}
	}
	return Server{}, errs.Wrap("servers", fmt.Errorf("no master serves slot %d", slot))
}

// Node returns the client of s alone, or an error when c does not know it
// (yet: a Cluster's new master is learnt by a refresh).
func Node(c rueidis.Client, s Server) (rueidis.Client, error) {
	n, ok := c.Nodes()[s.Addr]
	if !ok {
		return nil, errs.Wrap("server "+s.Addr, errors.New("not connected to it yet"))
	}
	return n, nil
}

// Each sends, through c, the command cmd makes of each of keys, Round a
// round trip, and calls each with every key's index and reply in order,
// until each returns an error, which Each returns.
func Each(ctx context.Context, c rueidis.Client, keys []string, cmd func(key string) rueidis.Completed,
	each func(i int, r rueidis.RedisResult) error) error {
	for start := 0; start < len(keys); start += Round {
		batch := keys[start:min(start+Round, len(keys))]
		cmds := make(rueidis.Commands, len(batch))
		for i, k := range batch {
			cmds[i] = cmd(k)
		}
		for i, r := range c.DoMulti(ctx, cmds...) {
			if err := each(start+i, r); err != nil {
				return err
			}
		}
	}
	return nil
}

// EachCall is Each of the calls call makes of 0 to n-1, through lua.
func EachCall(ctx context.Context, lua *scripts.Runner, n int, call func(i int) scripts.Call,
	each func(i int, r rueidis.RedisResult) error) error {
	for start := 0; start < n; start += Round {
		calls := make([]scripts.Call, min(Round, n-start))
		for i := range calls {
			calls[i] = call(start + i)
		}
		for i, r := range lua.ExecMulti(ctx, calls) {
			if err := each(start+i, r); err != nil {
				return err
			}
		}
	}
	return nil
}
