package layout

import (
	"fmt"
	"strings"

	fg "github.com/followgraph/followgraph"
)

// The fields of a user's counters hash (Counters) besides the sides'
// counters (Side.Counter) and the groups' numbers of chunks (Group.Field).
const (
	FieldClock       = "clk" // the user's clock: the version of its last change, or past any version of its edges
	FieldStamp       = "st"  // the change stamp: incremented by every change of the user's keys
	FieldEmpty       = "e"   // "1" while the follows' versions hash is known to be empty (lua/change.lua)
	FieldPrivate     = "p"   // "1" while the account is private
	FieldPrivateV    = "pv"  // the version of the private setting
	FieldState       = "s"   // the account state's word (none: active, never set)
	FieldStateV      = "sv"  // the version of the account state's last change
	FieldHidden      = "nh"  // how many of the user's edges an account-state job hid
	FieldRateTokens  = "rk"  // the write rate's tokens
	FieldRateCounted = "rkt" // when they were counted (ms)
	FieldHorizon     = "hz"  // the user's tombstone horizon: tombstones below it may be gone (lua/purge.lua)
)

// The fields of an event in the outbox.
const (
	EventUser    = "u"       // the user, decimal
	EventTarget  = "t"       // the target, decimal; 0 for a setting or a state
	EventOp      = "op"      // the op's word (fg.Op.String)
	EventVersion = "v"       // the version, 16 hex digits
	EventSince   = "s"       // a mute's since (ms)
	EventExpires = "x"       // a mute's expiry (ms; 0: none)
	EventState   = "state"   // a state's word
	EventCreated = "created" // the entry that makes an empty stream, trimmed at once
)

// The live ops of lua/edge.lua that are not events' ops (fg.Op's words
// are the others).
const (
	OpApprove = "approve" // a request to the user becomes a follow
	OpRemove  = "remove"  // a follower's follow, or its request, ends
	OpUndo    = "undo"    // a change whose second step met a block is undone
)

// Hidden heads the version, in a versions hash, of an edge an
// account-state job hid.
const Hidden = "h"

// The states of an edge as lua/bulk.lua and lua/links.lua take them.
const (
	EdgeLive = "f" // on
	EdgeOff  = "u" // off: a tombstone
	EdgeNone = "n" // no record
)

// The directions of an undone edge (lua/edge.lua's undo), and of a side
// code: o for the user's outgoing edges, i for the incoming.
const (
	DirOut = "o"
	DirIn  = "i"
)

// PrivateCode is the code of the private setting where the scripts take
// a side code (lua/effects.lua, lua/links.lua).
const PrivateCode = "p"

// A Scalar is a constant the scripts share with Go: the name a script
// reads it by, and its value as a Lua literal.
type Scalar struct{ Name, Value string }

// Scalars are the constants of the layout that the scripts read by name:
// statuses, fields, words and letters. Each script declares, first, those
// it names (package scripts), so that the values are written once, here.
func Scalars() []Scalar {
	var out []Scalar
	str := func(name, v string) { out = append(out, Scalar{name, "'" + v + "'"}) }
	num := func(name string, v int64) { out = append(out, Scalar{name, fmt.Sprint(v)}) }
	for _, s := range Statuses {
		num(s.Name, int64(s.Status))
	}
	for _, f := range []struct{ name, v string }{
		{"H_CLOCK", FieldClock}, {"H_STAMP", FieldStamp}, {"H_EMPTY", FieldEmpty}, {"H_PRIVATE", FieldPrivate},
		{"H_PRIVATE_V", FieldPrivateV}, {"H_STATE", FieldState}, {"H_STATE_V", FieldStateV}, {"H_HIDDEN", FieldHidden},
		{"H_RATE_TOKENS", FieldRateTokens}, {"H_RATE_COUNTED", FieldRateCounted}, {"H_GEN", GenField}, {"H_HORIZON", FieldHorizon},
	} {
		str(f.name, f.v)
	}
	for _, s := range Sides {
		str("H_N"+strings.ToUpper(s.Code), s.Counter)
	}
	for _, g := range Groups {
		str("H_K"+strings.ToUpper(g.Name), g.Field)
	}
	for _, f := range []struct{ name, v string }{
		{"E_USER", EventUser}, {"E_TARGET", EventTarget}, {"E_OP", EventOp}, {"E_VERSION", EventVersion},
		{"E_SINCE", EventSince}, {"E_EXPIRES", EventExpires}, {"E_STATE", EventState}, {"E_CREATED", EventCreated},
	} {
		str(f.name, f.v)
	}
	for op := fg.OpFollow; op.Valid(); op++ {
		str("OP_"+strings.ToUpper(op.String()), op.String())
	}
	for _, op := range []string{OpApprove, OpRemove, OpUndo} {
		str("OP_"+strings.ToUpper(op), op)
	}
	for _, step := range []string{StepHide, StepShow, StepDrop} {
		str("STEP_"+strings.ToUpper(step), step)
	}
	for _, st := range []fg.State{fg.StateActive, fg.StateDeactivated, fg.StateSuspended, fg.StateDeleted} {
		str("STATE_"+strings.ToUpper(st.String()), st.String())
	}
	for _, k := range fg.Kinds {
		if l, ok := Letters[k.Kind]; ok {
			str("KIND_"+strings.ToUpper(k.Kind.String()), l)
		}
	}
	str("HIDDEN", Hidden)
	str("EDGE_LIVE", EdgeLive)
	str("EDGE_OFF", EdgeOff)
	str("EDGE_NONE", EdgeNone)
	str("DIR_OUT", DirOut)
	str("DIR_IN", DirIn)
	str("PRIVATE_CODE", PrivateCode)
	str("REFUSE_NOTHING", string(RefuseNothing))
	str("REFUSE_BLOCKS", string(RefuseBlocks))
	str("REFUSE_INACTIVE", string(RefuseInactive))
	num("NEWER", int64(PairNewer))
	num("DONE", int64(PairDone))
	num("WAIT", int64(PairWait))
	num("ENDED", int64(PairEnded))
	return out
}

// Checked are the values no script may write as a quoted literal: each
// has its Scalar, and a script names it by that (a test rejects a quoted
// one in any script, so that a field or a word is written once, here).
func Checked() map[string]bool {
	m := map[string]bool{}
	for _, s := range Scalars() {
		if v, ok := strings.CutPrefix(s.Value, "'"); ok && strings.ContainsAny(v, "abcdefghijklmnopqrstuvwxyz") {
			m[strings.TrimSuffix(v, "'")] = true // a word, a field or a letter; not the digits of a mode
		}
	}
	return m
}
