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

// MarkSQL is a store's spelling of the three statements of the mark:
// Read selects the key and value of the four rows; Mark sets the log's
// identity ($1) and raises the sequence seen to $2; Reset sets the log's
// identity, the sequence applied and the one seen ($1, $2, $3).
type MarkSQL struct{ Read, Mark, Reset string }

// MarkStatements returns the statements for a database whose meta table's
// key column is written key, whose greater of two values is greatest, and
// whose i-th placeholder is param(i).
func MarkStatements(key, greatest string, param func(i int) string) MarkSQL {
	q := func(k string) string { return "'" + k + "'" }
	return MarkSQL{
		Read: "SELECT " + key + ", value FROM meta WHERE " + key + " IN (" +
			q(MetaStore) + ", " + q(MetaLog) + ", " + q(MetaApplied) + ", " + q(MetaSeen) + ")",
		Mark: "UPDATE meta SET value = CASE " + key + " WHEN " + q(MetaLog) + " THEN " + param(1) +
			" ELSE " + greatest + "(value, " + param(2) + ") END WHERE " + key + " IN (" + q(MetaLog) + ", " + q(MetaSeen) + ")",
		Reset: "UPDATE meta SET value = CASE " + key + " WHEN " + q(MetaLog) + " THEN " + param(1) +
			" WHEN " + q(MetaApplied) + " THEN " + param(2) + " ELSE " + param(3) + " END WHERE " + key + " IN (" +
			q(MetaLog) + ", " + q(MetaApplied) + ", " + q(MetaSeen) + ")",
	}
}

// ScanMark reads the rows of MarkSQL.Read, through a driver's row
// iteration, into a mark.
func ScanMark(next func() bool, scan func(dest ...any) error) (fg.LogMark, error) {
	var m fg.LogMark
	for next() {
		var k string
		var v int64
		if err := scan(&k, &v); err != nil {
			return m, err
		}
		if err := SetMark(&m, k, v); err != nil {
			return m, err
		}
	}
	return m, nil
}

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
