package rebuild

import (
	"context"
	"errors"
	"strings"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/redisgraph/internal/errs"
	"github.com/followgraph/followgraph/redisgraph/internal/keyspace"
)

// scanUsers calls fn with the user of each key of a user under the
// prefix, on every master (a user may come several times), until fn
// returns false. It SCANs 1000 keys a step, so Redis is never held up.
func (g *Graph) scanUsers(ctx context.Context, fn func(fg.UserID) bool) error {
	pattern := keyspace.GlobEscape(g.ks.Prefix()) + ":{*"
	head := g.ks.Prefix() + ":{"
	for _, node := range g.c.Nodes() {
		role, err := node.Do(ctx, node.B().Role().Build()).ToArray()
		if err == nil && len(role) == 0 {
			err = errors.New("empty ROLE reply")
		}
		if err != nil {
			return errs.Wrap("reconcile: role", err)
		}
		if r, _ := role[0].ToString(); r != "master" {
			continue
		}
		for cursor := uint64(0); ; {
			e, err := node.Do(ctx, node.B().Scan().Cursor(cursor).Match(pattern).Count(1000).Build()).AsScanEntry()
			if err != nil {
				return errs.Wrap("reconcile: scan", err)
			}
			for _, key := range e.Elements {
				rest, ok := strings.CutPrefix(key, head)
				id, _, ok2 := strings.Cut(rest, "}:")
				u, err := fg.ParseUserID(id)
				if ok && ok2 && err == nil && !fn(u) {
					return nil
				}
			}
			if cursor = e.Cursor; cursor == 0 {
				break
			}
		}
	}
	return nil
}
