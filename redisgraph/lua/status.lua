-- Code generated from redisgraph/internal/layout by go generate; DO NOT EDIT.
-- The statuses a write script returns first (layout.Status).
local NONE, CHANGED, LIMIT, FULL, LOST, RATE, BLOCKED, NOREQUEST, SLOW, USER_INACTIVE, TARGET_INACTIVE = 0, 1, -1, -2, -3, -4, -5, -6, -7, -8, -9
