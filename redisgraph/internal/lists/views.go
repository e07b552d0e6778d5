package lists

import (
	"context"
	"encoding/binary"
	"fmt"
	"strconv"
	"sync"

	"github.com/redis/rueidis"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/redisgraph/internal/errs"
	"github.com/followgraph/followgraph/redisgraph/internal/guard"
	"github.com/followgraph/followgraph/redisgraph/internal/keyspace"
	"github.com/followgraph/followgraph/redisgraph/internal/layout"
	"github.com/followgraph/followgraph/redisgraph/internal/scripts"
)

// A user's lists are kept in chunks (layout.Group): a key that reaches
// seven eighths of the Graph's bound is split, by the scripts that write
// it (lua/lib.lua's fit), and its entries move between keys. A read that
// computes the chunk of a member, or walks a list's chunks, does so for
// the numbers of chunks it assumes, its view. So every such read sends,
// after its commands and in the same pipeline, the read of the user's
// view as it is (an HMGET of h, on the connection of the user's slot,
// after the read's commands there): every split increments the view's
// generation (layout.GenField), so a view read after the commands equal
// to the one assumed proves that no split moved an entry the commands
// read (a rebuild starts the generations again, so the whole view is
// compared). Otherwise the read is made again for the view read. Views of
// users with chunks are remembered (views), so that the next read assumes
// the right one; the others are assumed to be one chunk a group.

// View is what a read assumes of a user's chunks: the generation,
// and each group's number of chunks (0: one), in layout.Groups' order.
type View struct {
	gen    string
	counts [1 + layout.NumGroups]int
}

// GroupFields are the fields of h that a view reads: the generation, then
// each group's number of chunks.
var GroupFields = func() (f [1 + layout.NumGroups]string) {
	f[0] = layout.GenField
	for i, g := range layout.Groups {
		f[1+i] = g.Field
	}
	return f
}()

// groupIndex is the index in layout.Groups of each key's group.
var groupIndex = func() map[layout.Key]int {
	m := map[layout.Key]int{}
	for i, g := range layout.Groups {
		for _, k := range g.Keys {
			m[k] = i
		}
	}
	return m
}()

// chunks returns the number of chunks of key k.
func (v View) Chunks(k layout.Key) int {
	if n := v.counts[1+groupIndex[k]]; n > 1 {
		return n
	}
	return 1
}

// chunkKey returns the key of the chunk of user's key k that holds member
// m, as view v has it.
func (l *Lists) ChunkKey(user fg.UserID, v View, k layout.Key, m string) string {
	n := v.Chunks(k)
	if n == 1 {
		return l.ks.User(user, k)
	}
	return l.ks.Chunk(user, k, layout.ChunkOf(layout.MemberHash(binary.BigEndian.Uint64([]byte(m))), n))
}

// chunkKeys returns the keys of every chunk of user's key k, as v has it.
func (l *Lists) ChunkKeys(user fg.UserID, v View, k layout.Key) []string {
	keys := make([]string, v.Chunks(k))
	for j := range keys {
		keys[j] = l.ks.Chunk(user, k, j)
	}
	return keys
}

// views remembers the views of the users with chunks.
type views struct{ m sync.Map } // fg.UserID → View

// view returns the view a read of user assumes.
func (l *Lists) View(user fg.UserID) View {
	if v, ok := l.views.m.Load(user); ok {
		return v.(View)
	}
	return View{}
}

// learn remembers v as user's view.
func (l *Lists) learn(user fg.UserID, v View) {
	if v.gen == "" {
		l.views.m.Delete(user)
		return
	}
	l.views.m.Store(user, v)
}

// viewCmd returns the read of user's view.
func (l *Lists) ViewCmd(user fg.UserID) rueidis.Completed {
	return l.c.B().Hmget().Key(l.ks.User(user, layout.Counters)).Field(GroupFields[:]...).Build()
}

// parseView reads the reply of viewCmd.
func ParseView(r rueidis.RedisResult) (View, error) {
	vals, err := r.ToArray()
	if err != nil {
		return View{}, err
	}
	return ParseViewOf(vals)
}

