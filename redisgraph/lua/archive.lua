-- The archive step of an account-state job on a standalone Redis: hides a
-- batch of a user u's edges of one side code (lib.lua's sides: fo, fi, bo,
-- bi, ro, ri), on both sides, or shows them again (docs/design/
-- states.md). A hidden edge leaves both sorted sets, both counters
-- and both flags (rf), and its version stays in both versions hashes as
-- a hidden version: 'h' and the 16 hex digits (h's field nh counts a
-- user's hidden edges).
-- So the edge's since (the millisecond part) and its version are kept for
-- the restore, each of its sides and counts changes with the other in one
-- script, and a list and its count never disagree.
--
-- KEYS: 1 u's sorted set of the side, 2 its versions hash, 3 h(u), 4 rf(u),
--       then four keys for each counterpart c, of the side opposite: c's
--       sorted set, its versions hash, h(c) and rf(c).
-- ARGV: 1 'hide' or 'show', 2 u's side code, 3 the counterparts' side code,
--       4 u as a member, then the members of the counterparts, in the order
--       of their keys.
--
-- ARGV 1 may also be 'drop', for a deleted u: the hidden edges of u's
-- side become tombstones on both sides (the edge off at its version:
-- nothing is kept of an edge with a deleted user), sets and counters
-- untouched.
--
-- Each step goes only as far as u's state (h's field s) says: hide and
-- drop need u not active (drop: deleted), show needs u active, else the
-- step returns -1 having changed nothing (the state changed since its job
-- began: the job of the new state takes over). A show leaves hidden an
-- edge with a counterpart still hidden (that one's job shows it), and
-- drops one with a counterpart deleted.
--
-- On a Redis Cluster the counterparts' keys are not given (KEYS is u's
-- four), since they are in other slots: pairside.lua has written each
-- counterpart's side first, and ARGV holds, after the members, its
-- answer for each, in their order. The script then writes u's side to
-- match: a hide or a drop whatever the answers (a counterpart that held
-- a newer change has its second step on its way here), a show as the
-- answer says (DONE: shown, WAIT: kept, ENDED: dropped, NEWER: kept),
-- and it does not check u's state: it completes what the first step
-- did, and the job of a state changed since undoes it.
--
-- Returns how many edges it hid, showed or dropped. A member named twice
-- counts once, and one that is no longer on u's side (hide) or no longer
-- hidden (show, drop) is skipped: the step can be run again over the same
-- members, and changes nothing the second time.
--
-- u's side is written by one call of each command for the whole batch,
-- and each counterpart's by a few: this is what keeps a batch of a user
-- with millions of followers near a millisecond.

