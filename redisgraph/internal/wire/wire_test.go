package wire

import (
	"testing"

	fg "github.com/followgraph/followgraph"
)

func TestMember(t *testing.T) {
	ids := []fg.UserID{1, 2, 255, 256, 1 << 32, fg.MaxUserID - 1, fg.MaxUserID}
	for i, id := range ids {
		m := Member(id)
		if got, ok := MemberID(m); !ok || got != id {
			t.Errorf("MemberID(Member(%d)) = %d, %v", id, got, ok)
		}
		if i > 0 && Member(ids[i-1]) >= m {
			t.Errorf("Member(%d) does not sort before Member(%d)", ids[i-1], id)
		}
	}
	for _, bad := range []string{"", "1234567", "123456789", "\x00\x00\x00\x00\x00\x00\x00\x00", "\xff\x00\x00\x00\x00\x00\x00\x01"} {
		if id, ok := MemberID(bad); ok {
			t.Errorf("MemberID(%q) = %d, true; want false", bad, id)
		}
	}
}
