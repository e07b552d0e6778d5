package redisgraph

import (
	"context"
	"crypto/sha1"
	_ "embed"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/redis/rueidis"
)

//go:generate go run ./internal/layout/gen lua/status.lua lua/layout.lua

var (
	//go:embed lua/status.lua
	luaStatus string
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
)

// The scripts. Every script starts with lua/status.lua (newScript adds
// it); those that read the layout's tables (sides, keys, flags) also take
// lua/layout.lua, which is made again at every call, so the plain follow's
// goes without. The write scripts share lua/version.lua, all but the plain
// follow's lua/lib.lua, and the live ones lua/live.lua; each file says
// what it takes and returns.
//
// The vouched ones decide on what a server holds (a live write, a second
// step that may refuse, a job's step) or vouch for it (the guard of every
// read): they run only on a server whose data the deployment has checked
// (see vouch.go), so they are never loaded by running them.
var (
	scriptChange     = newVouchedScript(luaVersion+luaChunks+luaLive+luaChange, false) // a live follow or unfollow
	scriptEdge       = newVouchedScript(withLib(luaLive+luaEdge), false)               // a live change of any kind
	scriptSecond     = newVouchedScript(withLib(luaEffects), false)                    // an event's effects that may be refused: second steps, settling
	scriptEffects    = newScript(withLib(luaEffects), false)                           // an event's effects, refusing nothing: Apply
	scriptTies       = newScript(luaTies, true)                                        // the entries after a cursor in its millisecond
	scriptBulk       = newScript(withLib(luaBulk), false)                              // many edges of one side: Rebuild, repairs
	scriptCensus     = newScript(headed(luaLayout+luaChunks, luaCensus), true)         // a user's counters and set sizes, for Reconcile
	scriptLinks      = newScript(withLib(luaLinks), false)                             // Reconcile's repairs of the other kinds
	scriptArchive    = newVouchedScript(withLib(luaArchive), false)                    // a batch of an account-state job's edges
	scriptPairSide   = newScript(withLib(luaPairSide), false)                          // one counterpart's side of a job's edge, on a Cluster
	scriptState      = newVouchedScript(luaVersion+luaLive+luaState, false)            // a live change of a user's account state
	scriptApplyState = newScript(withLib(luaApplyState), false)                        // a replayed one
)

// withLib returns src after the layout's tables, lua/version.lua,
// lua/chunks.lua and lua/lib.lua.
func withLib(src string) string { return luaLayout + luaVersion + luaChunks + luaLib + src }

// sized lists the scripts that split chunks (lua/chunks.lua's SPLIT_AT):
// each Graph runs them headed by its bound (maxKeyHeader).
var sized = []*script{scriptChange, scriptEdge, scriptSecond, scriptEffects, scriptBulk, scriptLinks, scriptArchive,
	scriptPairSide, scriptApplyState}

// maxKeyHeader returns the line that gives the scripts of sized the most
// entries a chunk holds, and the size at which they split one: seven
// eighths of it, so that a chunk whose turn to split comes after others'
// still has room (lib.lua's fit).
func maxKeyHeader(bound int) string {
	return fmt.Sprintf("local MAXKEY, SPLIT_AT = %d, %d\n", bound, splitAt(bound))
}

// loadedScripts are those loadScripts loads, into every node: the ones
// that are not vouched (the vouched ones are loaded by Vouch alone).
var loadedScripts = []*script{scriptEffects, scriptTies, scriptBulk, scriptCensus, scriptLinks, scriptPairSide, scriptApplyState,
	scriptCreateStream, scriptMarkIntact, scriptRemark, scriptLease, scriptRelease}

// vouchedScripts are the vouched scripts, which Vouch loads.
var vouchedScripts = []*script{scriptGuard, scriptCheckpoint, scriptChange, scriptEdge, scriptSecond, scriptArchive, scriptState, scriptJobDone}

// script is a Lua script run by EVALSHA (EVALSHA_RO when read-only). One
// that is not vouched is run by EVAL when Redis does not have it (after a
// restart or a failover), which loads it; a vouched one is not, and its
// NOSCRIPT is the sign of a server not vouched for (vouch.go).
type script struct {
	src     string
	sha     string
	ro      bool
	vouched bool
	lua     *rueidis.Lua // not vouched only
}

func newScript(src string, ro bool) *script {
	s := newVouchedScript(src, ro)
	src = s.src
	s.vouched = false
	if ro {
		s.lua = rueidis.NewLuaScriptReadOnly(src)
	} else {
		s.lua = rueidis.NewLuaScript(src)
	}
	return s
}

func newVouchedScript(src string, ro bool) *script {
	src = withStatuses(src)
	sum := sha1.Sum([]byte(src))
	return &script{src: src, sha: hex.EncodeToString(sum[:]), ro: ro, vouched: true}
}

// withStatuses returns src headed by lua/status.lua, the statuses of the
// write scripts.
func withStatuses(src string) string {
	if strings.HasPrefix(src, luaStatus) || strings.Contains(src, "\n"+luaStatus) {
		return src
	}
	return headed(luaStatus, src)
}

// withLayout returns src headed by lua/layout.lua, the layout's tables.
func withLayout(src string) string { return headed(luaLayout, src) }

// headed returns src with header first, after src's shebang line, which
// must stay first.
func headed(header, src string) string {
	if strings.HasPrefix(src, "#!") {
		line, rest, _ := strings.Cut(src, "\n")
		return line + "\n" + header + rest
	}
	return header + src
}

