// Package scripts holds redisgraph's Lua scripts (lua/, one file a script
// and the parts they share) and runs them: EVALSHA, pipelined, on a
// client or on one node, loading what Redis lacks, except the vouched
// scripts, which only Vouch loads (docs/design/recovery.md).
package scripts

import (
	"context"
	"crypto/sha1"
	_ "embed"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/redis/rueidis"

	"github.com/followgraph/followgraph/redisgraph/internal/errs"
	"github.com/followgraph/followgraph/redisgraph/internal/keyspace"
)

//go:generate go run ./gen lua/layout.lua

var (
	//go:embed lua/layout.lua
	luaLayout string
	//go:embed lua/version.lua
	luaVersion string
	//go:embed lua/chunks.lua
	luaChunks string
	//go:embed lua/lib.lua
	luaLib string
	//go:embed lua/change.lua
	luaChange string
	//go:embed lua/live.lua
	luaLive string
	//go:embed lua/edge.lua
	luaEdge string
	//go:embed lua/effects.lua
	luaEffects string
	//go:embed lua/ties.lua
	luaTies string
	//go:embed lua/bulk.lua
	luaBulk string
	//go:embed lua/census.lua
	luaCensus string
	//go:embed lua/links.lua
	luaLinks string
	//go:embed lua/archive.lua
	luaArchive string
	//go:embed lua/pairside.lua
	luaPairSide string
	//go:embed lua/state.lua
	luaState string
	//go:embed lua/applystate.lua
	luaApplyState string
	//go:embed lua/guard.lua
	luaGuard string
	//go:embed lua/checkpoint.lua
	luaCheckpoint string
	//go:embed lua/remark.lua
	luaRemark string
	//go:embed lua/createstream.lua
	luaCreateStream string
	//go:embed lua/markintact.lua
	luaMarkIntact string
	//go:embed lua/lease.lua
	luaLease string
	//go:embed lua/release.lua
	luaRelease string
	//go:embed lua/jobdone.lua
	luaJobDone string
	//go:embed lua/purge.lua
	luaPurge string
	//go:embed lua/raise.lua
	luaRaise string
)

