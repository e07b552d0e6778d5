package redisgraph

import (
	"context"
	"crypto/sha1"
	_ "embed"
	"encoding/hex"

	"github.com/redis/rueidis"
)

var (
	//go:embed lua/version.lua
	luaVersion string
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

// The scripts. The write scripts share lua/version.lua, all but the plain
// follow's lua/lib.lua, and the live ones lua/live.lua; each file says
// what it takes and returns.
var (
	scriptChange     = newScript(luaVersion+luaLive+luaChange, false)      // a live follow or unfollow
	scriptEdge       = newScript(luaVersion+luaLib+luaLive+luaEdge, false) // a live change of any kind
	scriptEffects    = newScript(luaVersion+luaLib+luaEffects, false)      // an event's effects: second steps, Apply
	scriptTies       = newScript(luaTies, true)                            // the entries after a cursor in its millisecond
	scriptBulk       = newScript(luaVersion+luaLib+luaBulk, false)         // many edges of one side: Rebuild, repairs
	scriptCensus     = newScript(luaCensus, true)                          // a user's counters and set sizes, for Reconcile
	scriptLinks      = newScript(luaVersion+luaLib+luaLinks, false)        // Reconcile's repairs of the other kinds
	scriptArchive    = newScript(luaVersion+luaArchive, false)             // a batch of an account-state job's edges
	scriptPairSide   = newScript(luaVersion+luaLib+luaPairSide, false)     // one counterpart's side of a job's edge, on a Cluster
	scriptState      = newScript(luaVersion+luaLive+luaState, false)       // a live change of a user's account state
	scriptApplyState = newScript(luaVersion+luaLib+luaApplyState, false)   // a replayed one
)

// allScripts are those loadScripts loads: these, and the small ones of
// the outbox's streams and leases (init.go, lease.go) and the jobs (jobs.go).
var allScripts = []*script{scriptChange, scriptEdge, scriptEffects, scriptTies, scriptBulk, scriptCensus, scriptLinks, scriptArchive, scriptPairSide, scriptState, scriptApplyState,
	scriptCreateStream, scriptMarkIntact, scriptLease, scriptRelease, scriptJobDone}

// script is a Lua script run by EVALSHA (EVALSHA_RO when read-only), and
// by EVAL when Redis does not have it (after a restart or a failover).
type script struct {
	src string
	sha string
	ro  bool
	lua *rueidis.Lua
}

func newScript(src string, ro bool) *script {
	sum := sha1.Sum([]byte(src))
	s := &script{src: src, sha: hex.EncodeToString(sum[:]), ro: ro}
	if ro {
		s.lua = rueidis.NewLuaScriptReadOnly(src)
	} else {
		s.lua = rueidis.NewLuaScript(src)
	}
	return s
}

// exec runs the script once.
func (s *script) exec(ctx context.Context, c rueidis.Client, keys, args []string) rueidis.RedisResult {
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
// does not have the script, the result of running it again, which loads it.
func (s *script) fix(ctx context.Context, c rueidis.Client, r rueidis.RedisResult, keys, args []string) rueidis.RedisResult {
	if err, ok := rueidis.IsRedisErr(r.Error()); ok && err.IsNoScript() {
		return s.exec(ctx, c, keys, args)
	}
	return r
}

// execMulti runs the script once for each of calls, pipelined, and returns
// the results in order. Calls that find the script missing are run again
// one by one, which loads it.
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

// loadScripts loads every script into every node of c that answers. A
// node that does not (a failed master a Cluster still lists, or one
// restarting) is skipped: a script is also loaded where it is first run
// and found missing (fix), so loading ahead only saves that first miss.
// It fails only when no node answers.
func loadScripts(ctx context.Context, c rueidis.Client) error {
	var firstErr error
	loaded := 0
	for _, n := range c.Nodes() {
		var err error
		for _, s := range allScripts {
			if err = n.Do(ctx, n.B().ScriptLoad().Script(s.src).Build()).Error(); err != nil {
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
