// Package stamps remembers, for a little while, the change stamps a
// Graph's writes left on users (the field st of a user's counters hash,
// which every change of the user's keys increments), so that a read of
// the same Graph does not serve a cached counters hash older than its own
// write: Redis's invalidation of the cached entry may arrive just after
// the write's reply, on another connection (docs/design/redisgraph.md).
package stamps

import (
	"math"
	"sync"
	"time"

	fg "github.com/followgraph/followgraph"
	"github.com/redis/rueidis"
)

// TTL is how long a write's stamp is remembered: long past the
// arrival of its invalidation.
const TTL = 2 * time.Second

// Stamps remembers, for a little while, the change stamps a Graph's
// writes left on users, sharded by user. The zero Stamps is ready to use.
type Stamps struct {
	shards [64]stampShard
}

type stampShard struct {
	mu    sync.Mutex
	m     map[fg.UserID]knownStamp
	swept time.Time
	_     [16]byte
}

type knownStamp struct {
	stamp int64
	at    time.Time
}

func (s *Stamps) shard(id fg.UserID) *stampShard {
	return &s.shards[uint64(id)*0x9E3779B97F4A7C15>>58]
}

// Note remembers, for TTL from now, that id's stamp is at least
// stamp (and at least any stamp noted before).
func (s *Stamps) Note(id fg.UserID, stamp int64) {
	sh := s.shard(id)
	now := time.Now()
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.m == nil {
		sh.m = make(map[fg.UserID]knownStamp)
	}
	if k, ok := sh.m[id]; ok && k.stamp > stamp {
		stamp = k.stamp
	}
	sh.m[id] = knownStamp{stamp: stamp, at: now}
	if len(sh.m) > 1024 && now.Sub(sh.swept) > TTL {
		for id, k := range sh.m {
			if now.Sub(k.at) > TTL {
				delete(sh.m, id)
			}
		}
		sh.swept = now
	}
}

// Touch notes that each of ids changed at a stamp not known: until
// TTL has passed, every cached counters hash of theirs is read again.
func (s *Stamps) Touch(ids ...fg.UserID) {
	for _, id := range ids {
		s.Note(id, math.MaxInt64)
	}
}

// Get returns the stamp noted for id within TTL, or 0.
func (s *Stamps) Get(id fg.UserID) int64 {
	sh := s.shard(id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	k, ok := sh.m[id]
	if !ok || time.Since(k.at) > TTL {
		return 0
	}
	return k.stamp
}

// NoteReplies notes the stamps a write script returned, one for each of
// ids (fewer when the script returned fewer).
func (s *Stamps) NoteReplies(replies []rueidis.RedisMessage, ids ...fg.UserID) {
	for i, m := range replies[:min(len(replies), len(ids))] {
		if n, err := m.AsInt64(); err == nil {
			s.Note(ids[i], n)
		}
	}
}
