package scripts

import (
	"github.com/redis/rueidis"

	"github.com/followgraph/followgraph/redisgraph/internal/layout"
)

// Each script's keys and arguments are a struct here: its fields, in
// order, are KEYS and ARGV, and the script reads each by the name of its
// field in capitals with K_ or A_ in front (Out → K_OUT, MaxFollowing →
// A_MAX_FOLLOWING), which the script's header declares (header.go). An
// array field is as many values from its index on (K_USER is the first of
// a user's keys); a slice field, last, is all that follows; an embedded
// struct's fields come in its place. Trailing
// fields left empty are not sent: the keys of a second user, say. Each
// struct's list gives its fields in order (TestCallLists checks it).

// UserKeys are a user's keys in the order of layout.UserKeys.
type UserKeys = [layout.NumUserKeys]string

// ChangeKeys are lua/change.lua's: the user's side, and on a standalone
// Redis the target's (Tin, Tiv, Th).
type ChangeKeys struct{ Out, Ov, H, Outbox, Rf, Tin, Tiv, Th string }

func (k ChangeKeys) list() []string {
	return trim([]string{k.Out, k.Ov, k.H, k.Outbox, k.Rf, k.Tin, k.Tiv, k.Th})
}

// ChangeArgs are lua/change.lua's (and, from Op to Region, lua/edge.lua's).
type ChangeArgs struct {
	Op, Member, Now, MaxFollowing, OutboxLimit, User, Target, Rate, Burst, UserMember, Private, Region string
}

func (a ChangeArgs) list() []string {
	return []string{a.Op, a.Member, a.Now, a.MaxFollowing, a.OutboxLimit, a.User, a.Target, a.Rate, a.Burst, a.UserMember, a.Private,
		a.Region}
}

// EdgeKeys are lua/edge.lua's: the user's keys, the outbox stream of its
// slot, and on a standalone Redis the target's keys.
type EdgeKeys struct {
	User   UserKeys
	Outbox string
	Target UserKeys
}

func (k EdgeKeys) list() []string {
	out := append(append(make([]string, 0, 2*layout.NumUserKeys+1), k.User[:]...), k.Outbox)
	return trim(append(out, k.Target[:]...))
}

// EdgeArgs are lua/edge.lua's: ChangeArgs (whose Private may be "": the
// script reads it), then a mute's duration in ms ("0": none) and an
// undo's kind letter, version and direction.
type EdgeArgs struct {
	ChangeArgs
	Mute, UndoKind, UndoVersion, UndoDir string
}

func (a EdgeArgs) list() []string {
	return append(a.ChangeArgs.list(), a.Mute, a.UndoKind, a.UndoVersion, a.UndoDir)
}

// EffectsKeys are lua/effects.lua's: one user's keys, or two users'.
type EffectsKeys struct{ User, Other UserKeys }

func (k EffectsKeys) list() []string {
	return trim(append(append(make([]string, 0, 2*layout.NumUserKeys), k.User[:]...), k.Other[:]...))
}

// EffectsArgs are lua/effects.lua's: the event's version, what to refuse
// (layout.Refuse), a mute's since and expiry, the event kind's letter, how
// many effects are the first user's, the deployment's tombstone horizon
// (16 hex digits), then each effect as three values (side code, other
// user's member, "1" on or "0" off).
type EffectsArgs struct {
	Version, Refuse, MuteSince, MuteExpires, Kind, FirstEffects, TombstoneHorizon string
	Effects                                                                       []string
}

func (a EffectsArgs) list() []string {
	return append([]string{a.Version, a.Refuse, a.MuteSince, a.MuteExpires, a.Kind, a.FirstEffects, a.TombstoneHorizon}, a.Effects...)
}

// PurgeKeys are lua/purge.lua's: a user's keys.
type PurgeKeys struct{ User UserKeys }

func (k PurgeKeys) list() []string { return k.User[:] }

// PurgeArgs are lua/purge.lua's: the horizon (16 hex digits), the most
// tombstones to remove, and where the user's last step stopped: the side
// (an index of layout.Sides, from 1), the chunk and the HSCAN cursor.
type PurgeArgs struct{ Below, Limit, Side, Chunk, Cursor string }

func (a PurgeArgs) list() []string { return []string{a.Below, a.Limit, a.Side, a.Chunk, a.Cursor} }

// RaiseKeys and RaiseArgs are lua/raise.lua's: the key of the
// deployment's tombstone horizon, and the version to raise it to.
type (
	RaiseKeys struct{ Horizon string }
	RaiseArgs struct{ Version string }
)

func (k RaiseKeys) list() []string { return []string{k.Horizon} }
func (a RaiseArgs) list() []string { return []string{a.Version} }

// TiesKeys and TiesArgs are lua/ties.lua's.
type (
	TiesKeys struct{ Set string }
	TiesArgs struct{ N, Ms, ID string }
)

func (k TiesKeys) list() []string { return []string{k.Set} }
func (a TiesArgs) list() []string { return []string{a.N, a.Ms, a.ID} }

// BulkKeys are lua/bulk.lua's: a side's sorted set and versions hash
// (chunk 0), and the user's counters hash.
type BulkKeys struct{ Set, Versions, H string }

func (k BulkKeys) list() []string { return []string{k.Set, k.Versions, k.H} }

// BulkArgs are lua/bulk.lua's: the side's counter, a repair's horizon
// ("" for a rebuild), the version the clock must reach ("": none), the
// sizes of the four lists, the edges the side will hold (a rebuild's
// first call, else "0"), "1" to recount, the chunk hint, then the lists.
type BulkArgs struct {
	Counter, Horizon, Clock, NumLive, NumCounted, NumOff, NumNone, Total, Recount, Chunk string
	Lists                                                                                []string
}

