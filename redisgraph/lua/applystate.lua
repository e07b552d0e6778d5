-- A replayed change of user u's account state (Apply), after version.lua
-- and lib.lua: written as lua/state.lua writes a live one (h's s and sv,
-- u in the jobs set) unless h already has a change of state of an equal
-- or higher version; u's clock passes it either way.
--
-- KEYS: 1 h(u), 2 the jobs set of u's slot.
-- ARGV: 1 the state's word, 2 its version, 3 u in decimal.
--
-- Returns {CHANGED (1) or NONE (0), u's stamp}.
local h, v = KEYS[1], ARGV[2]
local sv = redis.call('HGET', h, 'sv')
observe(h, v)
if sv and not vless(sv, v) then return {0, stamp(h)} end
redis.call('HSET', h, 's', ARGV[1], 'sv', v)
redis.call('ZADD', KEYS[2], string.format('%d', vms(v)), ARGV[3])
return {1, redis.call('HINCRBY', h, 'st', 1)}
