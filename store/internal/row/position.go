package row

import (
	"fmt"

	fg "github.com/followgraph/followgraph"
)

// The meta rows of a followgraph.LogPosition (migrations 0003 of SQLite,
// 0002 of PostgreSQL and MySQL).
const (
	MetaStore   = "store_id"       // the store's identity, drawn when it was created
	MetaLog     = "log_created_ns" // the log's identity; 0 before the first start
	MetaApplied = "last_seq"       // the highest log sequence applied
	MetaSeen    = "seen_seq"       // the highest sequence the log is known to have stored
)

// PositionSQL is a store's spelling of the three statements of the log
// position: Read selects the key and value of the four rows; Save sets
// the log's identity ($1) and raises the sequence seen to $2; Reset sets
// the log's identity, the sequence applied and the one seen ($1, $2, $3).
type PositionSQL struct{ Read, Save, Reset string }

// PositionStatements returns the statements for a database whose meta
// table's key column is written key, whose greater of two values is
// greatest, and whose i-th placeholder is param(i).
func PositionStatements(key, greatest string, param func(i int) string) PositionSQL {
	q := func(k string) string { return "'" + k + "'" }
	return PositionSQL{
		Read: "SELECT " + key + ", value FROM meta WHERE " + key + " IN (" +
			q(MetaStore) + ", " + q(MetaLog) + ", " + q(MetaApplied) + ", " + q(MetaSeen) + ")",
		Save: "UPDATE meta SET value = CASE " + key + " WHEN " + q(MetaLog) + " THEN " + param(1) +
			" ELSE " + greatest + "(value, " + param(2) + ") END WHERE " + key + " IN (" + q(MetaLog) + ", " + q(MetaSeen) + ")",
		Reset: "UPDATE meta SET value = CASE " + key + " WHEN " + q(MetaLog) + " THEN " + param(1) +
			" WHEN " + q(MetaApplied) + " THEN " + param(2) + " ELSE " + param(3) + " END WHERE " + key + " IN (" +
			q(MetaLog) + ", " + q(MetaApplied) + ", " + q(MetaSeen) + ")",
	}
}

// ScanPosition reads the rows of PositionSQL.Read, through a driver's row
// iteration, into a log position.
func ScanPosition(next func() bool, scan func(dest ...any) error) (fg.LogPosition, error) {
	var p fg.LogPosition
	for next() {
		var k string
		var v int64
		if err := scan(&k, &v); err != nil {
			return p, err
		}
		if err := SetPosition(&p, k, v); err != nil {
			return p, err
		}
	}
	return p, nil
}

// SetPosition takes the value of one row, as read, into p.
func SetPosition(p *fg.LogPosition, key string, value int64) error {
	switch key {
	case MetaStore:
		p.Store = value
	case MetaLog:
		p.Log = value
	case MetaApplied:
		p.Applied = uint64(value)
	case MetaSeen:
		p.Seen = uint64(value)
	default:
		return fmt.Errorf("unknown meta row %q", key)
	}
	return nil
}

// CheckPosition reports a log position whose sequences do not fit the
// rows' signed columns.
func CheckPosition(p fg.LogPosition) error {
	if p.Applied > MaxVersion || p.Seen > MaxVersion {
		return fmt.Errorf("sequence %d or %d is 2^63 or more", p.Applied, p.Seen)
	}
	return nil
}
