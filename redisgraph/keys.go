package redisgraph

import (
	"encoding/binary"
	"strconv"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/redisgraph/internal/layout"
)

// Every key of a user has the user's decimal id as its hash tag, so all of
// them live in one slot of a Redis Cluster:
//
//	<prefix>:{<id>}:out  sorted set: whom the user follows, score = follow time (ms)
//	<prefix>:{<id>}:in   sorted set: who follows the user, score = follow time (ms)
//	<prefix>:{<id>}:ov   hash: versions of the user's outgoing edges (see below)
//	<prefix>:{<id>}:iv   hash: versions of the user's incoming edges, as the followee's side knows them
//	<prefix>:{<id>}:h    hash: nout, nin (the counters), st (the change stamp), clk (the clock),
//	                     e ("1" while ov is known to be empty; see lua/change.lua), and the
//	                     counters of the other kinds below (nbo, nbi, nmo, nro, nri), p ("1"
//	                     while private) and pv (the version of the private setting)
//
// The other kinds of edges are kept the same way, each with its sorted set
// (score: the time the edge was made) and versions hash:
//
//	bo, bov   whom the user blocks             bi, biv   who blocks the user
//	mo, mov   whom the user mutes, and mx, a hash of the mutes' expiries (ms)
//	ro, rov   the user's pending follow requests   ri, riv   those to the user
//
// A mute's score is its since, not its version's time, so mov holds the
// version of every mute. rf is a sorted set of the other users with any
// edge of these kinds on, either way, scored with the sum of those edges'
// bits (read.go's flag constants): what Relations reads, one ZMSCORE for
// every kind. (A hash would do, but HMGET on a small hash, a listpack of
// up to 512 entries, scans it for each field.)
//
// A list longer than the Graph's bound (WithMaxKeyMembers) is split into
// chunks in the same slot: chunk j of a key is <key>:<j>, and h holds each
// group's number of chunks (layout.Groups; chunks.go, lua/chunks.lua).
//
// The members of the sorted sets are 8-byte big-endian ids, so members with
// equal scores sort by id, as keyset paging needs. A version hash holds an
// edge's full version (16 hex digits) only where its millisecond part does
// not say it all: for an unfollowed edge (its tombstone), or a live edge
// whose version's counter is not zero.
// userKeys appends to keys every key of id, in the order the scripts
// take them (layout.UserKeys).
func (g *Graph) userKeys(keys []string, id fg.UserID) []string {
	for _, k := range layout.UserKeys {
		keys = append(keys, g.key(id, k))
	}
	return keys
}

// key returns the key of the given kind of user id.
func (g *Graph) key(id fg.UserID, kind layout.Key) string {
	return g.prefix + ":{" + id.String() + "}:" + string(kind)
}

// member encodes id as a sorted set member: 8 bytes, big-endian, so that
// byte order is numeric order.
func member(id fg.UserID) string {
	var b [8]byte
	return string(appendMember(b[:0], id))
}

// appendMember appends to b the member of id, as member returns it.
func appendMember(b []byte, id fg.UserID) []byte {
	return binary.BigEndian.AppendUint64(b, uint64(id))
}

// memberID decodes a member written by member.
func memberID(m string) (fg.UserID, bool) {
	if len(m) != 8 {
		return 0, false
	}
	id := fg.UserID(binary.BigEndian.Uint64([]byte(m)))
	return id, id.Valid()
}

// slotOf returns the Redis Cluster slot of the keys of id.
func slotOf(id fg.UserID) uint16 { return crc16(id.String()) & (slots - 1) }

const slots = 16384

// slotTags returns, for each slot, a hash tag whose keys live in that slot:
// the smallest non-negative integer (in decimal) that hashes there.
func slotTags() []string {
	tags := make([]string, slots)
	for n, left := 0, slots; left > 0; n++ {
		s := strconv.Itoa(n)
		if slot := crc16(s) & (slots - 1); tags[slot] == "" {
			tags[slot] = s
			left--
		}
	}
	return tags
}

// crc16 is CRC-16/XMODEM, the hash of Redis Cluster's key slots.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc = crc<<8 ^ crc16Table[byte(crc>>8)^s[i]]
	}
	return crc
}

var crc16Table = func() (t [256]uint16) {
	for i := range t {
		c := uint16(i) << 8
		for range 8 {
			if c&0x8000 != 0 {
				c = c<<1 ^ 0x1021
			} else {
				c <<= 1
			}
		}
		t[i] = c
	}
	return t
}()
