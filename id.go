// Package followgraph is the language of the follow graph: user ids, follow
// edges, relations, pages with keyset cursors, change events, the error
// vocabulary, and the Graph interface that every engine implements.
//
// It imports the standard library only. Engines live in their own packages
// (memgraph, redisgraph); the conformance suite in graphtest proves them.
package followgraph

import "strconv"

// UserID identifies a user: a positive 63-bit integer (1 to 2^63-1).
// In URLs it is written in decimal; in JSON it is a decimal string, because
// JavaScript clients lose precision above 2^53.
type UserID int64

// MaxUserID is the largest valid UserID.
const MaxUserID UserID = 1<<63 - 1

// Valid reports whether id is in the range 1 to 2^63-1.
func (id UserID) Valid() bool { return id > 0 }

// String returns the canonical decimal form of id.
func (id UserID) String() string { return strconv.FormatInt(int64(id), 10) }

// ParseUserID parses the canonical decimal form of a UserID. It is strict:
// only the digits 0-9, no sign, no spaces, no leading zero, at most
// 2^63-1, at least 1. Anything else returns an error with code EInvalidID.
func ParseUserID(s string) (UserID, error) {
	if len(s) == 0 || len(s) > 19 || s[0] == '0' {
		return 0, invalidID(s)
	}
	var n uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, invalidID(s)
		}
		n = n*10 + uint64(c-'0') // 19 digits cannot overflow uint64
	}
	if n > uint64(MaxUserID) {
		return 0, invalidID(s)
	}
	return UserID(n), nil
}

// CheckIDs returns an EInvalidID error for the first id that is not valid.
func CheckIDs(ids ...UserID) error {
	for _, id := range ids {
		if !id.Valid() {
			return Errorf(EInvalidID, "invalid user id %d: ids are integers from 1 to 9223372036854775807", int64(id))
		}
	}
	return nil
}

// CheckIDList checks a request that names ids, at most max of them, on
// behalf of the users of (such as the viewer of a relation request): more
// than max ids is an EInvalidArgument error (TooManyIDs), whatever the
// ids; otherwise the first invalid id, those of of before those of ids, is
// an EInvalidID error.
func CheckIDList(ids []UserID, max int, of ...UserID) error {
	if len(ids) > max {
		return TooManyIDs(len(ids), max)
	}
	if err := CheckIDs(of...); err != nil {
		return err
	}
	return CheckIDs(ids...)
}

// TooManyIDs returns the EInvalidArgument error of a request naming n ids
// where at most max are taken.
func TooManyIDs(n, max int) error {
	return Errorf(EInvalidArgument, "%d ids asked for: at most %d", n, max)
}

func invalidID(s string) error {
	const max = 40
	if len(s) > max {
		s = s[:max] + "…"
	}
	return Errorf(EInvalidID, "invalid user id %q: ids are decimal integers from 1 to 9223372036854775807", s)
}
