// Package keyspace builds every Redis key of a deployment, in one place:
// the keys of each user (and their chunks), and the deployment-wide keys
// (outbox streams, graph markers, checkpoints, ticks, jobs sets, leases,
// the layout record). It also says which Cluster slot a key or a user is
// in. docs/design/redis-layout.md describes the keys.
//
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
// bits (layout's Flag constants): what Relations reads, one ZMSCORE for
// every kind. (A hash would do, but HMGET on a small hash, a listpack of
// up to 512 entries, scans it for each field.)
//
// A list longer than the Graph's bound (WithMaxKeyMembers) is split into
// chunks in the same slot: chunk j of a key is <key>:<j>, and h holds each
// group's number of chunks (layout.Groups).
//
// The members of the sorted sets are 8-byte big-endian ids, so members with
// equal scores sort by id, as keyset paging needs. A version hash holds an
// edge's full version (16 hex digits) only where its millisecond part does
// not say it all: for an unfollowed edge (its tombstone), or a live edge
// whose version's counter is not zero.
package keyspace

import (
	"strconv"
	"strings"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/redisgraph/internal/layout"
)

// Slots is the number of slots of a Redis Cluster.
const Slots = 16384

// Space is the keys of one deployment: its prefix, and whether its graph
// is laid out for a Cluster (one outbox stream, marker and jobs set per
// slot) or a standalone Redis (one of each).
type Space struct {
	prefix  string
	cluster bool
	tags    []string // per slot, on a Cluster: a hash tag of that slot
}

// New returns the keys under prefix, for a Cluster or not.
func New(prefix string, cluster bool) Space {
	s := Space{prefix: prefix, cluster: cluster}
	if cluster {
		s.tags = slotTags()
	}
	return s
}

// Prefix returns the prefix of every key.
func (s Space) Prefix() string { return s.prefix }

// Cluster reports whether the keys are laid out for a Cluster.
func (s Space) Cluster() bool { return s.cluster }

// User returns the key of kind k of user id: <prefix>:{<id>}:<k>, so that
// every key of a user shares the user's id as its hash tag, and its slot.
func (s Space) User(id fg.UserID, k layout.Key) string {
	return s.prefix + ":{" + id.String() + "}:" + string(k)
}

// UserKeys returns every key of id, in the order the scripts take them
// (layout.UserKeys).
func (s Space) UserKeys(id fg.UserID) (keys [layout.NumUserKeys]string) {
	for i, k := range layout.UserKeys {
		keys[i] = s.User(id, k)
	}
	return keys
}

// Chunk returns the key of chunk j of user id's key k (layout.ChunkKey):
// chunk 0 is the key itself.
func (s Space) Chunk(id fg.UserID, k layout.Key, j int) string {
	return s.prefix + ":{" + id.String() + "}:" + layout.ChunkKey(k, j)
}

// Groups returns the number of slot groups: one for a standalone Redis,
// one per slot on a Cluster. Each group has its outbox stream, marker,
// checkpoint and jobs set.
func (s Space) Groups() int {
	if !s.cluster {
		return 1
	}
	return Slots
}

// Group returns the slot group of a key's slot.
func (s Space) Group(slot uint16) int {
	if !s.cluster {
		return 0
	}
	return int(slot & (Slots - 1))
}

// GroupOf returns the slot group of user's keys.
func (s Space) GroupOf(user fg.UserID) int { return s.Group(SlotOf(user)) }

// grouped returns <prefix>:<name> on a standalone Redis, and on a Cluster
// <prefix>:<name>:{<tag>} in slot group i.
func (s Space) grouped(name string, i int) string {
	if !s.cluster {
		return s.prefix + ":" + name
	}
	return s.prefix + ":" + name + ":{" + s.tags[i] + "}"
}

// Outbox returns the outbox stream that takes the events of user's
// changes: the one of user's slot.
func (s Space) Outbox(user fg.UserID) string { return s.grouped("outbox", s.GroupOf(user)) }

// OutboxOf returns the outbox stream of slot group i.
func (s Space) OutboxOf(i int) string { return s.grouped("outbox", i) }

// Outboxes returns every outbox stream, by slot group.
func (s Space) Outboxes() []string {
	keys := make([]string, s.Groups())
	for i := range keys {
		keys[i] = s.OutboxOf(i)
	}
	return keys
}

// OutboxLease returns the key of the relays' lease of outbox stream.
func (s Space) OutboxLease(stream string) string { return stream + ":lease" }

// Jobs returns the sorted set of the users of user's slot whose
// account-state jobs are to run.
func (s Space) Jobs(user fg.UserID) string { return s.Outbox(user) + ":jobs" }

// JobsOf returns the jobs set beside outbox stream.
func (s Space) JobsOf(stream string) string { return stream + ":jobs" }

// JobsLease returns the key of the lease of running the jobs.
func (s Space) JobsLease() string { return s.Jobs(0) + ":lease" }

// Marker returns the graph marker of slot group i.
func (s Space) Marker(i int) string { return s.grouped("graph", i) }

// Checkpoint returns the checkpoint kept in slot group i.
func (s Space) Checkpoint(i int) string { return s.grouped("ckpt", i) }

// Tick returns the tick kept in slot group i, for replica reads.
func (s Space) Tick(i int) string { return s.grouped("tick", i) }

// HealLease returns the key of the lease of healing a server whose
// lowest slot group is i.
func (s Space) HealLease(i int) string { return s.grouped("heal:lease", i) }

// RebuildLease returns the key of the lease of rebuilding the graph.
func (s Space) RebuildLease() string { return s.prefix + ":rebuild:lease" }

// Horizon returns the key of the deployment's tombstone horizon
// (redisgraph's TombstoneHorizon), 16 hex digits.
func (s Space) Horizon() string { return s.prefix + ":hz" }

// Layout returns the key that records the layout's version.
func (s Space) Layout() string { return s.prefix + ":layout" }

// UserScan returns the SCAN MATCH pattern of the keys of users, and the
// part of such a key before the user's id.
func (s Space) UserScan() (pattern, head string) {
	return GlobEscape(s.prefix) + ":{*", s.prefix + ":{"
}

// UserOfKey returns the user of a key of a user under the prefix.
func (s Space) UserOfKey(key string) (fg.UserID, bool) {
	rest, ok := strings.CutPrefix(key, s.prefix+":{")
	id, _, ok2 := strings.Cut(rest, "}:")
	u, err := fg.ParseUserID(id)
	return u, ok && ok2 && err == nil
}

// GlobEscape escapes the characters special in a SCAN MATCH pattern.
func GlobEscape(s string) string {
	var b strings.Builder
	for _, c := range []byte(s) {
		if strings.IndexByte(`*?[]\`, c) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(c)
	}
	return b.String()
}

// SlotOf returns the Cluster slot of the keys of id.
func SlotOf(id fg.UserID) uint16 { return CRC16(id.String()) & (Slots - 1) }

// KeySlot returns the Cluster slot of key, by its hash tag when it has
// one.
func KeySlot(key string) uint16 {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	return CRC16(key) & (Slots - 1)
}

// slotTags returns, for each slot, a hash tag whose keys live in that slot:
// the smallest non-negative integer (in decimal) that hashes there.
func slotTags() []string {
	tags := make([]string, Slots)
	for n, left := 0, Slots; left > 0; n++ {
		s := strconv.Itoa(n)
		if slot := CRC16(s) & (Slots - 1); tags[slot] == "" {
			tags[slot] = s
			left--
		}
	}
	return tags
}

// CRC16 is CRC-16/XMODEM, the hash of Redis Cluster's key slots.
func CRC16(s string) uint16 {
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
