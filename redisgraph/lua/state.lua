-- A live change of user u's account state (docs/design/
-- states.md), after version.lua, lib.lua and live.lua: h(u)'s field s holds
-- the state's word (none: active, never set) and sv the version of its
-- last change, from u's clock; the event goes to the outbox as every
-- change's does, and u goes into the jobs set of its slot (scored with the
-- change's ms), where the job that brings u's edges to the state finds it.
--
-- KEYS: 1 h(u), 2 the outbox stream of u's slot, 3 the jobs set of u's slot.
-- ARGV: 1 the state's word, 2 '', 3 the client's time in ms (decimal), 4 '0',
--       5 the outbox bound, 6 u in decimal, 7 '0', 8 '0' (no write rate:
--       a change of state is not charged to the user's).
--
-- Returns {NONE, sv} when u already has the state (sv ZERO: never set);
-- {TARGET_INACTIVE}: u is deleted, which is final; {FULL}, {LOST} as change.lua's;
-- {CHANGED, v, the event's outbox entry id, u's stamp}. Nothing is
-- changed unless the status is CHANGED.
local h, word = KEYS[1], ARGV[1]
local hv = redis.call('HMGET', h, 'clk', 's', 'sv')
local now = hv[2] or 'active'
if now == word then return {NONE, hv[3] or ZERO} end
if now == 'deleted' then return {TARGET_INACTIVE} end
if redis.call('XLEN', KEYS[2]) >= tonumber(ARGV[5]) then return {FULL} end
local v = nextv(hv[1])
local id = redis.call('XADD', KEYS[2], 'NOMKSTREAM', '*', 'u', ARGV[6], 't', '0', 'op', 'state', 'state', word, 'v', v)
if not id then return {LOST} end
redis.call('HSET', h, 's', word, 'sv', v, 'clk', v)
redis.call('ZADD', KEYS[3], string.format('%d', vms(v)), ARGV[6])
return {CHANGED, v, id, redis.call('HINCRBY', h, 'st', 1)}