func (a BulkArgs) list() []string {
	return append([]string{a.Counter, a.Horizon, a.Clock, a.NumLive, a.NumCounted, a.NumOff, a.NumNone, a.Total, a.Recount, a.Chunk},
		a.Lists...)
}

// CensusKeys are lua/census.lua's: the counters hash, then the sorted
// set of each side, in layout.Sides' order.
type CensusKeys struct {
	H    string
	Sets [len(layout.Sides)]string
}

func (k CensusKeys) list() []string { return append([]string{k.H}, k.Sets[:]...) }

// LinksKeys and LinksArgs are lua/links.lua's: the user's keys; the
// horizon, the number of edges, then six values an edge and the members
// whose flags to set.
type (
	LinksKeys struct{ User UserKeys }
	LinksArgs struct {
		Horizon, N string
		Edges      []string
	}
)

func (k LinksKeys) list() []string { return k.User[:] }
func (a LinksArgs) list() []string { return append([]string{a.Horizon, a.N}, a.Edges...) }

// ArchiveKeys are lua/archive.lua's: the user's side (sorted set,
// versions hash), counters hash and flags, then, on a standalone Redis,
// those four of each counterpart.
type ArchiveKeys struct {
	Set, Versions, H, Rf string
	Counterparts         []string
}

func (k ArchiveKeys) list() []string {
	return append([]string{k.Set, k.Versions, k.H, k.Rf}, k.Counterparts...)
}

// ArchiveArgs are lua/archive.lua's: the step, the user's side code and
// the counterparts', the user's member, then the counterparts' members
// (and on a Cluster their answers).
type ArchiveArgs struct {
	Step, Mine, Theirs, UserMember string
	Members                        []string
}

func (a ArchiveArgs) list() []string {
	return append([]string{a.Step, a.Mine, a.Theirs, a.UserMember}, a.Members...)
}

// PairSideKeys and PairSideArgs are lua/pairside.lua's.
type (
	PairSideKeys struct{ Set, Versions, H, Rf string }
	PairSideArgs struct{ Step, Code, Member, Version string }
)

func (k PairSideKeys) list() []string { return []string{k.Set, k.Versions, k.H, k.Rf} }
func (a PairSideArgs) list() []string { return []string{a.Step, a.Code, a.Member, a.Version} }

// StateKeys and StateArgs are lua/state.lua's.
type (
	StateKeys struct{ H, Outbox, Jobs string }
	StateArgs struct{ State, Now, OutboxLimit, User, Region string }
)

func (k StateKeys) list() []string { return []string{k.H, k.Outbox, k.Jobs} }
func (a StateArgs) list() []string { return []string{a.State, a.Now, a.OutboxLimit, a.User, a.Region} }

// ApplyStateKeys and ApplyStateArgs are lua/applystate.lua's.
type (
	ApplyStateKeys struct{ H, Jobs string }
	ApplyStateArgs struct{ State, Version, User string }
)

func (k ApplyStateKeys) list() []string { return []string{k.H, k.Jobs} }
func (a ApplyStateArgs) list() []string { return []string{a.State, a.Version, a.User} }

// JobDoneKeys and JobDoneArgs are lua/jobdone.lua's.
type (
	JobDoneKeys struct{ H, Jobs string }
	JobDoneArgs struct{ Version, User string }
)

func (k JobDoneKeys) list() []string { return []string{k.H, k.Jobs} }
func (a JobDoneArgs) list() []string { return []string{a.Version, a.User} }

// GuardKeys are lua/guard.lua's.
type GuardKeys struct{ Marker string }

func (k GuardKeys) list() []string { return []string{k.Marker} }

// CheckpointKeys and CheckpointArgs are lua/checkpoint.lua's.
type (
	CheckpointKeys struct{ Checkpoint string }
	CheckpointArgs struct{ Seq string }
)

func (k CheckpointKeys) list() []string { return []string{k.Checkpoint} }
func (a CheckpointArgs) list() []string { return []string{a.Seq} }

// MarkerKeys and MarkerArgs are those of the scripts that set a slot's
// graph marker: lua/remark.lua, lua/createstream.lua, lua/markintact.lua.
type (
	MarkerKeys struct{ Stream, Marker string }
	MarkerArgs struct{ Epoch string }
)

func (k MarkerKeys) list() []string { return []string{k.Stream, k.Marker} }
func (a MarkerArgs) list() []string { return []string{a.Epoch} }

// LeaseKeys and LeaseArgs are lua/lease.lua's (and, but TTL,
// lua/release.lua's).
type (
	LeaseKeys struct{ Lease string }
	LeaseArgs struct{ Owner, TTL string }
)

func (k LeaseKeys) list() []string { return []string{k.Lease} }
func (a LeaseArgs) list() []string { return trim([]string{a.Owner, a.TTL}) }

// NoArgs are the arguments of a script that takes none.
type NoArgs struct{}

func (NoArgs) list() []string { return nil }

// lister is a script's keys or arguments.
type lister interface{ list() []string }

// trim returns vs without its trailing empty values: the fields a call
// leaves out.
func trim(vs []string) []string {
	n := len(vs)
	for n > 0 && vs[n-1] == "" {
		n--
	}
	return vs[:n]
}

// A Def is a script with its keys' and arguments' types.
type Def[K, A lister] struct{ *Script }

// Call returns the call of the script with keys k and arguments a.
func (d Def[K, A]) Call(k K, a A) Call {
	return Call{d.Script, rueidis.LuaExec{Keys: k.list(), Args: a.list()}}
}

// Call is one call of a script.
type Call struct {
	s *Script
	rueidis.LuaExec
}