-- The sides, by code (layout.lua): [3] the counter in h, [4] the field
-- of h a write to the versions hash removes (change.lua's e); flagOf has
-- the bit in rf.
local op = ARGV[1]
local hide = op == 'hide'
local z, vh, h, rf = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local mine, theirs, um = sides[ARGV[2]], sides[ARGV[3]], ARGV[4]
local myFlag, theirFlag = flagOf[ARGV[2]], flagOf[ARGV[3]]
if not mine or not theirs then return redis.error_reply('unknown side ' .. ARGV[2] .. ' or ' .. ARGV[3]) end
local cluster = #KEYS == 4
local nm = #ARGV - 4
if cluster then
  nm = nm / 2
else
  local us = redis.call('HGET', h, 's') or 'active'
  if (op == 'show') ~= (us == 'active') or op == 'drop' and us ~= 'deleted' then return -1 end
end
-- A show's answer from pairside.lua, as the counterpart's state it tells.
local answered = {[tostring(DONE)] = 'active', [tostring(WAIT)] = 'hidden', [tostring(ENDED)] = 'deleted', [tostring(NEWER)] = 'newer'}

-- The members, each once (an HSCAN may return a member twice), with the
-- index of its keys (and answer).
local ms, at, seen = {}, {}, {}
for i = 5, 4 + nm do
  if not seen[ARGV[i]] then
    seen[ARGV[i]] = true
    ms[#ms + 1], at[#ms + 1] = ARGV[i], i - 4
  end
end
local vers = redis.call('HMGET', vh, unpack(ms))
local scores
if hide then scores = redis.call('ZMSCORE', z, unpack(ms)) end

-- For each member changed: its version (without the 'h'), on u's side.
local changed, zargs, setv, delv, dropped = {}, {}, {}, {}, {}
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
    local cs = 'active'
    if op == 'show' and cluster then
      cs = answered[ARGV[4 + nm + at[i]]]
    elseif op == 'show' then
      cs = redis.call('HGET', KEYS[4 * at[i] + 3], 's') or 'active'
    end
    if op == 'drop' or cs == 'deleted' then
      setv[#setv + 1], setv[#setv + 2] = m, v
      dropped[#dropped + 1] = {m, at[i], v}
      v = nil
    elseif cs ~= 'active' then
      v = nil -- the counterpart is hidden: its job shows the edge
    else
      zargs[#zargs + 1], zargs[#zargs + 2] = string.format('%d', vms(v)), m
      if vctr(v) ~= 0 then
        setv[#setv + 1], setv[#setv + 2] = m, v
      else
        delv[#delv + 1] = m
      end
    end
  end
  if v then changed[#changed + 1] = {m, at[i], v} end
end

-- The dropped: a tombstone for the hidden edge on both sides, nothing
-- else (nh counts each user's hidden edges: see lib.lua's set).
for _, c in ipairs(cluster and {} or dropped) do
  local ch = KEYS[4 * c[2] + 3]
  redis.call('HSET', KEYS[4 * c[2] + 2], um, c[3])
  local hv = redis.call('HMGET', ch, 'st', 'nh')
  redis.call('HSET', ch, 'st', tonumber(hv[1] or '0') + 1, 'nh', tonumber(hv[2] or '0') - 1)
end
if #dropped > 0 then redis.call('HINCRBY', h, 'nh', -#dropped) end
if #dropped > 0 and #changed == 0 then
  redis.call('HSET', vh, unpack(setv))
  redis.call('HINCRBY', h, 'st', 1)
  return #dropped
end
local n = #changed
if n == 0 then return 0 end

-- flag moves the bit f of member m in the flags set key by d (±1).
local function flag(key, m, f, d)
  if tonumber(redis.call('ZINCRBY', key, d * f, m)) == 0 then redis.call('ZREM', key, m) end
end

local d = 1
if hide then d = -1 end
if hide then
  redis.call('ZREM', z, unpack(zargs))
else
  redis.call('ZADD', z, unpack(zargs))
end
if #setv > 0 then redis.call('HSET', vh, unpack(setv)) end
if #delv > 0 then redis.call('HDEL', vh, unpack(delv)) end
redis.call('HINCRBY', h, mine[3], d * n)
redis.call('HINCRBY', h, 'nh', -d * n)
redis.call('HINCRBY', h, 'st', 1)
n = n + #dropped
if mine[4] and #setv > 0 then redis.call('HDEL', h, mine[4]) end
if myFlag then
  for _, c in ipairs(changed) do flag(rf, c[1], myFlag, d) end
end

if cluster then return n end
for _, c in ipairs(changed) do
  local i, v = c[2], c[3]
  local cz, cvh, ch, crf = KEYS[4 * i + 1], KEYS[4 * i + 2], KEYS[4 * i + 3], KEYS[4 * i + 4]
  local hv = redis.call('HMGET', ch, theirs[3], 'st', 'nh')
  local wrote = true
  if hide then
    redis.call('ZREM', cz, um)
    redis.call('HSET', cvh, um, 'h' .. v)
  else
    redis.call('ZADD', cz, string.format('%d', vms(v)), um)
    if vctr(v) ~= 0 then
      redis.call('HSET', cvh, um, v)
    else
      wrote = false
      redis.call('HDEL', cvh, um)
    end
  end
  redis.call('HSET', ch, theirs[3], tonumber(hv[1] or '0') + d, 'st', tonumber(hv[2] or '0') + 1,
    'nh', tonumber(hv[3] or '0') - d)
  if theirs[4] and wrote then redis.call('HDEL', ch, theirs[4]) end
  if theirFlag then flag(crf, um, theirFlag, d) end
end
return n