// The scripts. Those that read the layout's tables (sides, keys, flags)
// take lua/layout.lua, which is made again at every call of a script, so
// the plain follow's goes without. The write scripts share
// lua/version.lua, all but the plain follow's lua/lib.lua, and the live
// ones lua/live.lua; each file says what it takes and returns.
//
// The vouched ones decide on what a server holds (a live write, a second
// step that may refuse, a job's step) or vouch for it (the guard of every
// read): they run only on a server whose data the deployment has checked
// (docs/design/recovery.md), so they are never loaded by running them.
var (
	Change       = define[ChangeKeys, ChangeArgs]("change", luaVersion+luaChunks+luaLive+luaChange, vouched|sized) // a live follow or unfollow
	Edge         = define[EdgeKeys, EdgeArgs]("edge", withLib(luaLive+luaEdge), vouched|sized)                     // a live change of any kind
	Second       = define[EffectsKeys, EffectsArgs]("second", withLib(luaEffects), vouched|sized)                  // an event's effects that may be refused: second steps, settling
	Effects      = define[EffectsKeys, EffectsArgs]("effects", withLib(luaEffects), sized)                         // an event's effects, refusing nothing: Apply
	Ties         = define[TiesKeys, TiesArgs]("ties", luaTies, readOnly)                                           // the entries after a cursor in its millisecond
	Bulk         = define[BulkKeys, BulkArgs]("bulk", withLib(luaBulk), sized)                                     // many edges of one side: Rebuild, repairs
	Census       = define[CensusKeys, NoArgs]("census", headed(luaLayout+luaChunks, luaCensus), readOnly)          // a user's counters and set sizes, for Reconcile
	Links        = define[LinksKeys, LinksArgs]("links", withLib(luaLinks), sized)                                 // Reconcile's repairs of the other kinds
	Archive      = define[ArchiveKeys, ArchiveArgs]("archive", withLib(luaArchive), vouched|sized)                 // a batch of an account-state job's edges
	PairSide     = define[PairSideKeys, PairSideArgs]("pairside", withLib(luaPairSide), sized)                     // one counterpart's side of a job's edge, on a Cluster
	State        = define[StateKeys, StateArgs]("state", luaVersion+luaState, vouched)                             // a live change of a user's account state
	ApplyState   = define[ApplyStateKeys, ApplyStateArgs]("applystate", withLib(luaApplyState), sized)             // a replayed one
	JobDone      = define[JobDoneKeys, JobDoneArgs]("jobdone", luaJobDone, vouched)                                // a user's job done
	Purge        = define[PurgeKeys, PurgeArgs]("purge", withLib(luaPurge), vouched|sized)                         // a step of removing a user's old tombstones
	Raise        = define[RaiseKeys, RaiseArgs]("raise", luaVersion+luaRaise, 0)                                   // the deployment's tombstone horizon raised
	Guard        = define[GuardKeys, NoArgs]("guard", luaGuard, vouched|readOnly)                                  // every read's check of a marker
	Checkpoint   = define[CheckpointKeys, CheckpointArgs]("checkpoint", luaCheckpoint, vouched)                    // a server's checkpoint raised
	Remark       = define[MarkerKeys, MarkerArgs]("remark", luaRemark, 0)                                          // a marker given a new epoch
	CreateStream = define[MarkerKeys, MarkerArgs]("createstream", luaCreateStream, 0)                              // an outbox stream and its marker, made
	MarkIntact   = define[MarkerKeys, MarkerArgs]("markintact", luaMarkIntact, 0)                                  // a marker given to a graph without
	Lease        = define[LeaseKeys, LeaseArgs]("lease", luaLease, 0)                                              // a lease taken or renewed
	Release      = define[LeaseKeys, LeaseArgs]("release", luaRelease, 0)                                          // a lease given up
)

// withLib returns src after the layout's tables, lua/version.lua,
// lua/chunks.lua and lua/lib.lua.
func withLib(src string) string { return luaLayout + luaVersion + luaChunks + luaLib + src }

// What a script is, besides its source.
const (
	readOnly = 1 << iota // run by EVALSHA_RO
	vouched              // loaded by Vouch only
	sized                // splits chunks: headed by the bound of a key (SizeHeader)
)

// every lists the scripts.
var every = []*Script{Change.Script, Edge.Script, Second.Script, Effects.Script, Ties.Script, Bulk.Script, Census.Script,
	Links.Script, Archive.Script, PairSide.Script, State.Script, ApplyState.Script, JobDone.Script, Purge.Script, Raise.Script, Guard.Script,
	Checkpoint.Script, Remark.Script, CreateStream.Script, MarkIntact.Script, Lease.Script, Release.Script}

// SizeHeader returns the line that gives the scripts that split chunks
// the most entries a chunk holds, and the size at which they split one:
// seven eighths of it, so that a chunk whose turn to split comes after
// others' still has room (lib.lua's fit).
func SizeHeader(bound int) string {
	return fmt.Sprintf("local MAXKEY, SPLIT_AT = %d, %d\n", bound, SplitAt(bound))
}

// SplitAt is the size at which the scripts split a chunk of keys that
// hold at most bound entries.
func SplitAt(bound int) int { return max(1, bound*7/8) }

// Script is a Lua script run by EVALSHA (EVALSHA_RO when read-only). One
// that is not vouched is run by EVAL when Redis does not have it (after a
// restart or a failover), which loads it; a vouched one is not, and its
// NOSCRIPT is the sign of a server not vouched for.
type Script struct {
	name  string // its file's, without .lua (second: effects.lua, vouched)
	src   string
	sha   string
	flags int
	lua   *rueidis.Lua // not vouched only
}

func newScript(name, src string, flags int) *Script {
	sum := sha1.Sum([]byte(src))
	s := &Script{name: name, src: src, sha: hex.EncodeToString(sum[:]), flags: flags}
	switch {
	case flags&vouched != 0:
	case flags&readOnly != 0:
		s.lua = rueidis.NewLuaScriptReadOnly(src)
	default:
		s.lua = rueidis.NewLuaScript(src)
	}
	return s
}

