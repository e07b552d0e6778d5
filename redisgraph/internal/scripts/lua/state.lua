-- A live change of user u's account state (docs/design/states.md), after
-- version.lua: h(u)'s field H_STATE holds the state's word (none: active,
-- never set) and H_STATE_V the version of its last change, from u's
-- clock; the event goes to the outbox as every change's does, and u goes
-- into the jobs set of its slot (scored with the change's ms), where the
-- job that brings u's edges to the state finds it. A change of state is
-- not charged to the user's write rate.
--
-- KEYS (scripts.StateKeys): H h(u), OUTBOX the outbox stream of u's slot,
--       JOBS the jobs set of u's slot.
-- ARGV (scripts.StateArgs): STATE the state's word, NOW the client's time
--       in ms (decimal), OUTBOX_LIMIT the outbox bound, USER u in decimal,
--       REGION the region of the versions u's changes take (0: none).
--
-- Returns {NONE, the state's version} when u already has the state
-- (ZERO: never set); {TARGET_INACTIVE}: u is deleted, which is final;
-- {FULL}, {LOST} as change.lua's; {CHANGED, v, the event's outbox entry
-- id, u's stamp}. Nothing is changed unless the status is CHANGED.
local h, word = KEYS[K_H], ARGV[A_STATE]
local hv = redis.call('HMGET', h, H_CLOCK, H_STATE, H_STATE_V)
local now = hv[2] or STATE_ACTIVE
if now == word then return {NONE, hv[3] or ZERO} end
if now == STATE_DELETED then return {TARGET_INACTIVE} end
if redis.call('XLEN', KEYS[K_OUTBOX]) >= tonumber(ARGV[A_OUTBOX_LIMIT]) then return {FULL} end
local v = nextv(hv[1], tonumber(ARGV[A_NOW]), tonumber(ARGV[A_REGION]))
local id = redis.call('XADD', KEYS[K_OUTBOX], 'NOMKSTREAM', '*', E_USER, ARGV[A_USER], E_TARGET, '0', E_OP, OP_STATE,
  E_STATE, word, E_VERSION, v)
if not id then return {LOST} end
redis.call('HSET', h, H_STATE, word, H_STATE_V, v, H_CLOCK, v)
redis.call('ZADD', KEYS[K_JOBS], string.format('%d', vms(v)), ARGV[A_USER])
return {CHANGED, v, id, redis.call('HINCRBY', h, H_STAMP, 1)}
