// Package recovery proves, before a service answers, that its durable
// store and its event log together still hold every change it
// acknowledged, and keeps the store's record of the log up to date while
// it runs.
//
// The store records, with the rows, what it knows of the log it is fed
// from (its LogPosition): the log's identity (its stream's creation
// time), the highest sequence applied, and the highest the log is known
// to have stored (noted every second, see KeepLogPosition). The log is a
// work queue: it drops an event only once the store has applied it. So
// every sequence up to the one seen is either applied (at most the
// applied one) or still in the log. OpenLog checks exactly that, and
// refuses to start on a log or a store that lost events, naming what is
// missing and how much, unless the operator accepts the loss.
package recovery

import (
	"fmt"
	"time"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/eventlog"
)

// Damage is a loss found at start: events acknowledged that neither the
// store nor the log holds any more, or a log that is not the store's.
type Damage struct {
	// Lost is how many acknowledged events are known to be lost; more may
	// be (those acknowledged after the store last noted the log).
	Lost uint64
	// Replaced is set when the log is not the one the store was fed from
	// (missing, created again, or another deployment's).
	Replaced bool
	msg      string
}

func (d *Damage) Error() string { return d.msg }

// Log is what Check knows of the event log.
type Log struct {
	State    eventlog.State
	ID       int64 // eventlog.Log.Identity
	FedStore int64 // eventlog.Log.FedStore
}

// Check compares what the store knows of the log with the log's state and
// identity, and returns the damage, or nil when every event up to the
// last sequence the store knows of is in one of the two. realign is set
// when nothing is lost but the log's sequence has gone back below the
// store's (a log that lost a tail the store had already applied): the
// store's log position must then be moved back to the log's.
//
// log describes the log: its state, its identity and the identity of the
// store it has been feeding (0 when it has none on record).
func Check(rec fg.LogPosition, log Log) (d *Damage, realign bool) {
	st, logID := log.State, log.ID
	if log.FedStore != 0 && log.FedStore != rec.Store {
		lost := sub(min(sub(st.First, 1), st.Last), rec.Applied)
		return &Damage{Lost: lost, Replaced: true, msg: fmt.Sprintf(
			"the durable store is not the one this event log has been feeding (the log fed store %d, this is store %d): "+
				"whatever the old store held is missing, and at least %d acknowledged events the log has since dropped are in neither "+
				"(the store deleted, emptied or replaced?)", log.FedStore, rec.Store, lost)}, false
	}
	if rec.Log != 0 && rec.Log != logID {
		lost := sub(rec.Seen, rec.Applied)
		return &Damage{Lost: lost, Replaced: true, msg: fmt.Sprintf(
			"the event log is not the one the durable store was fed from (the store's log was created at %s, this one at %s): "+
				"the store had applied the old log up to sequence %d and seen it reach %d, so at least %d acknowledged events not yet in the store are lost",
			stamp(rec.Log), stamp(logID), rec.Applied, rec.Seen, lost)}, false
	}
	if rec.Applied > st.Last {
		if lost := sub(rec.Seen, rec.Applied); lost > 0 {
			return &Damage{Lost: lost, msg: fmt.Sprintf(
				"the event log has lost its events after sequence %d: the durable store had applied them up to %d and seen the log reach %d, so %d acknowledged events not yet in the store are lost",
				st.Last, rec.Applied, rec.Seen, lost)}, false
		}
		return nil, true
	}
	// Sequences after the store's that the log no longer holds: before its
	// first message, between its messages, and after its last one.
	front := sub(min(sub(st.First, 1), st.Last), rec.Applied)
	interior := uint64(0)
	for _, seq := range st.Deleted {
		if seq > rec.Applied {
			interior++
		}
	}
	tail := sub(rec.Seen, max(st.Last, rec.Applied))
	lost := front + interior + tail
	if lost == 0 {
		return nil, false
	}
	d = &Damage{Lost: lost}
	switch {
	case front > 0 && rec.Log == 0 && rec.Applied == 0:
		d.msg = fmt.Sprintf("the durable store is new, or not the one fed from this event log, which no longer holds its events 1 to %d: "+
			"%d acknowledged events are in neither (the store deleted, emptied or replaced?)", sub(st.First, 1), front)
	case front > 0:
		d.msg = fmt.Sprintf("the durable store has applied the event log up to sequence %d, but the log starts at %d: "+
			"%d acknowledged events are in neither (the store restored from an older copy?)", rec.Applied, st.First, front)
	default:
		d.msg = fmt.Sprintf("the event log has lost %d acknowledged events that are not in the durable store "+
			"(%d between its first and last, %d after its last: it ends at %d, but the store saw it reach %d)",
			lost, interior, tail, st.Last, rec.Seen)
	}
	if front > 0 && (interior > 0 || tail > 0) {
		d.msg += fmt.Sprintf("; the log has lost %d more after it", interior+tail)
	}
	if st.Lost > 0 {
		d.msg += fmt.Sprintf("; the NATS server reports %d messages lost from its files", st.Lost)
	}
	return d, false
}

// sub is a - b, or 0 when b is larger.
func sub(a, b uint64) uint64 {
	if b >= a {
		return 0
	}
	return a - b
}

// stamp writes a log identity as the time it is.
func stamp(id int64) string { return time.Unix(0, id).UTC().Format(time.RFC3339Nano) }
