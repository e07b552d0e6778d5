package redisgraph

import (
	"fmt"
	"strings"
	"testing"
)

// TestChangeStatus: lua/change.lua, lua/edge.lua, lua/state.lua and lua/effects.lua name
// their statuses with the values of write.go's constants.
func TestChangeStatus(t *testing.T) {
	for _, s := range []struct{ name, src, want string }{
		{"change.lua", luaChange, fmt.Sprintf("\nlocal NONE, CHANGED, LIMIT, FULL, LOST, RATE, SLOW, USER_INACTIVE, TARGET_INACTIVE = %d, %d, %d, %d, %d, %d, %d, %d, %d\n",
			changeNone, changeMade, changeLimit, changeOutboxFull, changeDataLost, changeRateLimited, changeSlow, changeUserInactive, changeTargetInactive)},
		{"edge.lua", luaEdge, fmt.Sprintf("\nlocal NONE, CHANGED, LIMIT, FULL, LOST, RATE, BLOCKED, NOREQUEST, USER_INACTIVE, TARGET_INACTIVE = %d, %d, %d, %d, %d, %d, %d, %d, %d, %d\n",
			changeNone, changeMade, changeLimit, changeOutboxFull, changeDataLost, changeRateLimited, changeBlocked, changeNoRequest, changeUserInactive, changeTargetInactive)},
		{"state.lua", luaState, fmt.Sprintf("\nlocal NONE, CHANGED, FULL, LOST, FINAL = %d, %d, %d, %d, %d\n",
			changeNone, changeMade, changeOutboxFull, changeDataLost, changeTargetInactive)},
		{"effects.lua", luaEffects, fmt.Sprintf("\nlocal NONE, CHANGED, BLOCKED, TARGET_INACTIVE = %d, %d, %d, %d\n",
			changeNone, changeMade, changeBlocked, changeTargetInactive)},
	} {
		if !strings.Contains(s.src, s.want) {
			t.Errorf("lua/%s does not define its statuses as write.go does:%s", s.name, s.want)
		}
	}
}
