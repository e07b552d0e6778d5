package memgraph

import (
	"hash/maphash"
	"sync"
	"sync/atomic"

	fg "github.com/followgraph/followgraph"
)

// idTable maps user ids to internal ids: open addressing with linear
// probing over 16-byte slots, so a lookup is usually one cache miss (a Go
// map takes two or three). Ids are never removed.
//
// Lookups take no lock: a slot's internal id is stored before its user id,
// both atomically, so a reader that sees the user id sees the internal id;
// a grown table is built whole before it is published. A reader holding
// the table from before a growth may miss an id added since, which is a
// lookup that happened before the add; intern looks again under the lock.
type idTable struct {
	mu    sync.Mutex // serializes adds
	slots atomic.Pointer[[]idSlot]
	n     int
	_     [24]byte // keep shards on their own cache lines
}

type idSlot struct {
	id atomic.Int64 // 0 marks a free slot
	d  atomic.Uint32
}

func (t *idTable) get(h uint64, id fg.UserID) (uint32, bool) {
	p := t.slots.Load()
	if p == nil {
		return 0, false
	}
	slots := *p
	mask := uint64(len(slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		switch got := fg.UserID(slots[i].id.Load()); got {
		case id:
			return slots[i].d.Load(), true
		case 0:
			return 0, false
		}
	}
}

// put adds id, which must not be present, growing the table at 3/4 full.
// The caller holds t.mu.
func (t *idTable) put(seed maphash.Seed, h uint64, id fg.UserID, d uint32) {
	var slots []idSlot
	if p := t.slots.Load(); p != nil {
		slots = *p
	}
	if 4*(t.n+1) > 3*len(slots) {
		grown := make([]idSlot, max(16, 2*len(slots)))
		for i := range slots {
			if old := fg.UserID(slots[i].id.Load()); old != 0 {
				insertSlot(grown, hashID(seed, old), old, slots[i].d.Load())
			}
		}
		t.slots.Store(&grown)
		slots = grown
	}
	insertSlot(slots, h, id, d)
	t.n++
}

func insertSlot(slots []idSlot, h uint64, id fg.UserID, d uint32) {
	mask := uint64(len(slots) - 1)
	i := h & mask
	for slots[i].id.Load() != 0 {
		i = (i + 1) & mask
	}
	slots[i].d.Store(d)
	slots[i].id.Store(int64(id))
}

// hashID hashes a user id with the graph's random seed, so that ids chosen
// by an adversary cannot be made to collide.
func hashID(seed maphash.Seed, id fg.UserID) uint64 { return maphash.Comparable(seed, id) }
