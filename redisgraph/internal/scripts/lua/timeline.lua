-- Timelines: layout 3's shape of a long side (docs/design/redis-layout.md,
-- "Layout 3"), after chunks.lua. A side's sorted set is kept in chunks by
-- time, each small enough to stay a listpack, so that a page reads one or
-- two chunks, a split moves at most half a chunk, and chunks that empty
-- out merge; a member index (a hash of member → value, in chunks by the
-- member's hash) finds a member's entry, and so its chunk, without
-- scanning.
--
-- TB is the most entries a chunk holds (the server's
-- zset-max-listpack-entries), XB the size at which an index chunk makes
-- the index split one more (linear hashing, as chunks.lua's): the scripts
-- that take this file have both from their first line.
--
-- A timeline is a table t:
--   t.z   the side's sorted set: its one chunk while it has one (chunk 0)
--   t.d   the directory, while it has more: a sorted set, every member at
--         score 0, of its chunks: each one's bound (the entry it was made
--         with or split at: its ms and member as 16 bytes, big-endian, so
--         that byte order is time order) then the chunk's number in
--         decimal. Chunk 0 is t.z, chunk j is t.z .. ':' .. j. A chunk
--         holds the entries from its bound up to the next chunk's; the
--         oldest also those below its bound.
--   t.h   the hash of the timeline's fields, by name:
--   t.kf  its number of chunks (absent: 1), t.nf the last chunk number
--         given, t.gf the number of changes of the directory (a reader
--         outside a script that read the directory checks that it did not
--         change before it read the chunks), t.xf the index's number of
--         chunks (absent: 1)
--   t.x   the index's chunk 0 (chunk j: t.x .. ':' .. j)
--   t.kc, t.xc  the numbers of chunks, as tlOpen read them; every change
--         here keeps them and t.h's fields current.

-- tlOpen returns the timeline of the keys given, reading its numbers of
-- chunks from t.h.
local function tlOpen(z, d, h, x, kf, nf, gf, xf)
  local hv = redis.call('HMGET', h, kf, xf)
  return {z = z, d = d, h = h, x = x, kf = kf, nf = nf, gf = gf, xf = xf,
    kc = tonumber(hv[1] or '1'), xc = tonumber(hv[2] or '1')}
end

-- be8 returns n, a whole number below 2^53, as 8 bytes, big-endian.
local function be8(n)
  local b = {}
  for i = 8, 1, -1 do
    b[i] = n % 256
    n = (n - b[i]) / 256
  end
  return string.char(unpack(b))
end

-- tlBound returns the bound of the entry (ms, member).
local function tlBound(ms, m) return be8(ms) .. m end

-- below reports whether a sorts before b, byte by byte (Lua's < on
-- strings follows the server's locale).
local function below(a, b)
  local n = math.min(#a, #b)
  for i = 1, n do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a < #b
end

-- tlChunk returns the key of chunk j (a decimal string) and of a
-- directory member dm.
local function tlChunk(t, j)
  if j == '0' then return t.z end
  return t.z .. ':' .. j
end
local function dirKey(t, dm) return tlChunk(t, string.sub(dm, 17)) end

-- moved counts a change of the directory.
local function moved(t) redis.call('HINCRBY', t.h, t.gf, 1) end

-- setCount records the timeline's number of chunks.
local function setCount(t, n)
  t.kc = n
  if n == 1 then redis.call('HDEL', t.h, t.kf) else redis.call('HSET', t.h, t.kf, n) end
  moved(t)
end

-- locate returns the chunk that holds, or would hold, the entry (ms, m),
-- and its directory member (nil while there is one chunk).
local function locate(t, ms, m)
  if t.kc == 1 then return t.z, nil end
  local dm = redis.call('ZREVRANGEBYLEX', t.d, '[' .. tlBound(ms, m) .. '\255', '-', 'LIMIT', 0, 1)[1]
  if not dm then dm = redis.call('ZRANGE', t.d, 0, 0)[1] end
  return dirKey(t, dm), dm
end

-- topOf returns the bound of the newest entry of chunk key.
local function topOf(key)
  local e = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  return tlBound(tonumber(e[2]), e[1])
end
local function lowOf(key)
  local e = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  return tlBound(tonumber(e[2]), e[1])
end

-- room returns the chunk (key, directory member) that the new entry of
-- bound b goes into, given the one that locate found for it: that one
-- while it has room. When it is full, the entry goes to the next chunk
-- when it is newer than all of the full one's and the next has room (its
-- bound comes down to b), or to a new chunk after the full one (a list
-- that grows at its newest end only ever does this); else the full chunk
-- is split in half, the newer half moved to a new chunk: at most TB / 2
-- entries, by one ZRANGESTORE.
local function room(t, key, dm, b)
  if redis.call('ZCARD', key) < TB then return key, dm end
  if not dm then
    dm = lowOf(key) .. '0'
    redis.call('ZADD', t.d, 0, dm)
  end
  local newer = redis.call('ZRANGEBYLEX', t.d, '(' .. dm, '+', 'LIMIT', 0, 1)[1]
  if below(topOf(key), b) then
    if newer and redis.call('ZCARD', dirKey(t, newer)) < TB then
      local nd = b .. string.sub(newer, 17)
      redis.call('ZREM', t.d, newer)
      redis.call('ZADD', t.d, 0, nd)
      moved(t)
      return dirKey(t, nd), nd
    end
    local j = tostring(redis.call('HINCRBY', t.h, t.nf, 1))
    local nd = b .. j
    redis.call('ZADD', t.d, 0, nd)
    setCount(t, t.kc + 1)
    return tlChunk(t, j), nd
  end
  local j = tostring(redis.call('HINCRBY', t.h, t.nf, 1))
  local nk = tlChunk(t, j)
  local half = math.floor(TB / 2)
  redis.call('ZRANGESTORE', nk, key, half, -1)
  redis.call('ZREMRANGEBYRANK', key, half, -1)
  local nd = lowOf(nk) .. j
  redis.call('ZADD', t.d, 0, nd)
  setCount(t, t.kc + 1)
  if below(b, string.sub(nd, 1, 16)) then return key, dm end
  return nk, nd
end

-- tlAdd adds the entry (ms, m) to the timeline, which does not hold m.
local function tlAdd(t, ms, m)
  local key, dm = locate(t, ms, m)
  key = room(t, key, dm, tlBound(ms, m))
  redis.call('ZADD', key, string.format('%d', ms), m)
end

-- single makes the timeline's one chunk left t.z again, and drops the
-- directory.
local function single(t)
  local dm = redis.call('ZRANGE', t.d, 0, 0)[1]
  local key = dirKey(t, dm)
  if key ~= t.z and redis.call('EXISTS', key) == 1 then redis.call('RENAME', key, t.z) end
  redis.call('DEL', t.d)
  setCount(t, 1)
end

-- shrink merges chunk key (of directory member dm) with a neighbour once
-- it holds TB / 4 entries or fewer, and the two fit in three quarters of a
-- chunk: the newer of the two into the older, whose bound stays. An empty
-- chunk just leaves the directory.
local function shrink(t, key, dm)
  local n = redis.call('ZCARD', key)
  if n > TB / 4 then return end
  if n == 0 then
    redis.call('ZREM', t.d, dm)
    setCount(t, t.kc - 1)
  else
    local older = redis.call('ZREVRANGEBYLEX', t.d, '(' .. dm, '-', 'LIMIT', 0, 1)[1]
    local into, from, gone
    if older then
      into, from, gone = dirKey(t, older), key, dm
    else
      gone = redis.call('ZRANGEBYLEX', t.d, '(' .. dm, '+', 'LIMIT', 0, 1)[1]
      into, from = key, dirKey(t, gone)
    end
    if redis.call('ZCARD', into) + redis.call('ZCARD', from) > TB * 3 / 4 then return end
    redis.call('ZUNIONSTORE', into, 2, into, from)
    redis.call('DEL', from)
    redis.call('ZREM', t.d, gone)
    setCount(t, t.kc - 1)
  end
  if t.kc == 1 then single(t) end
end

-- tlRem removes the entry (ms, m) from the timeline, and reports whether
-- it was there.
local function tlRem(t, ms, m)
  local key, dm = locate(t, ms, m)
  if redis.call('ZREM', key, m) == 0 then return false end
  if dm then shrink(t, key, dm) end
  return true
end

-- tlPage returns the newest n entries of the timeline after the entry
-- (ams, am) (nil: from the newest), as {member, ms, ...}: from the chunk
-- that would hold the cursor, then the older chunks, one by one. A page
-- that one chunk fills is the reply of one ZRANGE, by rank after the
-- cursor's entry when the chunk holds it (as the last of the page before
-- does), returned as it is: Redis converts every entry a script reads
-- and returns, the cost of a read.
local function tlPage(t, n, ams, am)
  local key, dm, out
  if ams then
    key, dm = locate(t, ams, am)
    local s = string.format('%d', ams)
    local r = redis.call('ZSCORE', key, am) == s and redis.call('ZREVRANK', key, am)
    if r then
      out = redis.call('ZRANGE', key, r + 1, r + n, 'REV', 'WITHSCORES')
    else
      out = {}
      local ties = redis.call('ZRANGE', key, s, s, 'BYSCORE', 'REV', 'WITHSCORES')
      for i = 1, #ties, 2 do
        if #out < 2 * n and below(ties[i], am) then out[#out + 1], out[#out + 2] = ties[i], ties[i + 1] end
      end
      if #out < 2 * n then
        local es = redis.call('ZRANGE', key, '(' .. s, '-inf', 'BYSCORE', 'REV', 'LIMIT', 0, n - #out / 2, 'WITHSCORES')
        for i = 1, #es do out[#out + 1] = es[i] end
      end
    end
  else
    if t.kc > 1 then
      dm = redis.call('ZRANGE', t.d, -1, -1)[1]
      key = dirKey(t, dm)
    else
      key = t.z
    end
    out = redis.call('ZRANGE', key, 0, n - 1, 'REV', 'WITHSCORES')
  end
  while #out < 2 * n and dm do
    dm = redis.call('ZREVRANGEBYLEX', t.d, '(' .. dm, '-', 'LIMIT', 0, 1)[1]
    if not dm then break end
    local es = redis.call('ZRANGE', dirKey(t, dm), 0, n - #out / 2 - 1, 'REV', 'WITHSCORES')
    for i = 1, #es do out[#out + 1] = es[i] end
  end
  return out
end

-- The member index: chunk chunkOf(hashOf(m), t.xc) of t.x holds m.

local function ixKey(t, m) return chunkKey(t.x, chunkOf(hashOf(m), t.xc)) end

-- tlGet returns the index's value of member m (false: none).
local function tlGet(t, m) return redis.call('HGET', ixKey(t, m), m) end

-- ixSplit splits the index's next chunk, n - lo of its n: the entries of
-- hash n modulo 2lo move to the new chunk n (at most an index chunk's).
local function ixSplit(t)
  local n = t.xc
  local lo = 1
  while lo * 2 <= n do lo = lo * 2 end
  local from, to = chunkKey(t.x, n - lo), chunkKey(t.x, n)
  local all = redis.call('HGETALL', from)
  local moved, gone = {}, {}
  for i = 1, #all, 2 do
    if hashOf(all[i]) % (2 * lo) == n then
      moved[#moved + 1], moved[#moved + 2] = all[i], all[i + 1]
      gone[#gone + 1] = all[i]
    end
  end
  if #gone > 0 then
    redis.call('HSET', to, unpack(moved))
    redis.call('HDEL', from, unpack(gone))
  end
  t.xc = n + 1
  redis.call('HSET', t.h, t.xf, n + 1)
end

-- tlSet sets the index's value of member m to v, then splits the next
-- index chunk when m's holds more than XB entries: linear hashing splits
-- the chunks in turn, each at most once a call, so that none holds many
-- more than XB for long (TB leaves room above it).
local function tlSet(t, m, v)
  local k = ixKey(t, m)
  redis.call('HSET', k, m, v)
  if redis.call('HLEN', k) > XB then ixSplit(t) end
end

-- tlDel removes member m from the index.
local function tlDel(t, m) redis.call('HDEL', ixKey(t, m), m) end
