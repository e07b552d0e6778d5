package redisgraph

import (
	"fmt"
	"strings"
	"testing"
)

// TestChangeStatus: lua/change.lua names its statuses with the values of
// write.go's constants.
func TestChangeStatus(t *testing.T) {
	want := fmt.Sprintf("\nlocal NONE, CHANGED, LIMIT, FULL, LOST, RATE = %d, %d, %d, %d, %d, %d\n",
		changeNone, changeMade, changeLimit, changeOutboxFull, changeDataLost, changeRateLimited)
	if !strings.Contains(luaChange, want) {
		t.Errorf("lua/change.lua does not define its statuses as write.go does:%s", want)
	}
}
