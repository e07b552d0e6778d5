-- The archive step of an account-state job on a standalone Redis: hides a
-- batch of a user u's follows of one direction, on both sides, or shows
-- them again (docs/DESIGN.md "Account states"). A hidden follow leaves
-- both sorted sets and both counters, and its version stays in both
-- versions hashes, marked: 'h' and the 16 hex digits. So the edge's
-- since (the millisecond part) and its version are kept for the restore,
-- each of its sides and counts changes with the other in one script, and
-- a list and its count never disagree.
--
-- KEYS: 1 u's sorted set of the direction (in or out), 2 its versions hash
--       (iv or ov), 3 h(u), then three keys for each counterpart c: c's
--       sorted set of the other direction, its versions hash, and h(c).
-- ARGV: 1 'hide' or 'show', 2 the counter of u's side (nin or nout), 3 that
--       of the counterparts' side, 4 u as a member, then the members of
--       the counterparts, in the order of their keys.
--
-- Returns how many follows it hid or showed. A member named twice counts
-- once, and one that is no longer on u's side (hide) or no longer marked
-- (show) is skipped: the step can be run again over the same members, and
-- changes nothing the second time.
--
-- u's side is written by one call of each command for the whole batch,
-- and each counterpart's by a few: this is what keeps a batch of a user
-- with millions of followers well under a millisecond.
local hide = ARGV[1] == 'hide'
local z, vh, h = KEYS[1], KEYS[2], KEYS[3]
local counter, other, um = ARGV[2], ARGV[3], ARGV[4]
-- The members, each once (an HSCAN may return a member twice), with the
-- index of its keys.
local ms, at, seen = {}, {}, {}
for i = 5, #ARGV do
  if not seen[ARGV[i]] then
    seen[ARGV[i]] = true
    ms[#ms + 1], at[#ms + 1] = ARGV[i], i - 4
  end
end
local vers = redis.call('HMGET', vh, unpack(ms))
local scores
if hide then scores = redis.call('ZMSCORE', z, unpack(ms)) end

-- For each member changed: its version (unmarked), on u's side.
local changed, zargs, setv, delv = {}, {}, {}, {}
for i, m in ipairs(ms) do
  local v
  if hide then
    if scores[i] then
      v = vers[i]
      if not v then v = vfmt(tonumber(scores[i]), 0) end
      zargs[#zargs + 1] = m
      setv[#setv + 1], setv[#setv + 2] = m, 'h' .. v
    end
  elseif vers[i] and string.sub(vers[i], 1, 1) == 'h' then
    v = string.sub(vers[i], 2)
    zargs[#zargs + 1], zargs[#zargs + 2] = string.format('%d', vms(v)), m
    if vctr(v) ~= 0 then
      setv[#setv + 1], setv[#setv + 2] = m, v
    else
      delv[#delv + 1] = m
    end
  end
  if v then changed[#changed + 1] = {at[i], v} end
end
local n = #changed
if n == 0 then return 0 end

if hide then
  redis.call('ZREM', z, unpack(zargs))
else
  redis.call('ZADD', z, unpack(zargs))
end
if #setv > 0 then redis.call('HSET', vh, unpack(setv)) end
if #delv > 0 then redis.call('HDEL', vh, unpack(delv)) end
local d = n
if hide then d = -n end
redis.call('HINCRBY', h, counter, d)
redis.call('HINCRBY', h, 'st', 1)
-- h's field e says ov is empty (change.lua): a marked version fills it.
if counter == 'nout' then redis.call('HDEL', h, 'e') end

d = 1
if hide then d = -1 end
for _, c in ipairs(changed) do
  local i, v = c[1], c[2]
  local cz, cvh, ch = KEYS[3 * i + 1], KEYS[3 * i + 2], KEYS[3 * i + 3]
  local hv = redis.call('HMGET', ch, other, 'st')
  if hide then
    redis.call('ZREM', cz, um)
    redis.call('HSET', cvh, um, 'h' .. v)
  else
    redis.call('ZADD', cz, string.format('%d', vms(v)), um)
    if vctr(v) ~= 0 then
      redis.call('HSET', cvh, um, v)
    else
      redis.call('HDEL', cvh, um)
    end
  end
  redis.call('HSET', ch, other, tonumber(hv[1] or '0') + d, 'st', tonumber(hv[2] or '0') + 1)
  if other == 'nout' then redis.call('HDEL', ch, 'e') end
end
return n
