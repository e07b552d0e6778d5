-- Shared by the write scripts.
--
-- A version is followgraph.Version as 16 lowercase hex digits: 11 of
-- milliseconds, 5 of counter. Lua numbers are doubles, which cannot hold
-- 64 bits, so versions are split into (ms, counter) to be compared.
local ZERO = '0000000000000000'

local function vms(v) return tonumber(string.sub(v, 1, 11), 16) end
local function vctr(v) return tonumber(string.sub(v, 12, 16), 16) end
local function vfmt(ms, c) return string.format('%011x%05x', ms, c) end

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
-- counter of z in it. cur, live and stored are what edge returns, when the
-- caller has them. It returns the new change stamp of h's user, or false
-- when it changed nothing.
local function apply(z, vh, h, cf, m, v, op, cur, live, stored)
  if not cur then cur, live, stored = edge(z, vh, m) end
  if not vless(cur, v) then return false end
  if op == 'follow' then
    redis.call('ZADD', z, string.format('%d', vms(v)), m)
    if not live then redis.call('HINCRBY', h, cf, 1) end
    if vctr(v) ~= 0 then
      redis.call('HSET', vh, m, v)
    elseif stored then
      redis.call('HDEL', vh, m)
    end
  else
    if live then
      redis.call('ZREM', z, m)
      redis.call('HINCRBY', h, cf, -1)
    end
    redis.call('HSET', vh, m, v)
  end
  return redis.call('HINCRBY', h, 'st', 1)
end

-- tick returns a new version for a change by the user whose counters hash
-- is h: the client's time now (a version) unless the user's clock is
-- already there, else one past the clock. The clock moves to it.
local function tick(h, now)
  local last = redis.call('HGET', h, 'clk')
  local v = now
  if last and not vless(last, now) then
    local ms, c = vms(last), vctr(last) + 1
    if c == 1048576 then ms, c = ms + 1, 0 end
    v = vfmt(ms, c)
  end
  redis.call('HSET', h, 'clk', v)
  return v
end

-- observe moves the clock of the user whose counters hash is h to at least v.
local function observe(h, v)
  local last = redis.call('HGET', h, 'clk')
  if not last or vless(last, v) then redis.call('HSET', h, 'clk', v) end
end

local function stamp(h) return tonumber(redis.call('HGET', h, 'st') or '0') end
