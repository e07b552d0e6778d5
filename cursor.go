package followgraph

import (
	"cmp"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"hash"
	"sync"
)

// Key is the position of an entry in a list ordered newest first: its time
// in milliseconds, ties broken by id, larger first. A cursor is the Key of
// the last entry of a page; the next page starts strictly after it.
type Key struct {
	Millis int64
	ID     UserID
}

// Before reports whether k comes before o in newest-first order.
func (k Key) Before(o Key) bool {
	if k.Millis != o.Millis {
		return k.Millis > o.Millis
	}
	return k.ID > o.ID
}

// Compare returns -1 when k comes before o in newest-first order, 1 when
// it comes after, and 0 when they are equal: the order of Before, as
// slices.SortFunc and slices.BinarySearchFunc take it.
func (k Key) Compare(o Key) int {
	if c := cmp.Compare(o.Millis, k.Millis); c != 0 {
		return c
	}
	return cmp.Compare(o.ID, k.ID)
}

// cursorKey authenticates cursors. It is not a secret: it exists so that a
// cursor the server did not issue, edited by hand or cut short, is rejected
// instead of silently read as another position. Every node of a deployment
// shares it, so any node accepts a cursor issued by any other.
var cursorKey = []byte("followgraph cursor v1")

const (
	cursorVersion = 1
	cursorMACLen  = 8
	cursorLen     = 1 + 8 + 8 + cursorMACLen
)

// EncodeCursor returns the opaque cursor for position k in the list named
// by scope (for example "followers/42"). The scope is authenticated but not
// stored, so a cursor is only accepted back for the same list.
func EncodeCursor(scope string, k Key) string {
	var b [cursorLen]byte
	b[0] = cursorVersion
	binary.BigEndian.PutUint64(b[1:], uint64(k.Millis))
	binary.BigEndian.PutUint64(b[9:], uint64(k.ID))
	copy(b[17:], cursorMAC(scope, b[:17]))
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// DecodeCursor returns the position in cursor c, issued by EncodeCursor
// for the same scope. The empty cursor means the start of the list and
// returns ok false. Any other string that EncodeCursor did not produce for
// scope returns an error with code EInvalidCursor.
func DecodeCursor(scope, c string) (k Key, ok bool, err error) {
	if c == "" {
		return Key{}, false, nil
	}
	if base64.RawURLEncoding.DecodedLen(len(c)) != cursorLen {
		return Key{}, false, errInvalidCursor
	}
	var b [cursorLen]byte
	n, err := base64.RawURLEncoding.Strict().Decode(b[:], []byte(c))
	if err != nil || n != cursorLen || b[0] != cursorVersion {
		return Key{}, false, errInvalidCursor
	}
	if !hmac.Equal(b[17:], cursorMAC(scope, b[:17])) {
		return Key{}, false, errInvalidCursor
	}
	k = Key{Millis: int64(binary.BigEndian.Uint64(b[1:])), ID: UserID(binary.BigEndian.Uint64(b[9:]))}
	if !k.ID.Valid() || k.Millis < 0 {
		return Key{}, false, errInvalidCursor
	}
	return k, true, nil
}

var errInvalidCursor = &Error{Code: EInvalidCursor, Message: "the cursor was not issued by this server for this list"}

// macs holds keyed HMAC states: Reset brings one back to the key's state
// without hashing the key again.
var macs = sync.Pool{New: func() any { return hmac.New(sha256.New, cursorKey) }}

func cursorMAC(scope string, payload []byte) []byte {
	m := macs.Get().(hash.Hash)
	defer macs.Put(m)
	m.Reset()
	m.Write([]byte(scope))
	m.Write([]byte{0})
	m.Write(payload)
	var sum [sha256.Size]byte
	return m.Sum(sum[:0])[:cursorMACLen]
}
