package recovery

import (
	"strings"
	"testing"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/eventlog"
)

func TestCheck(t *testing.T) {
	const id, other, self = 1764600000000000001, 1764600000000000002, 77
	held := func(first, last uint64, deleted ...uint64) eventlog.State {
		return eventlog.State{First: first, Last: last, Msgs: last - first + 1 - uint64(len(deleted)), Deleted: deleted}
	}
	empty := func(last uint64) eventlog.State { return eventlog.State{First: last + 1, Last: last} }
	tests := []struct {
		name    string
		rec     fg.LogPosition
		st      eventlog.State
		fed     int64  // the store the log says it feeds
		lost    uint64 // 0: no damage
		replace bool
		realign bool
		says    string
	}{
		{"NewDeployment", fg.LogPosition{Store: self}, empty(0), 0, 0, false, false, ""},
		{"ImportedStoreNewLog", fg.LogPosition{Store: self}, empty(0), 0, 0, false, false, ""},
		{"AllInTheLog", fg.LogPosition{Store: self}, held(1, 1000), 0, 0, false, false, ""},
		{"StoreBehindLog", fg.LogPosition{Store: self, Log: id, Applied: 200, Seen: 300}, held(150, 300), 0, 0, false, false, ""},
		{"AllApplied", fg.LogPosition{Store: self, Log: id, Applied: 300, Seen: 300}, empty(300), 0, 0, false, false, ""},
		{"AckedNotRemovedYet", fg.LogPosition{Store: self, Log: id, Applied: 300, Seen: 300}, held(290, 300), 0, 0, false, false, ""},
		{"RedeliveryPendingBelow", fg.LogPosition{Store: self, Log: id, Applied: 300, Seen: 320}, held(280, 320, 290, 300), 0, 0, false, false, ""},
		{"UpgradeNoID", fg.LogPosition{Store: self, Log: 0, Applied: 300, Seen: 0}, held(301, 400), 0, 0, false, false, ""},
		{"StoreDeleted", fg.LogPosition{Store: self}, held(200987, 201986), 0, 200986, false, false, "store is new"},
		{"StoreDeletedLogDrained", fg.LogPosition{Store: self}, empty(200986), 0, 200986, false, false, "store is new"},
		{"StoreFromOldBackup", fg.LogPosition{Store: self, Log: id, Applied: 100, Seen: 150}, held(201, 300), 0, 100, false, false, "older copy"},
		{"LogReplaced", fg.LogPosition{Store: self, Log: id, Applied: 200986, Seen: 201986}, empty(0), 0, 1000, true, false, "not the one"},
		{"InteriorLost", fg.LogPosition{Store: self, Log: id, Applied: 100, Seen: 300}, held(101, 300, 150, 151, 152), 0, 3, false, false, "3 between"},
		{"TailLost", fg.LogPosition{Store: self, Log: id, Applied: 100, Seen: 1100}, held(101, 540), 0, 560, false, false, "560 after its last"},
		{"TailLostBelowStore", fg.LogPosition{Store: self, Log: id, Applied: 600, Seen: 1100}, held(601, 540), 0, 500, false, false, "lost its events after sequence 540"},
		{"SequenceWentBackNothingLost", fg.LogPosition{Store: self, Log: id, Applied: 600, Seen: 600}, empty(540), 0, 0, false, true, ""},
		{"StoreReplacedUnderLog", fg.LogPosition{Store: self}, held(3, 1002), 9, 2, true, false, "not the one this event log has been feeding"},
		{"SameStoreOnRecord", fg.LogPosition{Store: self, Log: id, Applied: 2, Seen: 1002}, held(3, 1002), self, 0, false, false, ""},
		{"FrontAndTail", fg.LogPosition{Store: self, Log: id, Applied: 100, Seen: 400}, held(201, 300), 0, 200, false, false, "100 more after it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := Log{State: tt.st, ID: id, FedStore: tt.fed}
			if tt.name == "LogReplaced" {
				log.ID = other
			}
			d, realign := Check(tt.rec, log)
			if realign != tt.realign {
				t.Errorf("realign = %v, want %v", realign, tt.realign)
			}
			if tt.lost == 0 && !tt.replace {
				if d != nil {
					t.Fatalf("damage %q, want none", d)
				}
				return
			}
			if d == nil {
				t.Fatalf("no damage, want %d lost", tt.lost)
			}
			if d.Lost != tt.lost || d.Replaced != tt.replace || !strings.Contains(d.Error(), tt.says) {
				t.Errorf("damage %d lost, replaced %v: %q; want %d, %v, saying %q", d.Lost, d.Replaced, d, tt.lost, tt.replace, tt.says)
			}
		})
	}
}
