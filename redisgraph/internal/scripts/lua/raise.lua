-- The deployment's tombstone horizon (redisgraph's TombstoneHorizon)
-- raised to a version, never lowered.
--
-- KEYS (scripts.RaiseKeys): HORIZON its key.
-- ARGV (scripts.RaiseArgs): VERSION the version (16 hex digits).
--
-- Returns the horizon after.
local h = redis.call('GET', KEYS[K_HORIZON])
if h and not vless(h, ARGV[A_VERSION]) then return h end
redis.call('SET', KEYS[K_HORIZON], ARGV[A_VERSION])
return ARGV[A_VERSION]
