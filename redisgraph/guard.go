package redisgraph

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	fg "github.com/followgraph/followgraph"
)

// A read never answers a guess: a Redis that lost its data (restarted
// empty, a master replaced by an empty one) would answer every read with
// nothing, and nothing reads as a user without edges. So each slot's graph
// has a marker, the key <prefix>:graph (one per slot on a Cluster, in the
// slot of its outbox stream), holding an epoch: a random number drawn when
// the graph is marked as whole (InitOutbox, after a deployment's first
// start or a Rebuild). A loss takes the marker with it, and only a rebuild
// brings a marker back, with a new epoch.
//
// Every read that goes to Redis is pipelined with a check of the marker of
// each slot it reads (the guard script, which a server not vouched for
// lacks: see vouch.go), after the read's own commands, on the same
// connection: the read is answered only if the marker holds the epoch this
// Graph knew before it sent the read. Then the marker held that epoch
// continuously from before the read until after it (a lost marker comes
// back with another epoch), and so did the graph. A marker that is gone
// answers 503 (errGraphLost) and tells the WithOnLoss function; one with
// another epoch (rebuilt meanwhile by some node) is learnt, and the read
// sent again.
//
// Reads served from the client-side cache go to no Redis at the time; a
// cached entry is trusted if it was filled (as rueidis says: the entry's
// expiry less its time to live) after the epoch was learnt and before a
// check that found it still there was sent. A command runs only on the
// Redis its connection reached, so an entry filled from a Redis that
// lost the graph can never be followed by such a check.

// errGraphLost is the error of a read of a slot whose marker is gone.
var errGraphLost = &fg.Error{Code: fg.EUnavailable,
	Message: "Redis has lost the graph: reads and writes wait until it is rebuilt (a node does it by itself, or `followgraph rebuild`)"}

// errGraphChanging is the error of a read that found the graph rebuilt
// under it twice in a row.
var errGraphChanging = &fg.Error{Code: fg.EUnavailable, Message: "the graph in Redis is being rebuilt; retry"}

// guard is what a Graph knows of the markers: per slot (one for a
// standalone Redis), the epoch and when it was learnt, and when the last
// check that found it was sent.
type guard struct {
	slots  []slotGuard
	onLoss func() // nil: none
}

type slotGuard struct {
	state atomic.Pointer[epochState] // nil until learnt
	good  atomic.Int64               // Unix ms at which the last check that found the epoch was sent
}

type epochState struct {
	epoch string
	since int64 // Unix ms once the epoch was known (the reply that taught it)
}

// markerKey returns the key of the marker of slot group i: the only one of
// a standalone Redis, or slot i's on a Cluster.
func (g *Graph) markerKey(i int) string {
	if !g.cluster {
		return g.prefix + ":graph"
	}
	return g.prefix + ":graph:{" + g.outboxTags[i] + "}"
}

// group returns the index of the slot group of a command's key slot.
func (g *Graph) group(slot uint16) int {
	if !g.cluster {
		return 0
	}
	return int(slot & (slots - 1))
}

// newEpoch draws a marker's epoch.
func newEpoch() string {
	var b [8]byte
	rand.Read(b[:])
	return strconv.FormatUint(binary.BigEndian.Uint64(b[:])>>1|1, 10)
}

func nowMs() int64 { return time.Now().UnixMilli() }

// checkedRead is a read's set of slot groups, with the epoch each had
// before the read was sent.
type checkedRead struct {
	groups []int
	snaps  []*epochState
	sent   int64
	index  map[int]int // group → its place, once there are many
}

// begin notes the epochs of the groups of cmds, as the read is sent.
func (g *Graph) begin(cmds rueidis.Commands) checkedRead {
	var cr checkedRead
	for _, c := range cmds {
		cr.add(g, g.group(c.Slot()))
	}
	cr.sent = nowMs()
	return cr
}

func (cr *checkedRead) add(g *Graph, group int) {
	if cr.find(group) < 0 {
		cr.put(group, g.guard.slots[group].state.Load())
	}
}

// put adds group, with the epoch it had, to cr, which lacks it.
func (cr *checkedRead) put(group int, snap *epochState) {
	if cr.index == nil && len(cr.groups) == 16 {
		cr.index = make(map[int]int)
		for i, x := range cr.groups {
			cr.index[x] = i
		}
	}
	if cr.index != nil {
		cr.index[group] = len(cr.groups)
	}
	cr.groups = append(cr.groups, group)
	cr.snaps = append(cr.snaps, snap)
}

// find returns the place of group in cr, or -1.
func (cr *checkedRead) find(group int) int {
	if cr.index != nil {
		if i, ok := cr.index[group]; ok {
			return i
		}
		return -1
	}
	for i, x := range cr.groups {
		if x == group {
			return i
		}
	}
	return -1
}

// only returns the part of cr of the given groups (each of which cr has).
func (cr checkedRead) only(groups []int) checkedRead {
	out := checkedRead{sent: cr.sent}
	for _, grp := range groups {
		if i := cr.find(grp); i >= 0 && out.find(grp) < 0 {
			out.put(grp, cr.snaps[i])
		}
	}
	return out
}

