package redisgraph_test

import (
	"cmp"
	"context"
	"encoding/binary"
	"slices"
	"strconv"

	"github.com/redis/rueidis"

	fg "github.com/followgraph/followgraph"
)

// chunkedLayout is a candidate Redis layout, loaded by BenchmarkMemory
// beside today's so that the memory a change of layout would save is
// measured on the same graph in the same run: each user's following and
// followers lists split into chunks of at most max members, each chunk a
// sorted set on a slot of its own ({<id>:<chunk>}), so that no key is big
// and small chunks stay listpack-encoded (zset-max-listpack-entries is 128
// by default). A list of at most max members is one key, as today; a
// longer one is chunks filled to three quarters of max (what splitting a
// full chunk in two and refilling it leaves on average) and a directory,
// a sorted set of its chunks scored by their newest follow time. The
// counters are a hash per user (counts, stamp, clock). Members are the
// 8-byte big-endian ids of today, or decimal ids, which a listpack keeps
// as integers.
type chunkedLayout struct {
	max     int
	decimal bool
}

func (l chunkedLayout) member(id fg.UserID) string {
	if l.decimal {
		return id.String()
	}
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(id))
	return string(b[:])
}

// load writes the edges of events (follows of distinct edges) under p.
func (l chunkedLayout) load(ctx context.Context, c rueidis.Client, p string, events []fg.Event) error {
	type entry struct {
		ms    int64
		other fg.UserID
	}
	out, in := map[fg.UserID][]entry{}, map[fg.UserID][]entry{}
	for _, e := range events {
		ms := e.Version.Millis()
		out[e.User] = append(out[e.User], entry{ms, e.Target})
		in[e.Target] = append(in[e.Target], entry{ms, e.User})
	}
	pipe := benchPipe{c: c}
	fill := max(l.max*3/4, 1)
	for _, side := range []struct {
		name  string
		lists map[fg.UserID][]entry
	}{{"out", out}, {"in", in}} {
		for u, es := range side.lists {
			slices.SortFunc(es, func(a, b entry) int { return cmp.Compare(b.ms, a.ms) }) // newest first
			zadd := func(key string, es []entry) error {
				z := c.B().Zadd().Key(key).ScoreMember()
				for _, e := range es {
					z = z.ScoreMember(float64(e.ms), l.member(e.other))
				}
				return pipe.add(ctx, z.Build())
			}
			if len(es) <= l.max {
				if err := zadd(p+"{"+u.String()+"}:"+side.name, es); err != nil {
					return err
				}
				continue
			}
			dir := c.B().Zadd().Key(p + "{" + u.String() + "}:" + side.name + "d").ScoreMember()
			for k := 0; len(es) > 0; k++ {
				n, id := min(fill, len(es)), strconv.Itoa(k)
				if err := zadd(p+"{"+u.String()+":"+id+"}:"+side.name, es[:n]); err != nil {
					return err
				}
				dir = dir.ScoreMember(float64(es[0].ms), id)
				es = es[n:]
			}
			if err := pipe.add(ctx, dir.Build()); err != nil {
				return err
			}
		}
	}
	users := map[fg.UserID]bool{}
	for _, e := range events {
		users[e.User], users[e.Target] = true, true
	}
	for u := range users {
		if err := pipe.add(ctx, l.counters(c, p, u, len(out[u]), len(in[u]))); err != nil {
			return err
		}
	}
	return pipe.flush(ctx)
}

// counters is the HSET of u's counters hash: following and followers, a
// change stamp and a clock.
func (l chunkedLayout) counters(c rueidis.Client, p string, u fg.UserID, following, followers int) rueidis.Completed {
	return c.B().Hset().Key(p+"{"+u.String()+"}:h").FieldValue().
		FieldValue("nout", strconv.Itoa(following)).FieldValue("nin", strconv.Itoa(followers)).
		FieldValue("st", "1").FieldValue("ck", "1700000000000").Build()
}
