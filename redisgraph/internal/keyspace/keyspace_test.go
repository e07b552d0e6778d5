package keyspace

import "testing"

func TestSlots(t *testing.T) {
	if got := CRC16("123456789"); got != 0x31C3 {
		t.Errorf("CRC16(123456789) = %#x, want 0x31c3", got)
	}
	tags := slotTags()
	for slot, tag := range tags {
		if got := CRC16(tag) & (Slots - 1); got != uint16(slot) {
			t.Fatalf("the tag %q of slot %d hashes to slot %d", tag, slot, got)
		}
	}
}
