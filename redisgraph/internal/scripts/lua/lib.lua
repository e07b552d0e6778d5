-- Shared by effects.lua, edge.lua and bulk.lua, after version.lua.
-- (change.lua, the script of every live follow and unfollow, does the
-- work of set below inline, with fewer calls into Redis.)

-- userKeys returns the keys of one user, given from KEYS[base] in the
-- order of USER_KEYS (layout.lua), by kind.
local function userKeys(base)
  local k = {}
  for i, kind in ipairs(USER_KEYS) do
    k[kind] = KEYS[base + i - 1]
  end
  return k
end

-- counts returns the numbers of chunks of the groups of the user whose
-- keys are uk (chunks.lua), by group, read once a script.
local chunkCounts = {}
local function counts(uk)
  local c = chunkCounts[uk.h]
  if c then return c end
  local names, fields = {}, {}
  for name, g in pairs(groups) do names[#names + 1], fields[#fields + 1] = name, g.field end
  local vals = redis.call('HMGET', uk.h, unpack(fields))
  c = {}
  for i, name in ipairs(names) do c[name] = tonumber(vals[i] or '1') end
  chunkCounts[uk.h] = c
  return c
end

-- chunkIndex returns the chunk of the user's key k (a suffix: 'in',
-- 'iv') that holds member m, and ck its key.
local function chunkIndex(uk, k, m)
  local n = counts(uk)[groupOf[k]]
  if n == 1 then return 0 end
  return chunkOf(hashOf(m), n)
end
local function ck(uk, k, m) return chunkKey(uk[k], chunkIndex(uk, k, m)) end

