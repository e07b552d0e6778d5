package redisgraph

import (
	"fmt"
	"strings"
	"testing"
)

// TestChangeStatus: lua/change.lua, lua/edge.lua and lua/effects.lua name
// their statuses with the values of write.go's constants.
func TestChangeStatus(t *testing.T) {
	for _, s := range []struct{ name, src, want string }{
		{"change.lua", luaChange, fmt.Sprintf("\nlocal NONE, CHANGED, LIMIT, FULL, LOST, RATE, SLOW = %d, %d, %d, %d, %d, %d, %d\n",
			changeNone, changeMade, changeLimit, changeOutboxFull, changeDataLost, changeRateLimited, changeSlow)},
		{"edge.lua", luaEdge, fmt.Sprintf("\nlocal NONE, CHANGED, LIMIT, FULL, LOST, RATE, BLOCKED, NOREQUEST = %d, %d, %d, %d, %d, %d, %d, %d\n",
			changeNone, changeMade, changeLimit, changeOutboxFull, changeDataLost, changeRateLimited, changeBlocked, changeNoRequest)},
		{"effects.lua", luaEffects, fmt.Sprintf("\nlocal NONE, CHANGED, BLOCKED = %d, %d, %d\n", changeNone, changeMade, changeBlocked)},
	} {
		if !strings.Contains(s.src, s.want) {
			t.Errorf("lua/%s does not define its statuses as write.go does:%s", s.name, s.want)
		}
	}
}