// headed returns src with header first, after src's shebang line, which
// must stay first.
func headed(header, src string) string {
	if strings.HasPrefix(src, "#!") {
		line, rest, _ := strings.Cut(src, "\n")
		return line + "\n" + header + rest
	}
	return header + src
}

// Source returns the script's source as it is sent, for the default
// bound of a key when it splits chunks (bound 0) or for bound.
func (s *Script) Source(bound int) string {
	if s.flags&sized != 0 && bound > 0 {
		return headed(SizeHeader(bound), s.src)
	}
	return s.src
}

// Vouched reports whether the script is vouched.
func (s *Script) Vouched() bool { return s.flags&vouched != 0 }

// headedBy returns s with its source headed by header.
func (s *Script) headedBy(header string) *Script {
	return newScript(s.name, headed(header, s.src), s.flags)
}

// Lookup returns the script of name (Change's is "change").
func Lookup(name string) (*Script, bool) {
	for _, s := range every {
		if s.name == name {
			return s, true
		}
	}
	return nil, false
}

// cmd returns the EVALSHA command of the script on c, for a pipeline.
func (s *Script) cmd(c rueidis.Client, keys, args []string) rueidis.Completed {
	if s.flags&readOnly != 0 {
		return c.B().EvalshaRo().Sha1(s.sha).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
	}
	return c.B().Evalsha().Sha1(s.sha).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
}

// evalCmd returns the EVAL command of the script (EVAL_RO when
// read-only), which loads it into Redis.
func (s *Script) evalCmd(c rueidis.Client, keys, args []string) rueidis.Completed {
	if s.flags&readOnly != 0 {
		return c.B().EvalRo().Script(s.src).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
	}
	return c.B().Eval().Script(s.src).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
}

// exec runs the script once on c.
func (s *Script) exec(ctx context.Context, c rueidis.Client, keys, args []string) rueidis.RedisResult {
	if s.flags&vouched != 0 {
		return c.Do(ctx, s.cmd(c, keys, args))
	}
	return s.lua.Exec(ctx, c, keys, args)
}

// fix returns r, the result of cmd(c, keys, args), or, when r says Redis
// does not have the script (and it is not vouched), the result of running
// it again, which loads it.
func (s *Script) fix(ctx context.Context, c rueidis.Client, r rueidis.RedisResult, keys, args []string) rueidis.RedisResult {
	if s.flags&vouched == 0 && errs.IsNoScript(r.Error()) {
		return s.exec(ctx, c, keys, args)
	}
	return r
}

// Runner runs the scripts on a client as one Graph does: the vouched
// ones in the version of its scope (so that deployments sharing a Redis
// vouch for their own data only), and those that split chunks headed by
// its bound of a key.
type Runner struct {
	c           rueidis.Client
	scripts     map[*Script]*Script
	onUnvouched func(slot uint16) // nil: none
}

// NewRunner returns the runner of the scripts on c, for the vouched
// scope and the bound of a key. onUnvouched, if not nil, is called with
// the slot of each call of a vouched script that found it missing.
func NewRunner(c rueidis.Client, scope string, bound int, onUnvouched func(slot uint16)) *Runner {
	r := &Runner{c: c, scripts: map[*Script]*Script{}, onUnvouched: onUnvouched}
	for _, s := range every {
		v := s
		if s.flags&sized != 0 {
			v = v.headedBy(SizeHeader(bound))
		}
		if s.flags&vouched != 0 {
			v = v.headedBy("-- followgraph " + scope + "\n")
		}
		r.scripts[s] = v
	}
	return r
}

// On returns the runner of the same scripts on c (a node of the
// client's, say), which reports nothing unvouched.
func (r *Runner) On(c rueidis.Client) *Runner {
	return &Runner{c: c, scripts: r.scripts}
}

