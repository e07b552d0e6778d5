// Package wire is how redisgraph writes values into Redis and reads them
// back: user ids as sorted-set members, versions as hex digits, times as
// decimal milliseconds, and the replies of the commands that return them.
package wire

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/redisgraph/internal/layout"
)

// Member encodes id as a sorted set member: 8 bytes, big-endian, so that
// byte order is numeric order, and members with equal scores sort by id,
// as keyset paging needs.
func Member(id fg.UserID) string {
	var b [8]byte
	return string(AppendMember(b[:0], id))
}

// AppendMember appends to b the member of id, as Member returns it.
func AppendMember(b []byte, id fg.UserID) []byte {
	return binary.BigEndian.AppendUint64(b, uint64(id))
}

// MemberID decodes a member written by Member, and reports whether it is
// a valid id.
func MemberID(m string) (fg.UserID, bool) {
	if len(m) != 8 {
		return 0, false
	}
	id := fg.UserID(binary.BigEndian.Uint64([]byte(m)))
	return id, id.Valid()
}

// MemberNumber returns a member as the number its bytes spell, as
// layout.MemberHash takes it.
func MemberNumber(m string) uint64 { return binary.BigEndian.Uint64([]byte(m)) }

// Members returns the members of the ids of es.
func Members(es []fg.Entry) []string {
	ms := make([]string, len(es))
	for i, e := range es {
		ms[i] = Member(e.ID)
	}
	return ms
}

// VersionHex writes v as the scripts do: 16 lowercase hex digits.
func VersionHex(v fg.Version) string { return string(AppendVersionHex(nil, v)) }

// AppendVersionHex appends v as VersionHex writes it.
func AppendVersionHex(b []byte, v fg.Version) []byte {
	const digits = "0123456789abcdef"
	var h [16]byte
	for i := 15; i >= 0; i-- {
		h[i] = digits[v&15]
		v >>= 4
	}
	return append(b, h[:]...)
}

// Version reads a version of a reply, written by VersionHex.
func Version(m rueidis.RedisMessage) (fg.Version, error) {
	s, err := m.ToString()
	if err != nil {
		return 0, err
	}
	return ParseVersion(s)
}

// ParseVersion reads a version written by VersionHex.
func ParseVersion(s string) (fg.Version, error) {
	n, err := strconv.ParseUint(s, 16, 64)
	if err != nil || len(s) != 16 {
		return 0, fmt.Errorf("version %q is not 16 hex digits", s)
	}
	return fg.Version(n), nil
}

// Millis returns t in ms since the epoch, decimal; "0" for the zero time.
func Millis(t time.Time) string {
	if t.IsZero() {
		return "0"
	}
	return strconv.FormatInt(t.UnixMilli(), 10)
}

// Status reads the status a write script returned first.
func Status(m rueidis.RedisMessage) (layout.Status, error) {
	n, err := m.AsInt64()
	return layout.Status(n), err
}

// Entries reads the reply of a ZRANGE … WITHSCORES of key.
func Entries(key string, r rueidis.RedisResult) ([]fg.Entry, error) {
	zs, err := r.AsZScores()
	if err != nil {
		return nil, err
	}
	es := make([]fg.Entry, len(zs))
	for i, z := range zs {
		id, ok := MemberID(z.Member)
		if !ok {
			return nil, fmt.Errorf("member %q of %s is not an id", z.Member, key)
		}
		es[i] = fg.Entry{ID: id, Since: fg.Millis(int64(z.Score))}
	}
	return es, nil
}

// IDs reads a reply of members.
func IDs(r rueidis.RedisResult) ([]fg.UserID, error) {
	ms, err := r.AsStrSlice()
	if err != nil {
		return nil, err
	}
	ids := make([]fg.UserID, len(ms))
	for i, m := range ms {
		id, ok := MemberID(m)
		if !ok {
			return nil, fmt.Errorf("member %q is not an id", m)
		}
		ids[i] = id
	}
	return ids, nil
}