// markers returns the checks of the read's markers, to send after its
// commands. On a Cluster, each is the guard script, which reads a marker
// on a server vouched for only (vouch.go): a command with a key follows
// its slot when the slot has moved, so the check is redirected with the
// read. A standalone Redis redirects nothing and the commands of one
// pipeline all run on the server its connection reached (rueidis sends a
// pipeline again whole, on one connection), so there the check is two
// plain commands, a fifth of the script's cost in Redis: SCRIPT EXISTS of
// the guard (the server is vouched for), then GET of the marker.
func (g *Graph) markers(cr checkedRead) rueidis.Commands {
	guard := g.run(scriptGuard)
	if !g.cluster && len(cr.groups) > 0 {
		return rueidis.Commands{
			g.c.B().ScriptExists().Sha1(guard.sha).Build(),
			g.c.B().Get().Key(g.markerKey(0)).Build(),
		}
	}
	cmds := make(rueidis.Commands, len(cr.groups))
	for i, grp := range cr.groups {
		cmds[i] = guard.cmd(g.c, []string{g.markerKey(grp)}, nil)
	}
	return cmds
}

// marker returns what the checks markers made say of the read's i-th
// group: its marker's epoch, or the guard's error (NOSCRIPT on a server
// not vouched for).
func (g *Graph) marker(replies []rueidis.RedisResult, i int) (string, error) {
	if g.cluster {
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

// settle looks at the replies of the read's markers: errGraphLost when one
// is gone, errUnvouched when a server is not vouched for; again true when
// one holds an epoch the read did not know (learnt now: the read must be
// sent again); otherwise each group's last check is moved to the read's
// sending.
func (g *Graph) settle(cr checkedRead, replies []rueidis.RedisResult) (again bool, err error) {
	for i := range cr.groups {
		epoch, err := g.marker(replies, i)
		switch {
		case rueidis.IsRedisNil(err):
			g.lost()
			return false, fmt.Errorf("redisgraph: read: %w", errGraphLost)
		case isNoScript(err) || errors.Is(err, errNoGuard):
			g.unvouched(uint16(cr.groups[i]))
			return false, fmt.Errorf("redisgraph: read: %w", errUnvouched)
		case err != nil:
			return false, unavailable("read", err)
		}
		sg := &g.guard.slots[cr.groups[i]]
		if snap := cr.snaps[i]; snap != nil && snap.epoch == epoch {
			for {
				if good := sg.good.Load(); good >= cr.sent || sg.good.CompareAndSwap(good, cr.sent) {
					break
				}
			}
			continue
		}
		again = true
		if cur := sg.state.Load(); cur == nil || cur.epoch != epoch {
			if sg.state.CompareAndSwap(cur, &epochState{epoch: epoch, since: nowMs()}) && cur != nil {
				g.memo.clear() // counted on the graph before the rebuild
			}
		}
	}
	return again, nil
}

// readChecked sends the commands build makes, followed by the checks of
// their markers, in one pipeline, and returns their results once the
// checks show the graph whole from before to after them (see the comment
// at the top). build may be called again (commands are not reused: rueidis
// recycles them once sent).
func (g *Graph) readChecked(ctx context.Context, build func() rueidis.Commands) ([]rueidis.RedisResult, error) {
	if g.replicas != nil {
		if res, ok := g.readReplica(ctx, build); ok {
			return res, nil
		}
	}
	for range 3 {
		cmds := build()
		n := len(cmds)
		cr := g.begin(cmds)
		res := g.c.DoMulti(ctx, append(cmds, g.markers(cr)...)...)
		again, err := g.settle(cr, res[n:])
		if err != nil {
			return nil, err
		}
		if !again {
			return res[:n], nil
		}
	}
	return nil, fmt.Errorf("redisgraph: read: %w", errGraphChanging)
}

// readOne is readChecked of one command.
func (g *Graph) readOne(ctx context.Context, build func() rueidis.Completed) (rueidis.RedisResult, error) {
	res, err := g.readChecked(ctx, func() rueidis.Commands { return rueidis.Commands{build()} })
	if err != nil {
		return rueidis.RedisResult{}, err
	}
	return res[0], nil
}

// verify sends the checks of a read's markers after the read has been
// answered (a read of the client-side cache that went to Redis), with the
// same meaning as readChecked's.
func (g *Graph) verify(ctx context.Context, cr checkedRead) (again bool, err error) {
	cr.sent = nowMs() // the checks' own sending, after the read's: they vouch for what it filled
	return g.settle(cr, g.c.DoMulti(ctx, g.markers(cr)...))
}

// trusted reports whether r, a hit of the client-side cache of a key of
// slot group grp, may be served (see the comment at the top).
func (g *Graph) trusted(grp int, r rueidis.RedisResult) bool {
	sg := &g.guard.slots[grp]
	st := sg.state.Load()
	if st == nil {
		return false
	}
	filled := r.CachePXAT() - cacheTTL.Milliseconds()
	return filled >= st.since && filled < sg.good.Load()
}

func (g *Graph) lost() {
	if g.guard.onLoss != nil {
		g.guard.onLoss()
	}
}

// learnMarkers reads every marker, so that the first reads do not each
// learn theirs; a missing one is left unknown.
func (g *Graph) learnMarkers(ctx context.Context) error {
	keys := make([]string, len(g.guard.slots))
	for i := range keys {
		keys[i] = g.markerKey(i)
	}
	for start := 0; start < len(keys); start += 1024 {
		end := min(start+1024, len(keys))
		cmds := make(rueidis.Commands, end-start)
		for i := range cmds {
			cmds[i] = g.c.B().Get().Key(keys[start+i]).Build()
		}
		for i, r := range g.c.DoMulti(ctx, cmds...) {
			epoch, err := r.ToString()
			if rueidis.IsRedisNil(err) {
				continue
			}
			if err != nil {
				return unavailable("reading the graph's markers", err)
			}
			g.guard.slots[start+i].state.Store(&epochState{epoch: epoch, since: nowMs()})
		}
	}
	return nil
}
