package row

import (
	"fmt"

	fg "github.com/followgraph/followgraph"
)

// The meta rows of a followgraph.LogMark (migrations 0003 of SQLite, 0002
// of PostgreSQL and MySQL).
const (
	MetaStore   = "store_id"       // the store's identity, drawn when it was created
	MetaLog     = "log_created_ns" // the log's identity; 0 before the first start
	MetaApplied = "last_seq"       // the highest log sequence applied
	MetaSeen    = "seen_seq"       // the highest sequence the log is known to have stored
)

// MetaKeys are the keys of the four rows, for a query's IN list.
const MetaKeys = "'" + MetaStore + "', '" + MetaLog + "', '" + MetaApplied + "', '" + MetaSeen + "'"

// SetMark takes the value of one row, as read, into m.
func SetMark(m *fg.LogMark, key string, value int64) error {
	switch key {
	case MetaStore:
		m.Store = value
	case MetaLog:
		m.Log = value
	case MetaApplied:
		m.Applied = uint64(value)
	case MetaSeen:
		m.Seen = uint64(value)
	default:
		return fmt.Errorf("unknown meta row %q", key)
	}
	return nil
}

// CheckMark reports a mark whose sequences do not fit the rows' signed
// columns.
func CheckMark(m fg.LogMark) error {
	if m.Applied > MaxVersion || m.Seen > MaxVersion {
		return fmt.Errorf("sequence %d or %d is 2^63 or more", m.Applied, m.Seen)
	}
	return nil
}