-- split splits the next chunk of group grp of the user whose keys are uk
-- (linear hashing: chunk n - lo, of the n, whose entries of hash n modulo
-- 2lo move to the new chunk n), and counts the split in h's GEN.
local function split(uk, grp)
  local c = counts(uk)
  local n = c[grp]
  local lo = 1
  while lo * 2 <= n do lo = lo * 2 end
  for _, k in ipairs(groups[grp].keys) do
    local from, to = chunkKey(uk[k], n - lo), chunkKey(uk[k], n)
    local all, step
    if isHash[k] then all, step = redis.call('HGETALL', from), 2 else all, step = redis.call('ZRANGE', from, 0, -1, 'WITHSCORES'), 2 end
    local moved, gone = {}, {}
    local function flush()
      if #gone == 0 then return end
      if isHash[k] then
        redis.call('HSET', to, unpack(moved))
        redis.call('HDEL', from, unpack(gone))
      else
        redis.call('ZADD', to, unpack(moved))
        redis.call('ZREM', from, unpack(gone))
      end
      moved, gone = {}, {}
    end
    for i = 1, #all, step do
      local m = all[i]
      if hashOf(m) % (2 * lo) == n then
        if isHash[k] then
          moved[#moved + 1], moved[#moved + 2] = m, all[i + 1]
        else
          moved[#moved + 1], moved[#moved + 2] = all[i + 1], m
        end
        gone[#gone + 1] = m
        if #gone == 1000 then flush() end
      end
    end
    flush()
  end
  c[grp] = n + 1
  redis.call('HSET', uk.h, groups[grp].field, n + 1)
  redis.call('HINCRBY', uk.h, H_GEN, 1)
end

-- fit splits the group of the user's key k after member m was added to
-- it, when m's chunk of k holds SPLIT_AT entries: once, or, while that
-- chunk holds MAXKEY, until it holds fewer (linear hashing splits the
-- chunks in turn, so m's may come only after others). It stops after 64
-- splits, which only members of colliding hashes would need.
local function fit(uk, k, m)
  for _ = 1, 64 do
    local key = ck(uk, k, m)
    local size
    if isHash[k] then size = redis.call('HLEN', key) else size = redis.call('ZCARD', key) end
    if size < SPLIT_AT then return end
    split(uk, groupOf[k])
    if size < MAXKEY then return end
  end
end

-- card returns the entries of the user's sorted set k (a suffix), over
-- its chunks.
local function cardOf(uk, k)
  local n, sum = counts(uk)[groupOf[k]], 0
  for j = 0, n - 1 do sum = sum + redis.call('ZCARD', chunkKey(uk[k], j)) end
  return sum
end

-- The sides of a user's edges, by code (layout.lua's sides: a kind's
-- letter, then o for the user's outgoing edges of that kind, i for the
-- incoming ones): the sorted set, its versions hash, the counter in h,
-- and, for the follows out only, the field of h that says the versions
-- hash is empty (see change.lua), which a write to it removes. 'p' is the
-- private setting: fields p ('1' while private) and pv (its version) of h.

-- state returns what side code of the user whose keys are uk holds of
-- member m, as {the edge's version (ZERO when it never existed), whether
-- it is on, whether the versions hash holds the version, the score (ms)
-- of an edge that is on, whether it is hidden}. A mute past its expiry is
-- on as stored (see expired). A hidden edge (archive.lua's 'h' and the
-- version, in the versions hash) is on as stored: a change applies
-- to it as to any (set keeps it out of the sorted set and the counter).
local function state(uk, code, m)
  if code == PRIVATE_CODE then
    local hv = redis.call('HMGET', uk.h, H_PRIVATE_V, H_PRIVATE)
    return {hv[1] or ZERO, hv[2] == '1', hv[1] ~= false}
  end
  local s = sides[code]
  local z = redis.call('ZSCORE', ck(uk, s[1], m), m)
  local v = redis.call('HGET', ck(uk, s[2], m), m)
  if v and string.sub(v, 1, 1) == HIDDEN then
    v = string.sub(v, 2)
    return {v, true, true, string.format('%d', vms(v)), true}
  end
  if v then return {v, z ~= false, true, z} end
  if z then return {vfmt(tonumber(z), 0), true, false, z} end
  return {ZERO, false, false}
end

-- expiry returns the expiry (ms) of the user's mute of m: 0 for none.
local function expiry(uk, m) return tonumber(redis.call('HGET', ck(uk, 'mx', m), m) or '0') end

-- needed reports whether an effect (side code, on) of an event of kind
-- ekind (a kind's letter) must be written over the edge's state st, given
-- that st's version is older than the event's: not when a follow or an
-- unfollow turns off the request of its direction of which the side has
-- no record at all, so that a follow does not leave a tombstone of a
-- request that never was. No event of an older version can then bring
-- that request back: effects.lua does not turn on a request older than
-- the follow of its direction. A block's ends of the follows and requests
-- between the two are written, tombstones included: an older follow of
-- another region's that arrives after an unblock stays ended, as the
-- block ended it (followgraph.Event.Effects).
local function needed(code, on, st, ekind)
  return on or st[1] ~= ZERO or string.sub(code, 1, 1) == ekind or ekind == KIND_BLOCK
end

-- flagOf (layout.lua) has the bits of the flags of the other kinds in a
-- user's sorted set rf, by side code: what Relations reads in one ZMSCORE.

-- pairState returns what the account states of two users (h's field s of
-- each; nil: active, or not known here) make of an edge between them:
-- nil when both are active, 'hidden' when one is deactivated or suspended,
-- 'deleted' when one is deleted (followgraph.Shown).
local function pairState(a, b)
  if a == STATE_DELETED or b == STATE_DELETED then return STATE_DELETED end
  if a and a ~= STATE_ACTIVE or b and b ~= STATE_ACTIVE then return 'hidden' end
  return nil
end

-- set writes the edge of side code with member m of the user whose keys
-- are uk: on or off at version v, over the state st that state returned.
-- A mute takes its since and expiry (ms; 0: none) from mute; its version
-- is always stored, as its score is its since, not its version's time.
-- pair is what the two users' states make of the edge (pairState): an
-- edge turned on between a hidden user and another is written hidden, as
-- the account-state job would have left it (archive.lua's hide), and one
-- with a deleted user is written off. (Mutes are not hidden yet: see
-- docs/design/states.md.) It does not move the stamp: the caller does, once.
local function set(uk, code, m, v, on, st, mute, pair)
  local h = uk.h
  if code == PRIVATE_CODE then
    redis.call('HSET', h, H_PRIVATE_V, v, H_PRIVATE, on and '1' or '0')
    return
  end
  local s = sides[code]
  local z, vh, rf = ck(uk, s[1], m), ck(uk, s[2], m), ck(uk, 'rf', m)
  -- The keys this adds an entry to, which fit may split after.
  local grown = {}
  if on and code ~= 'mo' and pair == STATE_DELETED then on = false end
  local hiddenHere = 0 -- 1: the edge is hidden here
  if on and code ~= 'mo' and pair == 'hidden' and not st[5] then
    if st[2] then -- shown: out of the sorted set, the counter and the flags
      redis.call('ZREM', z, m)
      redis.call('HINCRBY', h, s[3], -1)
      local f = flagOf[code]
      if f and tonumber(redis.call('ZINCRBY', rf, -f, m)) == 0 then redis.call('ZREM', rf, m) end
    end
    st, hiddenHere = {st[1], true, true, nil, true}, 1
  end
  if st[5] then
    -- A hidden edge: turned on it stays hidden, at its new version;
    -- turned off, its tombstone replaces the hidden version. Neither is in
    -- the sorted set, the counter or the flags; nh counts the user's
    -- hidden edges.
    if on then
      redis.call('HSET', vh, m, HIDDEN .. v)
      if hiddenHere == 1 then redis.call('HINCRBY', h, H_HIDDEN, 1) end
    else
      redis.call('HSET', vh, m, v)
      redis.call('HINCRBY', h, H_HIDDEN, -1)
    end
    if s[4] then redis.call('HDEL', h, s[4]) end
    fit(uk, s[2], m)
    return
  end
  local wrote = true
  if on then
    local score = string.format('%d', vms(v))
    if code == 'mo' then score = mute[1] end
    redis.call('ZADD', z, score, m)
    grown[#grown + 1] = s[1]
    if not st[2] then redis.call('HINCRBY', h, s[3], 1) end
    if code == 'mo' or vctr(v) ~= 0 then
      redis.call('HSET', vh, m, v)
      grown[#grown + 1] = s[2]
    else
      wrote = false
      if st[3] then redis.call('HDEL', vh, m) end
    end
  else
    if st[2] then
      redis.call('ZREM', z, m)
      redis.call('HINCRBY', h, s[3], -1)
    end
    redis.call('HSET', vh, m, v)
    grown[#grown + 1] = s[2]
  end
  local f = flagOf[code]
  if f and on ~= st[2] then
    if not on then f = -f end
    if tonumber(redis.call('ZINCRBY', rf, f, m)) == 0 then redis.call('ZREM', rf, m) elseif on then grown[#grown + 1] = 'rf' end
  end
  if code == 'mo' then
    local mx = ck(uk, 'mx', m)
    if on and mute[2] ~= '0' then
      redis.call('HSET', mx, m, mute[2])
      grown[#grown + 1] = 'mx'
    else
      redis.call('HDEL', mx, m)
    end
  end
  if wrote and s[4] then redis.call('HDEL', h, s[4]) end
  for _, k in ipairs(grown) do fit(uk, k, m) end
end

-- observe moves the clock of the user whose counters hash is h to at least v.
local function observe(h, v)
  local last = redis.call('HGET', h, H_CLOCK)
  if not last or vless(last, v) then redis.call('HSET', h, H_CLOCK, v) end
end

local function stamp(h) return tonumber(redis.call('HGET', h, H_STAMP) or '0') end
