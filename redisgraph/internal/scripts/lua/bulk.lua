-- Many edges of one side of one user at once: Rebuild's bulk writes and
-- Reconcile's repairs. Each edge is written only over an older version
-- (Rebuild), or only where Redis does not hold a state newer than both
-- the expected version and the horizon (repairs: see rebuild.ReconcileOptions), so a
-- newer live change is never undone. Then the side's counter moves by the
-- members the sorted set gained and lost (or, asked to recount, is set to
-- the size of the set over its chunks), and the user's clock moved up to
-- the version given.
--
-- KEYS (scripts.BulkKeys): SET the side's sorted set (out(u) or in(u)),
--       VERSIONS its versions hash (ov(u) or iv(u)), H h(u): chunk 0 of
--       each (chunks.lua); each edge is written in its member's chunk.
-- ARGV (scripts.BulkArgs): COUNTER the side's counter in h (H_NFO or
--       H_NFI), HORIZON '' for Rebuild, or a repair's horizon (a
--       version), CLOCK the version the clock must reach ('' to leave it:
--       only the following side moves the clock, as every version of an
--       edge u → t goes through u's clock), NUM_LIVE, NUM_COUNTED, NUM_OFF
--       and NUM_NONE the numbers of edges in each of the four lists that
--       follow, TOTAL the number of edges the side will hold (Rebuild's
--       first call of a side: its chunks are made at once, so that a
--       rebuild splits none; '0' otherwise), RECOUNT '1' to recount the
--       set (a repair's last call, which fixes the counter too), CHUNK
--       'n:j' when every edge is in chunk j of the side's n chunks (the
--       caller ordered them so; taken only while the side has n chunks),
--       else '', then LISTS:
--       L, live edges: score (the follow time in ms, decimal), member;
--       V, those of L whose version has a counter: member, version;
--       T, tombstones: member, version;
--       N, members of which Redis should hold no record (repairs only).
--       Versions are 16 hex digits; members are distinct.
--
-- The arguments are laid out so that a rebuild into an empty Redis (no
-- key of the side exists, one chunk) is one ZADD of L and one HSET of V
-- and T, with no work per edge in Lua; otherwise one ZMSCORE and one HMGET
-- a chunk read what Redis holds of every edge, and one ZADD, ZREM, HSET
-- and HDEL a chunk write the winners. Then each chunk written to is split
-- if it has grown to its bound (lib.lua's fit).
--
-- A hidden edge (archive.lua's: HIDDEN and the version, in the versions
-- hash, the edge in neither the sorted set nor the counter) is an edge on
-- at its version, as lib.lua's state reads it. Written over, it stays
-- hidden when the edge given is live (hidden at the new version) and
-- leaves its hidden version for a tombstone or for no record otherwise
-- (h's nh, the user's count of hidden edges, counts it): a rebuild or a
-- repair never shows an edge that the account-state job hid, which the
-- job of its user's next state shows or ends.
--
-- A rebuild refuses a live edge below the user's tombstone horizon
-- (H_HORIZON, purge.lua's) of which Redis holds no record: its tombstone,
-- newer, may have been purged (a source restored from before it).
--
-- Returns {edges written, u's stamp, and for a repair a string of one
-- character per edge, in the order L, T, N: '1' where it was written; for
-- a rebuild the number of edges refused}.
local z, vh, h = KEYS[K_SET], KEYS[K_VERSIONS], KEYS[K_H]
local cf, horizon, clk = ARGV[A_COUNTER], ARGV[A_HORIZON], ARGV[A_CLOCK]
local nl, nv = tonumber(ARGV[A_NUM_LIVE]), tonumber(ARGV[A_NUM_COUNTED])
local nt, nn = tonumber(ARGV[A_NUM_OFF]), tonumber(ARGV[A_NUM_NONE])
local total, recount = tonumber(ARGV[A_TOTAL]), ARGV[A_RECOUNT] == '1'
local repair = horizon ~= ''
local side
for _, s in pairs(sides) do
  if s[3] == cf then side = s end
end
local uk = {[side[1]] = z, [side[2]] = vh, h = h}
local grp = groupOf[side[1]]
local hintN, hintJ = string.match(ARGV[A_CHUNK], '^(%d+):(%d+)$')
local l0 = A_LISTS           -- L: ARGV[l0 + 2i - 2], ARGV[l0 + 2i - 1]
local v0 = l0 + 2 * nl       -- V
local t0 = v0 + 2 * nv       -- T
local n0 = t0 + 2 * nt       -- N
local written, flags = 0, {}
local hsetAny, hdelAny = false, false
local vhEmpty    -- whether vh is empty, where known
local delta = 0  -- the members the sorted set gained, less those it lost
local nhDelta = 0   -- how u's count of hidden edges (h's nh) changes

-- A side rebuilt into nothing that will hold more than a chunk's share
-- is made in as many chunks as keep each at most half full: a power of
-- two, so that they are of one level.
if total > SPLIT_AT and counts(uk)[grp] == 1 and redis.call('EXISTS', z, vh) == 0 then
  local n = 1
  while total / n > MAXKEY / 2 do n = n * 2 end
  counts(uk)[grp] = n
  redis.call('HSET', h, groups[grp].field, n)
  redis.call('HINCRBY', h, H_GEN, 1)
end
local chunked = counts(uk)[grp] > 1
local hz = false
if not repair then hz = redis.call('HGET', h, H_HORIZON) end
local refused = 0

if not repair and not hz and not chunked and nl + nv + nt < SPLIT_AT and redis.call('EXISTS', z, vh) == 0 then
  if nl > 0 then delta = redis.call('ZADD', z, unpack(ARGV, l0, v0 - 1)) end
  if nv + nt > 0 then
    redis.call('HSET', vh, unpack(ARGV, v0, n0 - 1))
    hsetAny = true
  end
  written = nl + nt
  vhEmpty = nv + nt == 0
else
  -- Every edge: its member, version (ms, counter, and 16 hex digits where
  -- it is stored) and state.
  local members, ems, ectr, ehex, state = {}, {}, {}, {}, {}
  local counted = {}
  for i = 0, nv - 1 do counted[ARGV[v0 + 2 * i]] = ARGV[v0 + 2 * i + 1] end
  for i = 0, nl - 1 do
    local m = ARGV[l0 + 2 * i + 1]
    local k = #members + 1
    members[k], ems[k], state[k] = m, tonumber(ARGV[l0 + 2 * i]), EDGE_LIVE
    local v = counted[m]
    if v then ectr[k], ehex[k] = vctr(v), v else ectr[k] = 0 end
  end
  for i = 0, nt - 1 do
    local k, v = #members + 1, ARGV[t0 + 2 * i + 1]
    members[k], ems[k], ectr[k], ehex[k], state[k] = ARGV[t0 + 2 * i], vms(v), vctr(v), v, EDGE_OFF
  end
  for i = 0, nn - 1 do
    local k = #members + 1
    members[k], ems[k], ectr[k], state[k] = ARGV[n0 + i], 0, 0, EDGE_NONE
  end
  local hms, hctr = 0, 0
  if repair then hms, hctr = vms(horizon), vctr(horizon) end
  local zms, zctr = 0, 0
  if hz then zms, zctr = vms(hz), vctr(hz) end
  local function less(am, ac, bm, bc) return am < bm or (am == bm and ac < bc) end

  -- What Redis holds of each edge, read a chunk at a time.
  local scores, stored = {}, {}
  local chunkOfMember, byChunk = {}, {}
  local hinted = hintN and tonumber(hintN) == counts(uk)[grp]
  for k = 1, #members do
    local c
    if hinted then c = tonumber(hintJ) else c = chunkIndex(uk, side[1], members[k]) end
    chunkOfMember[k] = c
    if not byChunk[c] then byChunk[c] = {} end
    local b = byChunk[c]
    b[#b + 1] = k
  end
  for c, ks in pairs(byChunk) do
    local ms = {}
    for i, k in ipairs(ks) do ms[i] = members[k] end
    local sc = redis.call('ZMSCORE', chunkKey(z, c), unpack(ms))
    local vs = redis.call('HMGET', chunkKey(vh, c), unpack(ms))
    for i, k in ipairs(ks) do scores[k], stored[k] = sc[i], vs[i] end
  end
  local writes = {} -- by chunk: {zadd, zrem, hset, hdel, a member}
  local function w(k)
    local c = chunkOfMember[k]
    local x = writes[c]
    if not x then
      x = {{}, {}, {}, {}, members[k]}
      writes[c] = x
    end
    return x
  end
  for k = 1, #members do
    local x = w(k)
    local zadd, zrem, hset, hdel = x[1], x[2], x[3], x[4]
    local m, want = members[k], state[k]
    local live, rec = scores[k] ~= false, stored[k]
    local hidden = rec and string.sub(rec, 1, 1) == HIDDEN
    if hidden then rec, live = string.sub(rec, 2), true end
    local cms, cctr = 0, 0
    if rec then
      cms, cctr = vms(rec), vctr(rec)
    elseif live then
      cms = tonumber(scores[k])
    end
    local write
    if not repair then
      write = less(cms, cctr, ems[k], ectr[k])
      if write and not live and not rec and want == EDGE_LIVE and less(ems[k], ectr[k], zms, zctr) then
        write, refused = false, refused + 1
      end
    else
      local differs
      if want == EDGE_NONE then
        differs = live or rec
      else
        differs = live ~= (want == EDGE_LIVE) or cms ~= ems[k] or cctr ~= ectr[k]
      end
      write = differs and (not less(ems[k], ectr[k], cms, cctr) or not less(hms, hctr, cms, cctr))
    end
    if write and hidden then
      written = written + 1
      if want == EDGE_LIVE then
        hset[#hset + 1] = m
        hset[#hset + 1] = HIDDEN .. (ehex[k] or vfmt(ems[k], 0))
      else
        nhDelta = nhDelta - 1
        if ehex[k] then
          hset[#hset + 1] = m
          hset[#hset + 1] = ehex[k]
        else
          hdel[#hdel + 1] = m
        end
      end
    elseif write then
      written = written + 1
      if want == EDGE_LIVE then
        zadd[#zadd + 1] = string.format('%d', ems[k])
        zadd[#zadd + 1] = m
      elseif live then
        zrem[#zrem + 1] = m
      end
      -- ehex: the version to store (a tombstone's, or a live edge's with
      -- a counter); none for the other states.
      if ehex[k] then
        hset[#hset + 1] = m
        hset[#hset + 1] = ehex[k]
      elseif rec then
        hdel[#hdel + 1] = m
      end
    end
    if repair then flags[k] = write and '1' or '0' end
  end
  for c, x in pairs(writes) do
    local zadd, zrem, hset, hdel = x[1], x[2], x[3], x[4]
    local cz, cv = chunkKey(z, c), chunkKey(vh, c)
    if #zadd > 0 then delta = delta + redis.call('ZADD', cz, unpack(zadd)) end
    if #zrem > 0 then delta = delta - redis.call('ZREM', cz, unpack(zrem)) end
    if #hset > 0 then redis.call('HSET', cv, unpack(hset)) end
    if #hdel > 0 then redis.call('HDEL', cv, unpack(hdel)) end
    hsetAny, hdelAny = hsetAny or #hset > 0, hdelAny or #hdel > 0
  end
  -- Split the chunks grown to their bound.
  for _, x in pairs(writes) do
    if #x[1] > 0 then fit(uk, side[1], x[5]) end
    if #x[3] > 0 then fit(uk, side[2], x[5]) end
  end
end

-- The counter, by delta or recounted; the clock at least clk.
local hv = redis.call('HMGET', h, cf, H_STAMP, H_CLOCK, H_EMPTY)
local set = {}
local card = tonumber(hv[1] or '0') + delta
if recount then card = cardOf(uk, side[1]) end
if tonumber(hv[1] or '0') ~= card then
  set[#set + 1] = cf
  set[#set + 1] = card
end
if clk ~= '' and (not hv[3] or vless(hv[3], clk)) then
  set[#set + 1] = H_CLOCK
  set[#set + 1] = clk
end
local st = tonumber(hv[2] or '0')
if written > 0 or #set > 0 then
  st = st + 1
  set[#set + 1] = H_STAMP
  set[#set + 1] = st
end
-- Field e of h(u) says that ov(u) is known to be empty (see change.lua):
-- true again if ov(u) is empty now, unknown once ov(u) holds something.
-- Only the following side has it.
if cf == H_NFO and (hsetAny or hdelAny or (written > 0 and not hv[4])) then
  -- (A side in chunks is not looked over: e is only a shortcut.)
  if vhEmpty == nil then vhEmpty = counts(uk)[grp] == 1 and redis.call('EXISTS', vh) == 0 end
  if vhEmpty then
    set[#set + 1] = H_EMPTY
    set[#set + 1] = '1'
  elseif hv[4] then
    redis.call('HDEL', h, H_EMPTY)
  end
end
if #set > 0 then redis.call('HSET', h, unpack(set)) end
if nhDelta ~= 0 then redis.call('HINCRBY', h, H_HIDDEN, nhDelta) end
if repair then return {written, st, table.concat(flags)} end
return {written, st, refused}
