package redisgraph

import (
	"context"
	"errors"
	"strconv"
	"strings"

	fg "github.com/followgraph/followgraph"
)

// archiveBatch is how many edges one call of the archive script hides:
// with u's side written once per batch, 16 keeps nearly every call of a
// user with millions of followers near a millisecond
// (docs/BENCHMARKS.md "Redis: the archive step").
const archiveBatch = 16

// showBatch is archiveBatch for a show or a drop, whose members come by
// HSCAN in the hash's order, not the set's, so that each call's
// counterparts are scattered over memory: at 16 a call, 3.6 and 6.7% of
// the calls of a restore of 2M followers took over a millisecond, at 8
// 0.05 and 0.12% (docs/BENCHMARKS.md "Redis: a job over a user with 2M
// followers"). A variable only for BenchmarkJob, which compares sizes.
var showBatch = 8

// archiveSide is one side of a user's edges, as the archive script takes
// it: its code (lua/lib.lua's sides) and the kinds of its sorted set and
// versions hash, and the same of the counterparts' side opposite.
type archiveSide struct {
	code, z, vh    string
	ccode, cz, cvh string
}

// archiveSides are the sides an account-state job hides: follows,
// blocks and requests, each way. (A mute is on the muter's side only; the
// mutes of a hidden user by others need a muted-by set first: DESIGN.md.)
var archiveSides = [...]archiveSide{
	{"fi", kindIn, kindInVer, "fo", kindOut, kindOutVer},
	{"fo", kindOut, kindOutVer, "fi", kindIn, kindInVer},
	{"bi", kindBlockIn, "biv", "bo", kindBlockOut, "bov"},
	{"bo", kindBlockOut, "bov", "bi", kindBlockIn, "biv"},
	{"ri", kindReqIn, "riv", "ro", kindReqOut, "rov"},
	{"ro", kindReqOut, "rov", "ri", kindReqIn, "riv"},
}

// The steps of the archive script (lua/archive.lua).
const (
	archiveHide = "hide" // a hidden user's shown edges out of sight, both sides
	archiveShow = "show" // an active user's hidden edges back, with their versions
	archiveDrop = "drop" // a deleted user's hidden edges ended, both sides
)

// errStateChanged is archive's error when the user's state no longer asks
// for its step: the job of the new state takes over.
var errStateChanged = errors.New("redisgraph: the user's state changed during its job")

// archive runs step (archiveHide, archiveShow, archiveDrop) on every edge
// of user of archiveSides, in batches of archiveBatch, and returns how
// many it changed. It is the step the account-state job of a standalone
// Redis is built on (docs/DESIGN.md "Account states"); a Cluster, whose
// two sides of an edge live in two slots, needs the job's two steps per
// pair and is refused. Run again, it finds nothing left to do. When the
// user's state no longer asks for step, it stops with errStateChanged.
func (g *Graph) archive(ctx context.Context, user fg.UserID, step string) (int64, error) {
	return g.archivePaced(ctx, user, step, nil)
}

// archivePaced is archive calling after (when not nil) with the count of
// each batch changed once it is done; an error of after stops it.
func (g *Graph) archivePaced(ctx context.Context, user fg.UserID, step string, after func(int64) error) (int64, error) {
	if g.cluster {
		return 0, fg.Errorf(fg.EUnavailable, "redisgraph: archiving edges on a Redis Cluster is not built yet")
	}
	var total int64
	for _, side := range archiveSides {
		call := func(ms []string) error {
			n, err := g.archiveBatch(ctx, user, side, step, ms)
			total += n
			if err == nil && after != nil {
				err = after(n)
			}
			return err
		}
		var err error
		if step == archiveHide {
			err = g.eachFirst(ctx, g.key(user, side.z), call)
		} else {
			err = g.eachHidden(ctx, g.key(user, side.vh), call)
		}
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// eachFirst calls f with the first members of z, archiveBatch at a time,
// until z is empty: f hides them, so each call reads the next ones.
func (g *Graph) eachFirst(ctx context.Context, z string, f func([]string) error) error {
	for {
		ms, err := g.c.Do(ctx, g.c.B().Zrange().Key(z).Min("0").Max(strconv.Itoa(archiveBatch-1)).Build()).AsStrSlice()
		if err != nil || len(ms) == 0 {
			return err
		}
		if err := f(ms); err != nil {
			return err
		}
	}
}

// eachHidden calls f with the members of the versions hash vh whose
// version is marked hidden, archiveBatch at a time, scanning vh once.
func (g *Graph) eachHidden(ctx context.Context, vh string, f func([]string) error) error {
	var cursor uint64
	var batch []string
	for {
		scan, err := g.c.Do(ctx, g.c.B().Hscan().Key(vh).Cursor(cursor).Count(int64(showBatch)).Build()).AsScanEntry()
		if err != nil {
			return err
		}
		for j := 0; j+1 < len(scan.Elements); j += 2 {
			if !strings.HasPrefix(scan.Elements[j+1], "h") {
				continue
			}
			if batch = append(batch, scan.Elements[j]); len(batch) == showBatch {
				if err := f(batch); err != nil {
					return err
				}
				batch = batch[:0]
			}
		}
		if cursor = scan.Cursor; cursor == 0 {
			break
		}
	}
	if len(batch) > 0 {
		return f(batch)
	}
	return nil
}

// archiveBatch runs the archive script once, on the edges of user's side
// with the counterparts whose members are ms.
func (g *Graph) archiveBatch(ctx context.Context, user fg.UserID, side archiveSide, step string, ms []string) (int64, error) {
	keys := make([]string, 0, 4+4*len(ms))
	keys = append(keys, g.key(user, side.z), g.key(user, side.vh), g.key(user, kindCounters), g.key(user, kindFlags))
	args := make([]string, 0, 4+len(ms))
	args = append(args, step, side.code, side.ccode, member(user))
	for _, m := range ms {
		c, ok := memberID(m)
		if !ok {
			return 0, fg.Errorf(fg.EInternal, "redisgraph: member %q of %s is not a user id", m, g.key(user, side.z))
		}
		keys = append(keys, g.key(c, side.cz), g.key(c, side.cvh), g.key(c, kindCounters), g.key(c, kindFlags))
		args = append(args, m)
	}
	n, err := scriptArchive.exec(ctx, g.c, keys, args).AsInt64()
	if err == nil && n < 0 {
		return 0, errStateChanged
	}
	return n, err
}
