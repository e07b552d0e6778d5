// Package layout declares, once, how redisgraph keeps the graph in Redis:
// the keys of a user and the order the scripts take them in, the sides of
// the edges (which sorted set, versions hash and counter each kind keeps,
// each way), the flags of the other kinds, the letters of the kinds and
// the statuses and answers the scripts return. The Go side reads these
// declarations; the Lua side gets them from lua/status.lua and
// lua/layout.lua, which LuaStatuses and Lua generate from them (go
// generate in redisgraph; a test checks that the files are current), so
// that the two cannot disagree.
package layout

import (
	"slices"
	"strconv"

	fg "github.com/followgraph/followgraph"
)

// Version is the version of the layout: a deployment's Redis records the
// one it was written with (<prefix>:layout), and a node refuses another.
// Version 2 splits big lists into chunks (Groups); a graph in version 1
// is moved to it by a rebuild into a new prefix.
const Version = 2

// Key is the suffix of one of a user's keys, <prefix>:{<id>}:<Key>.
type Key string

// The keys of a user. Each kind of edge is kept, each way, in a sorted set
// of the other users scored by the time the edge was made, with a hash of
// the versions that the score does not say (see Side).
const (
	Out         Key = "out" // whom the user follows
	OutVersions Key = "ov"
	In          Key = "in" // who follows the user
	InVersions  Key = "iv"
	BlockOut    Key = "bo" // whom the user blocks
	BlockOutV   Key = "bov"
	BlockIn     Key = "bi" // who blocks the user
	BlockInV    Key = "biv"
	MuteOut     Key = "mo" // whom the user mutes
	MuteOutV    Key = "mov"
	MuteExpiry  Key = "mx" // the mutes' expiries (ms), a hash
	ReqOut      Key = "ro" // the user's pending follow requests
	ReqOutV     Key = "rov"
	ReqIn       Key = "ri" // the requests to the user
	ReqInV      Key = "riv"
	Flags       Key = "rf" // the other users with edges of the other kinds, scored by their flags
	Counters    Key = "h"  // the counters, clock, stamp, settings and state: a hash
)

// NumUserKeys is the number of a user's keys.
const NumUserKeys = 17

// UserKeys are a user's keys in the order the scripts take them (the
// userKeys of lua/lib.lua).
var UserKeys = [NumUserKeys]Key{Out, OutVersions, In, InVersions, BlockOut, BlockOutV, BlockIn, BlockInV,
	MuteOut, MuteOutV, MuteExpiry, ReqOut, ReqOutV, ReqIn, ReqInV, Flags, Counters}

// A Group is keys of a user split into chunks together, by the same rule,
// once one of them holds MaxKeyMembers entries: the sorted set and
// versions hash of a side (and the mutes' expiries with the mutes), and
// the flags set alone. Chunk 0 of a key is the key itself; chunk j ≥ 1 is
// <key>:<j> (ChunkKey), in the same slot. The group's field of Counters
// holds its number of chunks (none: 1), and GenField counts every split of
// any of the user's groups, so that a read that assumed a number of
// chunks can check that it still holds (package lists).
//
// A member m of a group of n chunks is in chunk ChunkOf(MemberHash(m), n):
// linear hashing, so that a split moves the entries of one chunk only.
// Groups never merge: a side's entries (live edges and tombstones) never
// fall in number.
type Group struct {
	Name  string // the side's code, or "rf"
	Keys  []Key  // the keys split together
	Field string // the field of Counters holding the number of chunks
}

// Groups are the groups of a user's keys: one per side, and the flags.
var Groups = func() (gs [NumGroups]Group) {
	for i, s := range Sides {
		keys := []Key{s.Set, s.Versions}
		if s.Set == MuteOut {
			keys = append(keys, MuteExpiry)
		}
		gs[i] = Group{Name: s.Code, Keys: keys, Field: "k" + s.Code}
	}
	gs[len(Sides)] = Group{Name: "rf", Keys: []Key{Flags}, Field: "krf"}
	return gs
}()

// NumGroups is the number of Groups.
const NumGroups = len(Sides) + 1

// GenField is the field of Counters that every split of one of the
// user's groups increments.
const GenField = "ng"

// DefaultMaxKeyMembers is the most entries a key of a user holds by
// default: past it, its group is split into more chunks.
const DefaultMaxKeyMembers = 10_000

// IsHash reports whether key k of a user is a hash (the others are sorted
// sets).
func IsHash(k Key) bool {
	switch k {
	case OutVersions, InVersions, BlockOutV, BlockInV, MuteOutV, MuteExpiry, ReqOutV, ReqInV, Counters:
		return true
	}
	return false
}