// version returns the script s as this runner runs it.
func (r *Runner) version(s *Script) *Script { return r.scripts[s] }

// SHA returns the digest of s as this runner runs it.
func (r *Runner) SHA(s *Script) string { return r.version(s).sha }

// Source returns the source of s as this runner runs it.
func (r *Runner) Source(s *Script) string { return r.version(s).src }

// Cmd returns the EVALSHA of call, for a pipeline of the runner's
// client; Fix runs it again should it find the script missing.
func (r *Runner) Cmd(call Call) rueidis.Completed {
	return r.version(call.s).cmd(r.c, call.Keys, call.Args)
}

// EvalCmd returns the EVAL of call, which loads its script.
func (r *Runner) EvalCmd(call Call) rueidis.Completed {
	return r.version(call.s).evalCmd(r.c, call.Keys, call.Args)
}

// Fix returns res, the result of Cmd(call), or, when it says Redis lacks
// the script and the script is not vouched, the result of running it
// again, which loads it.
func (r *Runner) Fix(ctx context.Context, call Call, res rueidis.RedisResult) rueidis.RedisResult {
	return r.version(call.s).fix(ctx, r.c, res, call.Keys, call.Args)
}

// Exec runs call. A vouched script that the server of its keys' slot
// lacks is reported (onUnvouched), and the result's error is Redis's
// NOSCRIPT, which errs.Wrap turns into errs.Unvouched.
func (r *Runner) Exec(ctx context.Context, call Call) rueidis.RedisResult {
	v := r.version(call.s)
	res := v.exec(ctx, r.c, call.Keys, call.Args)
	if v.flags&vouched != 0 && len(call.Keys) > 0 && errs.IsNoScript(res.Error()) {
		r.unvouched(call.Keys[0])
	}
	return res
}

// ExecMulti is Exec of each of calls, pipelined; the results are in
// order. Calls that find a script that is not vouched missing are run
// again one by one, which loads it.
func (r *Runner) ExecMulti(ctx context.Context, calls []Call) []rueidis.RedisResult {
	cmds := make(rueidis.Commands, len(calls))
	for i, call := range calls {
		cmds[i] = r.Cmd(call)
	}
	res := r.c.DoMulti(ctx, cmds...)
	for i, x := range res {
		v := r.version(calls[i].s)
		res[i] = v.fix(ctx, r.c, x, calls[i].Keys, calls[i].Args)
		if v.flags&vouched != 0 && len(calls[i].Keys) > 0 && errs.IsNoScript(res[i].Error()) {
			r.unvouched(calls[i].Keys[0])
		}
	}
	return res
}

func (r *Runner) unvouched(key string) {
	if r.onUnvouched != nil {
		r.onUnvouched(keyspace.KeySlot(key))
	}
}

// Load loads every script that is not vouched into every node of the
// client that answers. A node that does not (a failed master a Cluster
// still lists, or one restarting) is skipped: such a script is also
// loaded where it is first run and found missing, so loading ahead only
// saves that first miss. It fails only when no node answers.
func (r *Runner) Load(ctx context.Context) error {
	var firstErr error
	loaded := 0
	for _, n := range r.c.Nodes() {
		err := r.load(ctx, n, false)
		if err == nil {
			loaded++
		} else if firstErr == nil {
			firstErr = err
		}
	}
	if loaded == 0 {
		return firstErr
	}
	return nil
}

// LoadAll loads every script into node n, the vouched ones last.
func (r *Runner) LoadAll(ctx context.Context, n rueidis.Client) error {
	if err := r.load(ctx, n, false); err != nil {
		return err
	}
	return r.load(ctx, n, true)
}

// load loads into n the scripts that are vouched, or those that are not.
func (r *Runner) load(ctx context.Context, n rueidis.Client, vouchedOnes bool) error {
	for _, s := range every {
		if s.Vouched() != vouchedOnes {
			continue
		}
		if err := n.Do(ctx, n.B().ScriptLoad().Script(r.version(s).src).Build()).Error(); err != nil {
			return err
		}
	}
	return nil
}
