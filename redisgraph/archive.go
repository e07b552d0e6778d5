package redisgraph

import (
	"context"
	"strconv"
	"strings"

	fg "github.com/followgraph/followgraph"
)

// archiveBatch is how many follows one call of the archive script hides
// or shows: with u's side written once per batch, 16 keeps nearly every
// call of a user with millions of followers under a millisecond
// (docs/BENCHMARKS.md "Redis: the archive step").
const archiveBatch = 16

// archiveDir is one direction of a user's follows, as the archive script
// takes it: the kinds of the user's sorted set, versions hash and counter,
// and those of the counterparts'.
type archiveDir struct {
	z, vh, counter    string
	cz, cvh, ccounter string
}

var archiveDirs = [...]archiveDir{
	{kindIn, kindInVer, "nin", kindOut, kindOutVer, "nout"},
	{kindOut, kindOutVer, "nout", kindIn, kindInVer, "nin"},
}

// archiveFollows hides every follow of user, both directions, on both
// sides (hide), or shows every hidden one again with its version and
// since (!hide), in batches of archiveBatch, and returns how many it
// changed. It is the step the account-state job of a standalone Redis is
// built on (docs/DESIGN.md "Account states"); a Cluster, whose two sides
// of a follow live in two slots, needs the job's two steps per pair and
// is refused. Run again, it finds nothing left to do.
func (g *Graph) archiveFollows(ctx context.Context, user fg.UserID, hide bool) (int64, error) {
	if g.cluster {
		return 0, fg.Errorf(fg.EUnavailable, "redisgraph: archiving follows on a Redis Cluster is not built yet")
	}
	var total int64
	for _, d := range archiveDirs {
		z, vh := g.key(user, d.z), g.key(user, d.vh)
		call := func(ms []string) error {
			n, err := g.archiveBatch(ctx, user, d, hide, ms)
			total += n
			return err
		}
		var err error
		if hide {
			err = g.eachFollow(ctx, z, call)
		} else {
			err = g.eachHidden(ctx, vh, call)
		}
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// eachFollow calls f with the first members of z, archiveBatch at a time,
// until z is empty: f hides them, so each call reads the next ones.
func (g *Graph) eachFollow(ctx context.Context, z string, f func([]string) error) error {
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
		scan, err := g.c.Do(ctx, g.c.B().Hscan().Key(vh).Cursor(cursor).Count(archiveBatch).Build()).AsScanEntry()
		if err != nil {
			return err
		}
		for j := 0; j+1 < len(scan.Elements); j += 2 {
			if !strings.HasPrefix(scan.Elements[j+1], "h") {
				continue
			}
			if batch = append(batch, scan.Elements[j]); len(batch) == archiveBatch {
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

// archiveBatch runs the archive script once, on the follows of user in
// direction d with the counterparts whose members are ms.
func (g *Graph) archiveBatch(ctx context.Context, user fg.UserID, d archiveDir, hide bool, ms []string) (int64, error) {
	keys := make([]string, 0, 3+3*len(ms))
	keys = append(keys, g.key(user, d.z), g.key(user, d.vh), g.key(user, kindCounters))
	op := "show"
	if hide {
		op = "hide"
	}
	args := make([]string, 0, 4+len(ms))
	args = append(args, op, d.counter, d.ccounter, member(user))
	for _, m := range ms {
		c, ok := memberID(m)
		if !ok {
			return 0, fg.Errorf(fg.EInternal, "redisgraph: member %q of %s is not a user id", m, g.key(user, d.z))
		}
		keys = append(keys, g.key(c, d.cz), g.key(c, d.cvh), g.key(c, kindCounters))
		args = append(args, m)
	}
	return scriptArchive.exec(ctx, g.c, keys, args).AsInt64()
}
