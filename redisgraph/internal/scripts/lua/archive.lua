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
-- KEYS (scripts.ArchiveKeys): SET u's sorted set of the side, VERSIONS its
--       versions hash, H h(u), RF rf(u), then COUNTERPARTS, four keys for
--       each counterpart c, of the side opposite: c's sorted set, its
--       versions hash, h(c) and rf(c).
-- ARGV (scripts.ArchiveArgs): STEP STEP_HIDE or STEP_SHOW, MINE u's side
--       code, THEIRS the counterparts' side code, USER_MEMBER u as a
--       member, then MEMBERS, the members of the counterparts, in the
--       order of their keys.
--
-- STEP may also be STEP_DROP, for a deleted u: the hidden edges of u's
-- side become tombstones on both sides (the edge off at its version:
-- nothing is kept of an edge with a deleted user), sets and counters
-- untouched.
--
-- Each step goes only as far as u's state (h's field H_STATE) says: hide and
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
local op = ARGV[A_STEP]
local hide = op == STEP_HIDE
local z, vh, h, rf = KEYS[K_SET], KEYS[K_VERSIONS], KEYS[K_H], KEYS[K_RF]
local mine, theirs, um = sides[ARGV[A_MINE]], sides[ARGV[A_THEIRS]], ARGV[A_USER_MEMBER]
local myFlag, theirFlag = flagOf[ARGV[A_MINE]], flagOf[ARGV[A_THEIRS]]
if not mine or not theirs then return redis.error_reply('unknown side ' .. ARGV[A_MINE] .. ' or ' .. ARGV[A_THEIRS]) end
local cluster = not KEYS[K_COUNTERPARTS]
local nm = #ARGV - A_MEMBERS + 1
if cluster then
  nm = nm / 2
else
  local us = redis.call('HGET', h, H_STATE) or STATE_ACTIVE
  if (op == STEP_SHOW) ~= (us == STATE_ACTIVE) or op == STEP_DROP and us ~= STATE_DELETED then return -1 end
end
-- counterpart returns key j (0 to 3) of counterpart i (standalone only).
local function counterpart(i, j) return KEYS[K_COUNTERPARTS + 4 * (i - 1) + j] end
-- A show's answer from pairside.lua, as the counterpart's state it tells.
local answered = {[tostring(DONE)] = STATE_ACTIVE, [tostring(WAIT)] = 'hidden', [tostring(ENDED)] = STATE_DELETED, [tostring(NEWER)] = 'newer'}