// forPrefix returns the vouched script s as a deployment of prefix runs
// it: its source headed by a comment naming prefix, so that deployments
// sharing a Redis vouch for their own data only.
func (s *script) forPrefix(prefix string) *script {
	return newVouchedScript(headed("-- followgraph "+prefix+"\n", s.src), s.ro)
}

// headedBy returns s with its source headed by header.
func (s *script) headedBy(header string) *script {
	if s.vouched {
		return newVouchedScript(headed(header, s.src), s.ro)
	}
	return newScript(headed(header, s.src), s.ro)
}

// graphScripts returns the scripts as g runs them: the vouched ones in
// its prefix's version (forPrefix), and those that split chunks headed by
// its bound.
func (g *Graph) graphScripts() map[*script]*script {
	m := map[*script]*script{}
	for _, s := range slices.Concat(loadedScripts, vouchedScripts) {
		v := s
		if slices.Contains(sized, s) {
			v = v.headedBy(maxKeyHeader(g.maxKey))
		}
		if s.vouched {
			v = v.forPrefix(g.scope)
		}
		m[s] = v
	}
	return m
}

// exec runs the script once.
func (s *script) exec(ctx context.Context, c rueidis.Client, keys, args []string) rueidis.RedisResult {
	if s.vouched {
		return c.Do(ctx, s.cmd(c, keys, args))
	}
	return s.lua.Exec(ctx, c, keys, args)
}

// cmd returns the EVALSHA command of the script, for a pipeline; fix runs
// it again if it found the script missing.
func (s *script) cmd(c rueidis.Client, keys, args []string) rueidis.Completed {
	if s.ro {
		return c.B().EvalshaRo().Sha1(s.sha).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
	}
	return c.B().Evalsha().Sha1(s.sha).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
}

// evalCmd returns the EVAL command of the script (EVAL_RO when read-only),
// which loads it into Redis.
func (s *script) evalCmd(c rueidis.Client, keys, args []string) rueidis.Completed {
	if s.ro {
		return c.B().EvalRo().Script(s.src).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
	}
	return c.B().Eval().Script(s.src).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
}

// fix returns r, the result of cmd(c, keys, args), or, when r says Redis
// does not have the script (and it is not vouched), the result of running
// it again, which loads it.
func (s *script) fix(ctx context.Context, c rueidis.Client, r rueidis.RedisResult, keys, args []string) rueidis.RedisResult {
	if s.vouched {
		return r
	}
	if isNoScript(r.Error()) {
		return s.exec(ctx, c, keys, args)
	}
	return r
}

// isNoScript reports whether err is Redis's NOSCRIPT.
func isNoScript(err error) bool {
	e, ok := rueidis.IsRedisErr(err)
	return ok && e.IsNoScript()
}

// execMulti runs the script once for each of calls, pipelined, and returns
// the results in order. Calls that find a script that is not vouched
// missing are run again one by one, which loads it.
func (s *script) execMulti(ctx context.Context, c rueidis.Client, calls []rueidis.LuaExec) []rueidis.RedisResult {
	cmds := make(rueidis.Commands, len(calls))
	for i, call := range calls {
		cmds[i] = s.cmd(c, call.Keys, call.Args)
	}
	res := c.DoMulti(ctx, cmds...)
	for i, r := range res {
		res[i] = s.fix(ctx, c, r, calls[i].Keys, calls[i].Args)
	}
	return res
}

// run returns the script s as this Graph runs it: a vouched script in
// the Graph's prefix's version (forPrefix), any other as it is.
func (g *Graph) run(s *script) *script {
	if v, ok := g.scripts[s]; ok {
		return v
	}
	return s
}

// exec runs s once on g's Redis. A vouched script that the server of its
// keys' slot lacks is reported (WithOnUnvouched), and the result's error
// is Redis's NOSCRIPT, which unavailable turns into errUnvouched.
func (g *Graph) exec(ctx context.Context, s *script, keys, args []string) rueidis.RedisResult {
	s = g.run(s)
	r := s.exec(ctx, g.c, keys, args)
	if s.vouched && len(keys) > 0 && isNoScript(r.Error()) {
		g.unvouched(keySlot(keys[0]))
	}
	return r
}

// execMulti is exec of each of calls, pipelined.
func (g *Graph) execMulti(ctx context.Context, s *script, calls []rueidis.LuaExec) []rueidis.RedisResult {
	s = g.run(s)
	res := s.execMulti(ctx, g.c, calls)
	if s.vouched {
		for i, r := range res {
			if len(calls[i].Keys) > 0 && isNoScript(r.Error()) {
				g.unvouched(keySlot(calls[i].Keys[0]))
			}
		}
	}
	return res
}

// loadScripts loads every script that is not vouched into every node of
// c that answers. A node that does not (a failed master a Cluster still
// lists, or one restarting) is skipped: such a script is also loaded
// where it is first run and found missing (fix), so loading ahead only
// saves that first miss. It fails only when no node answers.
func (g *Graph) loadScripts(ctx context.Context, c rueidis.Client) error {
	var firstErr error
	loaded := 0
	for _, n := range c.Nodes() {
		var err error
		for _, s := range loadedScripts {
			if err = n.Do(ctx, n.B().ScriptLoad().Script(g.run(s).src).Build()).Error(); err != nil {
				break
			}
		}
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
