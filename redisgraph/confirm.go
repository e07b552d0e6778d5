package redisgraph

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"
)

// A write is acknowledged only once a check of its servers' markers, sent
// after its event is in the log, finds the epochs the write was sent
// under (confirm). Any check of a slot group's marker sent after that
// point serves: so concurrent writes share checks. Per group, the writes
// that wait for a check join the next round, one goroutine sends the
// rounds one after another, and a round is sent only after every write in
// it joined. Under load a check answers many writes, where one check per
// write cost Redis two commands (a standalone Redis's SCRIPT EXISTS and
// GET) beside the write's one script; a write alone waits for one check,
// as before, or for the end of the one in flight and then its own.

// confirmTimeout bounds one round's check; a write stops waiting when its
// own context ends.
const confirmTimeout = 5 * time.Second

// confirms holds, per slot group with writes waiting, the round of checks
// not yet sent; a group is in groups while its goroutine sends rounds.
type confirms struct {
	mu     sync.Mutex
	groups map[int]*confirmGroup

	sent atomic.Uint64 // the checks sent (for the tests)
}

// confirmGroup is a group's sender: next is the round writes join, nil
// until one does.
type confirmGroup struct{ next *confirmRound }

// confirmRound is one check of a group's marker and the writes that wait
// for it: done is closed once replies holds its answer.
type confirmRound struct {
	done    chan struct{}
	replies []rueidis.RedisResult
}

// joinCheck returns the next round of group's checks, which is sent after
// this call, starting the group's sender if none runs.
func (g *Graph) joinCheck(group int) *confirmRound {
	c := &g.confirms
	c.mu.Lock()
	defer c.mu.Unlock()
	cg := c.groups[group]
	if cg == nil {
		if c.groups == nil {
			c.groups = map[int]*confirmGroup{}
		}
		cg = &confirmGroup{}
		c.groups[group] = cg
		go g.sendChecks(group, cg)
	}
	if cg.next == nil {
		cg.next = &confirmRound{done: make(chan struct{})}
	}
	return cg.next
}

// sendChecks sends cg's rounds, each once the one before is answered,
// until none waits.
func (g *Graph) sendChecks(group int, cg *confirmGroup) {
	c := &g.confirms
	for {
		c.mu.Lock()
		r := cg.next
		if r == nil {
			delete(c.groups, group)
			c.mu.Unlock()
			return
		}
		cg.next = nil
		c.mu.Unlock()
		c.sent.Add(1)
		ctx, cancel := context.WithTimeout(context.Background(), confirmTimeout)
		r.replies = g.c.DoMulti(ctx, g.markers(checkedRead{groups: []int{group}})...)
		cancel()
		close(r.done)
	}
}

// confirm checks, once a change's event is in the log, that each server
// the change was made on is still vouched for and its marker still holds
// the epoch before held before the change was sent. Otherwise the server
// may have been replaced (a failover) or healed since, and the heal may
// have read the log before this event was in it: the change may then be
// missing from Redis, so it is not acknowledged (errReplaced).
func (g *Graph) confirm(ctx context.Context, before checkedRead) error {
	rounds := make([]*confirmRound, len(before.groups))
	for i, grp := range before.groups {
		rounds[i] = g.joinCheck(grp)
	}
	for i, r := range rounds {
		select {
		case <-r.done:
		case <-ctx.Done():
			return fmt.Errorf("%w (%w)", errReplaced, context.Cause(ctx))
		}
		one := checkedRead{groups: before.groups[i : i+1], snaps: before.snaps[i : i+1], sent: before.sent}
		again, err := g.settle(one, r.replies)
		switch {
		case err != nil:
			return fmt.Errorf("%w (%w)", errReplaced, err)
		case again: // an epoch learnt now: the next change is checked against it
			return errReplaced
		}
	}
	return nil
}
