package memgraph

import (
	"hash/maphash"

	fg "github.com/followgraph/followgraph"
)

// idTable maps user ids to internal ids: open addressing with linear
// probing over 16-byte slots, so a lookup is usually one cache miss (a Go
// map takes two or three). Ids are never removed. Not safe for concurrent
// use; the Graph guards each with its shard's lock.
type idTable struct {
	slots []idSlot // a power of two long; id 0 marks a free slot
	n     int
}

type idSlot struct {
	id fg.UserID
	d  uint32
}

func (t *idTable) get(h uint64, id fg.UserID) (uint32, bool) {
	if len(t.slots) == 0 {
		return 0, false
	}
	mask := uint64(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		switch s := t.slots[i]; s.id {
		case id:
			return s.d, true
		case 0:
			return 0, false
		}
	}
}

// put adds id, which must not be present, growing the table at 3/4 full.
func (t *idTable) put(seed maphash.Seed, h uint64, id fg.UserID, d uint32) {
	if 4*(t.n+1) > 3*len(t.slots) {
		old := t.slots
		t.slots = make([]idSlot, max(16, 2*len(old)))
		for _, s := range old {
			if s.id != 0 {
				t.insert(hashID(seed, s.id), s)
			}
		}
	}
	t.insert(h, idSlot{id, d})
	t.n++
}

func (t *idTable) insert(h uint64, s idSlot) {
	mask := uint64(len(t.slots) - 1)
	i := h & mask
	for t.slots[i].id != 0 {
		i = (i + 1) & mask
	}
	t.slots[i] = s
}

// hashID hashes a user id with the graph's random seed, so that ids chosen
// by an adversary cannot be made to collide.
func hashID(seed maphash.Seed, id fg.UserID) uint64 { return maphash.Comparable(seed, id) }
