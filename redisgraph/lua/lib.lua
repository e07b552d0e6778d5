-- Shared by second.lua and apply.lua, after version.lua. (change.lua, the
-- script of every live follow and unfollow, does the same work inline,
-- with fewer calls into Redis.)

local function vless(a, b)
  local am, bm = vms(a), vms(b)
  if am ~= bm then return am < bm end
  return vctr(a) < vctr(b)
end

-- edge returns the version of the edge stored as member m of sorted set z,
-- whose versions hash is vh (ZERO when the edge never existed), whether
-- the edge is live, and whether vh holds its version.
local function edge(z, vh, m)
  local s = redis.call('ZSCORE', z, m)
  local v = redis.call('HGET', vh, m)
  if v then return v, s ~= false, true end
  if s then return vfmt(tonumber(s), 0), true, false end
  return ZERO, false, false
end

-- apply makes op ('follow' or 'unfollow') at version v on the edge stored
-- as member m of sorted set z, unless the edge has a version of at least
-- v. vh is the versions hash, h the counters hash and cf the name of the
-- counter of z in it. ef, if given, is the field of h that says vh is
-- empty (see change.lua), which a write to vh removes. It returns the new
-- change stamp of h's user, or false when it changed nothing.
local function apply(z, vh, h, cf, m, v, op, ef)
  local cur, live, stored = edge(z, vh, m)
  if not vless(cur, v) then return false end
  local wrote = true
  if op == 'follow' then
    redis.call('ZADD', z, string.format('%d', vms(v)), m)
    if not live then redis.call('HINCRBY', h, cf, 1) end
    if vctr(v) ~= 0 then
      redis.call('HSET', vh, m, v)
    else
      wrote = false
      if stored then redis.call('HDEL', vh, m) end
    end
  else
    if live then
      redis.call('ZREM', z, m)
      redis.call('HINCRBY', h, cf, -1)
    end
    redis.call('HSET', vh, m, v)
  end
  if wrote and ef then redis.call('HDEL', h, ef) end
  return redis.call('HINCRBY', h, 'st', 1)
end

-- observe moves the clock of the user whose counters hash is h to at least v.
local function observe(h, v)
  local last = redis.call('HGET', h, 'clk')
  if not last or vless(last, v) then redis.call('HSET', h, 'clk', v) end
end

local function stamp(h) return tonumber(redis.call('HGET', h, 'st') or '0') end