// parseViewOf reads the values of GroupFields.
func ParseViewOf(vals []rueidis.RedisMessage) (View, error) {
	if len(vals) != len(GroupFields) {
		return View{}, fmt.Errorf("a view of %d fields", len(vals))
	}
	var v View
	v.gen, _ = vals[0].ToString()
	for i := 1; i < len(vals); i++ {
		if s, err := vals[i].ToString(); err == nil {
			if v.counts[i], err = strconv.Atoi(s); err != nil {
				return View{}, fmt.Errorf("chunks %q", s)
			}
		}
	}
	return v, nil
}

// readViews sends the commands of build, then the read of each user's
// view, as readChecked does. It reports whether a view differs from the
// one in vs, and then learns it (the commands' replies are then of no
// use: the caller reads again, for the views learnt).
func (l *Lists) ReadViews(ctx context.Context, users []fg.UserID, vs []View, build func() rueidis.Commands) ([]rueidis.RedisResult, bool, error) {
	var n int
	res, err := l.guard.Read(ctx, func() rueidis.Commands {
		cmds := build()
		n = len(cmds)
		for _, u := range users {
			cmds = append(cmds, l.ViewCmd(u))
		}
		return cmds
	})
	if err != nil {
		return nil, false, err
	}
	changed := false
	for i, u := range users {
		v, err := ParseView(res[n+i])
		if err != nil {
			return nil, false, err
		}
		if v != vs[i] {
			changed = true
			l.learn(u, v)
		}
	}
	return res[:n], changed, nil
}

// readChunked returns the replies of the commands build makes for the
// views of users, read as readViews does, again until the views hold.
func (l *Lists) ReadChunked(ctx context.Context, users []fg.UserID, build func(vs []View) rueidis.Commands) ([]rueidis.RedisResult, []View, error) {
	var res []rueidis.RedisResult
	vs := make([]View, len(users))
	err := Retry(func() error {
		for i, u := range users {
			vs[i] = l.View(u)
		}
		var changed bool
		var err error
		if res, changed, err = l.ReadViews(ctx, users, vs, func() rueidis.Commands { return build(vs) }); err == nil && changed {
			return ErrViewChanged
		}
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	return res, vs, nil
}

// walkViews calls walk with user's view of its chunks, read from Redis,
// and again with the view read after it as long as that differs: a split
// under a walk of every chunk may have moved entries into a chunk the
// walk did not know. Its Redis errors are returned as they are, walk's
// too.
func (l *Lists) WalkViews(ctx context.Context, user fg.UserID, walk func(View) error) error {
	v, err := ParseView(l.c.Do(ctx, l.ViewCmd(user)))
	for range viewTries {
		if err != nil {
			return err
		}
		if err := walk(v); err != nil {
			return err
		}
		now, err2 := ParseView(l.c.Do(ctx, l.ViewCmd(user)))
		if err2 == nil && now == v {
			return nil
		}
		v, err = now, err2
	}
	return fmt.Errorf("redisgraph: user %d: %w", user, errs.GraphChanging)
}

// viewTries is how many times a read is made for the views it learns
// before it gives up: splits are rare at the default bound, but a list
// bounded to a few entries (the tests') splits at almost every write,
// and a slow reader (the race detector's) meets many in a row.
const viewTries = 64

// ErrViewChanged says that a read found a view other than the one it
// assumed: it is made again (chunked).
var ErrViewChanged = fmt.Errorf("redisgraph: a list split under the read")

// chunked runs read until it does not fail with ErrViewChanged, at most
// viewTries times.
func Retry(read func() error) error {
	for range viewTries {
		if err := read(); err != ErrViewChanged {
			return err
		}
	}
	return fmt.Errorf("redisgraph: read: %w", errs.GraphChanging)
}

// Lists reads a user's lists in their chunks, as the views of the users
// with chunks say them (remembered), through the guard.
type Lists struct {
	c     rueidis.Client
	ks    keyspace.Space
	guard *guard.Guard
	lua   *scripts.Runner
	views views
}

// New returns the lists of the graph of ks, read through c and g.
func New(c rueidis.Client, ks keyspace.Space, g *guard.Guard, lua *scripts.Runner) *Lists {
	return &Lists{c: c, ks: ks, guard: g, lua: lua}
}
