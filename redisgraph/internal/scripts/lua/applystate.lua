-- A replayed change of user u's account state (Apply), after version.lua
-- and lib.lua: written as lua/state.lua writes a live one (h's s and sv,
-- u in the jobs set) unless h already has a change of state of an equal
-- or higher version; u's clock passes it either way.
--
-- KEYS (scripts.ApplyStateKeys): H h(u), JOBS the jobs set of u's slot.
-- ARGV (scripts.ApplyStateArgs): STATE the state's word, VERSION its
--       version, USER u in decimal.
--
-- Returns {CHANGED (1) or NONE (0), u's stamp}.
local h, v = KEYS[K_H], ARGV[A_VERSION]
local sv = redis.call('HGET', h, H_STATE_V)
observe(h, v)
if sv and not vless(sv, v) then return {0, stamp(h)} end
redis.call('HSET', h, H_STATE, ARGV[A_STATE], H_STATE_V, v)
redis.call('ZADD', KEYS[K_JOBS], string.format('%d', vms(v)), ARGV[A_USER])
return {1, redis.call('HINCRBY', h, H_STAMP, 1)}
