-- A live follow or unfollow of user u → target t, decided on u's side.
--
-- KEYS: 1 out(u), 2 ov(u), 3 h(u), 4 the outbox stream of u's slot, and on
--       a standalone Redis also 5 in(t), 6 iv(t), 7 h(t).
-- ARGV: 1 'follow' or 'unfollow', 2 t as a member, 3 the client's time as a
--       version, 4 the following limit (0: none), 5 the outbox bound,
--       6 u and 7 t in decimal, and with the extra keys 8 u as a member.
--
-- Returns {0, version}: nothing to change, version the edge's (ZERO if
-- none); {-1}: the following limit is reached; {-2}: the outbox is full;
-- {1, version, u's stamp[, t's stamp]}: changed, as the event in the outbox
-- says. Nothing is changed unless the first element is 1.
local op = ARGV[1]
local cur, live, stored = edge(KEYS[1], KEYS[2], ARGV[2])
if (op == 'follow') == live then return {0, cur} end
if op == 'follow' then
  local max = tonumber(ARGV[4])
  if max > 0 and tonumber(redis.call('HGET', KEYS[3], 'nout') or '0') >= max then return {-1} end
end
if redis.call('XLEN', KEYS[4]) >= tonumber(ARGV[5]) then return {-2} end
local v = tick(KEYS[3], ARGV[3])
local st = apply(KEYS[1], KEYS[2], KEYS[3], 'nout', ARGV[2], v, op, cur, live, stored)
redis.call('XADD', KEYS[4], '*', 'u', ARGV[6], 't', ARGV[7], 'op', op, 'v', v)
if KEYS[5] then
  return {1, v, st, apply(KEYS[5], KEYS[6], KEYS[7], 'nin', ARGV[8], v, op) or stamp(KEYS[7])}
end
return {1, v, st}