// MemberHash is the hash of a member (an id, 8 bytes big-endian) that
// places it in a chunk: a polynomial of its bytes modulo 2^31-1, which the
// scripts compute the same way in Lua's doubles (lua/chunks.lua).
func MemberHash(id uint64) uint32 {
	var h uint64
	for i := 7; i >= 0; i-- {
		h = (h*31 + id>>(8*i)&0xff) % 2147483647
	}
	return uint32(h)
}

// ChunkOf returns the chunk, of n, of a member of hash h: h modulo the
// power of two at least n, or, for a chunk not made yet, modulo half of it.
func ChunkOf(h uint32, n int) int {
	if n <= 1 {
		return 0
	}
	lo := 1
	for lo*2 <= n {
		lo *= 2
	}
	c := int(h % uint32(2*lo))
	if c >= n {
		c = int(h % uint32(lo))
	}
	return c
}

// ChunkKey returns the suffix of chunk j of key k.
func ChunkKey(k Key, j int) string {
	if j == 0 {
		return string(k)
	}
	return string(k) + ":" + strconv.Itoa(j)
}

// Side is the edges of one kind one way, as a user keeps them.
type Side struct {
	Name     string  // as reports name it: the list's ("following", "followers", …)
	Code     string  // the scripts' name of the side: the kind's letter, then o (out) or i (in)
	Kind     fg.Kind // its edges' kind
	In       bool    // the edges x → user (false: user → x)
	Set      Key     // the sorted set
	Versions Key     // the versions hash
	Counter  string  // the field of Counters that counts it
	Flag     int     // its bit in Flags (0: follows, which have none)
	// Empty is the field of Counters that is "1" while Versions is known
	// to be empty (follows out only; lua/change.lua).
	Empty string
}

// Other returns the code of the side that holds the same edges at their
// other end (fo for fi).
func (s Side) Other() string {
	if s.In {
		return s.Code[:1] + "o"
	}
	return s.Code[:1] + "i"
}

// Sides are the sides of a user's edges; mutes are kept on the muter's
// side only.
var Sides = [...]Side{
	{Name: fg.ListFollowing, Code: "fo", Kind: fg.KindFollow, Set: Out, Versions: OutVersions, Counter: "nout", Empty: FieldEmpty},
	{Name: fg.ListFollowers, Code: "fi", Kind: fg.KindFollow, In: true, Set: In, Versions: InVersions, Counter: "nin"},
	{Name: fg.ListBlocks, Code: "bo", Kind: fg.KindBlock, Set: BlockOut, Versions: BlockOutV, Counter: "nbo", Flag: FlagBlocking},
	{Name: "blocked_by", Code: "bi", Kind: fg.KindBlock, In: true, Set: BlockIn, Versions: BlockInV, Counter: "nbi", Flag: FlagBlockedBy},
	{Name: fg.ListMutes, Code: "mo", Kind: fg.KindMute, Set: MuteOut, Versions: MuteOutV, Counter: "nmo", Flag: FlagMuting},
	{Name: "requests", Code: "ro", Kind: fg.KindRequest, Set: ReqOut, Versions: ReqOutV, Counter: "nro", Flag: FlagRequested},
	{Name: fg.ListFollowRequests, Code: "ri", Kind: fg.KindRequest, In: true, Set: ReqIn, Versions: ReqInV, Counter: "nri", Flag: FlagRequestedBy},
}

// The sides by name, as Go code names them.
var (
	Following  = side(fg.KindFollow, false)  // whom the user follows: out, ov, nout
	Followers  = side(fg.KindFollow, true)   // who follows the user: in, iv, nin
	Blocks     = side(fg.KindBlock, false)   // whom the user blocks: bo, bov, nbo
	BlockedBy  = side(fg.KindBlock, true)    // who blocks the user: bi, biv, nbi
	Mutes      = side(fg.KindMute, false)    // whom the user mutes: mo, mov (and mx), nmo
	Requests   = side(fg.KindRequest, false) // the user's pending follow requests: ro, rov, nro
	RequestsIn = side(fg.KindRequest, true)  // the pending follow requests to the user: ri, riv, nri
)

// Private is the user's private setting (fields p and pv of Counters)
// where the scripts take a side code (PrivateCode): no set of its own.
var Private = Side{Name: "private", Code: PrivateCode, Kind: fg.KindPrivate}

// side returns the side of kind, into the user when in.
func side(kind fg.Kind, in bool) Side {
	s, ok := SideOfKind(kind, in)
	if !ok {
		panic("layout: no side of " + kind.String())
	}
	return s
}