-- The members, each once (an HSCAN may return a member twice), with the
-- index of its keys (and answer).
local ms, at, seen = {}, {}, {}
for i = A_MEMBERS, A_MEMBERS + nm - 1 do
  if not seen[ARGV[i]] then
    seen[ARGV[i]] = true
    ms[#ms + 1], at[#ms + 1] = ARGV[i], i - A_MEMBERS + 1
  end
end
-- u's keys, and the chunk of u's side of each member (chunks.lua),
-- each chunk read by one HMGET (and ZMSCORE).
local uk = {[mine[1]] = z, [mine[2]] = vh, h = h, rf = rf}
local chunkOfM, chunks = {}, {}
for i, m in ipairs(ms) do
  local c = ck(uk, mine[1], m)
  if not chunks[c] then chunks[c] = {} end
  local cm = chunks[c]
  cm[#cm + 1] = i
  chunkOfM[i] = c
end
local vers, scores = {}, {}
for c, is in pairs(chunks) do
  local cms = {}
  for j, i in ipairs(is) do cms[j] = ms[i] end
  local vs = redis.call('HMGET', ck(uk, mine[2], cms[1]), unpack(cms))
  local sc = hide and redis.call('ZMSCORE', c, unpack(cms))
  for j, i in ipairs(is) do
    vers[i] = vs[j]
    if sc then scores[i] = sc[j] end
  end
end
-- What to write on u's side, by chunk: {ZREM or ZADD args, HSET args,
-- HDEL args, a member}.
local writes = {}
local function w(i)
  local c = chunkOfM[i]
  if not writes[c] then writes[c] = {{}, {}, {}, ms[i]} end
  return writes[c]
end

-- For each member changed: its version (without the 'h'), on u's side.
local changed, dropped, nset = {}, {}, 0
for i, m in ipairs(ms) do
  local v
  local x = w(i)
  local zargs, setv, delv = x[1], x[2], x[3]
  if hide then
    if scores[i] then
      v = vers[i]
      if not v then v = vfmt(tonumber(scores[i]), 0) end
      zargs[#zargs + 1] = m
      setv[#setv + 1], setv[#setv + 2] = m, HIDDEN .. v
      nset = nset + 1
    end
  elseif vers[i] and string.sub(vers[i], 1, 1) == HIDDEN then
    v = string.sub(vers[i], 2)
    local cs = STATE_ACTIVE
    if op == STEP_SHOW and cluster then
      cs = answered[ARGV[A_MEMBERS + nm + at[i] - 1]]
    elseif op == STEP_SHOW then
      cs = redis.call('HGET', counterpart(at[i], 2), H_STATE) or STATE_ACTIVE
    end
    if op == STEP_DROP or cs == STATE_DELETED then
      setv[#setv + 1], setv[#setv + 2] = m, v
      nset = nset + 1
      dropped[#dropped + 1] = {m, at[i], v}
      v = nil
    elseif cs ~= STATE_ACTIVE then
      v = nil -- the counterpart is hidden: its job shows the edge
    else
      zargs[#zargs + 1], zargs[#zargs + 2] = string.format('%d', vms(v)), m
      if vctr(v) ~= 0 then
        setv[#setv + 1], setv[#setv + 2] = m, v
        nset = nset + 1
      else
        delv[#delv + 1] = m
      end
    end
  end
  if v then changed[#changed + 1] = {m, at[i], v} end
end

-- The dropped: a tombstone for the hidden edge on both sides, nothing
-- else (nh counts each user's hidden edges: see lib.lua's set).
-- theirKeys returns the keys of counterpart i (standalone only), as
-- lib.lua's ck takes them.
local function theirKeys(i)
  return {[theirs[1]] = counterpart(i, 0), [theirs[2]] = counterpart(i, 1), h = counterpart(i, 2), rf = counterpart(i, 3)}
end
for _, c in ipairs(cluster and {} or dropped) do
  local ck_ = theirKeys(c[2])
  redis.call('HSET', ck(ck_, theirs[2], um), um, c[3])
  local hv = redis.call('HMGET', ck_.h, H_STAMP, H_HIDDEN)
  redis.call('HSET', ck_.h, H_STAMP, tonumber(hv[1] or '0') + 1, H_HIDDEN, tonumber(hv[2] or '0') - 1)
end
-- writeVersions writes the versions of u's side, chunk by chunk, and
-- splits the chunks grown to their bound.
local function writeVersions()
  for _, x in pairs(writes) do
    local cv = ck(uk, mine[2], x[4])
    if #x[2] > 0 then redis.call('HSET', cv, unpack(x[2])) end
    if #x[3] > 0 then redis.call('HDEL', cv, unpack(x[3])) end
  end
  for _, x in pairs(writes) do
    if #x[2] > 0 then fit(uk, mine[2], x[4]) end
  end
end
if #dropped > 0 then redis.call('HINCRBY', h, H_HIDDEN, -#dropped) end
if #dropped > 0 and #changed == 0 then
  writeVersions()
  redis.call('HINCRBY', h, H_STAMP, 1)
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
for c, x in pairs(writes) do
  if #x[1] > 0 then
    if hide then
      redis.call('ZREM', c, unpack(x[1]))
    else
      redis.call('ZADD', c, unpack(x[1]))
    end
  end
end
if not hide then
  for _, x in pairs(writes) do
    if #x[1] > 0 then fit(uk, mine[1], x[4]) end
  end
end
writeVersions()
redis.call('HINCRBY', h, mine[3], d * n)
redis.call('HINCRBY', h, H_HIDDEN, -d * n)
redis.call('HINCRBY', h, H_STAMP, 1)
n = n + #dropped
if mine[4] and nset > 0 then redis.call('HDEL', h, mine[4]) end
if myFlag then
  for _, c in ipairs(changed) do
    flag(ck(uk, 'rf', c[1]), c[1], myFlag, d)
    if d > 0 then fit(uk, 'rf', c[1]) end
  end
end

if cluster then return n end
for _, c in ipairs(changed) do
  local i, v = c[2], c[3]
  local tk = theirKeys(i)
  local cz, cvh, ch, crf = ck(tk, theirs[1], um), ck(tk, theirs[2], um), tk.h, ck(tk, 'rf', um)
  local hv = redis.call('HMGET', ch, theirs[3], H_STAMP, H_HIDDEN)
  local wrote = true
  if hide then
    redis.call('ZREM', cz, um)
    redis.call('HSET', cvh, um, HIDDEN .. v)
  else
    redis.call('ZADD', cz, string.format('%d', vms(v)), um)
    if vctr(v) ~= 0 then
      redis.call('HSET', cvh, um, v)
    else
      wrote = false
      redis.call('HDEL', cvh, um)
    end
  end
  redis.call('HSET', ch, theirs[3], tonumber(hv[1] or '0') + d, H_STAMP, tonumber(hv[2] or '0') + 1,
    H_HIDDEN, tonumber(hv[3] or '0') - d)
  if theirs[4] and wrote then redis.call('HDEL', ch, theirs[4]) end
  if theirFlag then flag(crf, um, theirFlag, d) end
  if hide then
    fit(tk, theirs[2], um)
  else
    fit(tk, theirs[1], um)
    if wrote then fit(tk, theirs[2], um) end
    if theirFlag then fit(tk, 'rf', um) end
  end
end
return n