// String returns the side's name.
func (s Side) String() string { return s.Name }

// SideOf returns the side of code, and whether there is one.
func SideOf(code string) (Side, bool) {
	for _, s := range Sides {
		if s.Code == code {
			return s, true
		}
	}
	return Side{}, false
}

// SideOfKind returns the side of kind's edges out of (in false) or into
// (in true) a user, and whether there is one.
func SideOfKind(kind fg.Kind, in bool) (Side, bool) {
	for _, s := range Sides {
		if s.Kind == kind && s.In == in {
			return s, true
		}
	}
	return Side{}, false
}

// The flags of the other kinds between a user and another: the bits of
// the other's score in the user's Flags set, what Relations reads in one
// ZMSCORE.
const (
	FlagBlocking    = 1 << iota // the user blocks the other
	FlagBlockedBy               // the other blocks the user
	FlagMuting                  // the user mutes the other (expired or not: see MuteExpiry)
	FlagRequested               // the user asked to follow the other
	FlagRequestedBy             // the other asked to follow the user
)

// Letters are the kinds' letters in the scripts' side codes and effects.
var Letters = map[fg.Kind]string{fg.KindFollow: "f", fg.KindBlock: "b", fg.KindMute: "m", fg.KindRequest: "r", fg.KindPrivate: "p", fg.KindState: "s"}

// Status is what a write script returns first.
type Status int64

// The statuses, by the names the scripts give them.
const (
	None           Status = 0  // nothing to change: the edge is in the op's state already
	Changed        Status = 1  // changed, as the event in the outbox says
	Limit          Status = -1 // refused: the follower follows the maximum
	Full           Status = -2 // refused: the outbox stream is at its bound
	Lost           Status = -3 // refused: the outbox stream is gone, so Redis lost its data
	Rate           Status = -4 // refused: the user is over its write rate
	Blocked        Status = -5 // refused: one of the two blocks the other
	NoRequest      Status = -6 // an approval found no request
	Slow           Status = -7 // a change for lua/edge.lua (change.lua only)
	UserInactive   Status = -8 // refused: the user who writes is not active
	TargetInactive Status = -9 // refused: the other user is not active, or is deleted
)

// Statuses are the statuses with their names in the scripts, for
// lua/status.lua.
var Statuses = [...]struct {
	Name string
	Status
}{
	{"NONE", None}, {"CHANGED", Changed}, {"LIMIT", Limit}, {"FULL", Full}, {"LOST", Lost}, {"RATE", Rate},
	{"BLOCKED", Blocked}, {"NOREQUEST", NoRequest}, {"SLOW", Slow}, {"USER_INACTIVE", UserInactive},
	{"TARGET_INACTIVE", TargetInactive},
}

// Refuse is what lua/effects.lua refuses (its ARGV 2).
type Refuse string

// The modes of lua/effects.lua.
const (
	RefuseNothing  Refuse = "0" // Apply: the log holds what was decided
	RefuseBlocks   Refuse = "1" // a follow or request between users one of whom blocks the other
	RefuseInactive Refuse = "2" // that, and a follow or request of a user who is not active
)

// PairAnswer is what lua/pairside.lua answers for a counterpart's side of
// an account-state job's edge, and what lua/archive.lua takes of it.
type PairAnswer int64

// The answers of lua/pairside.lua.
const (
	PairNewer PairAnswer = 0 // the side has a newer change of the edge: the user's side leaves it
	PairDone  PairAnswer = 1 // done
	PairWait  PairAnswer = 2 // show: the counterpart is not active either, so the edge stays hidden for its own job
	PairEnded PairAnswer = 3 // show: the counterpart is deleted, and its side of the edge is ended
)

// Steps are the steps of an account-state job (lua/archive.lua,
// lua/pairside.lua).
const (
	StepHide = "hide" // a hidden user's shown edges out of sight, both sides
	StepShow = "show" // an active user's hidden edges back, with their versions
	StepDrop = "drop" // a deleted user's hidden edges ended, both sides
)

// GroupOf returns the group of key k, and whether it has one (Counters
// has none).
func GroupOf(k Key) (Group, bool) {
	for _, g := range Groups {
		if slices.Contains(g.Keys, k) {
			return g, true
		}
	}
	return Group{}, false
}

// Opposite returns the side that holds the same edges at their other end
// (fi for fo), and whether there is one (mutes have none).
func (s Side) Opposite() (Side, bool) { return SideOf(s.Other()) }
