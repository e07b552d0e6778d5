-- A live follow or unfollow of user u → target t, decided on u's side,
-- when it is only that: a follow between u and a t with an edge of
-- another kind between them either way (a block, a request, a mute: t in
-- rf(u)), or of a private target, and an unfollow that finds no follow
-- but requests out, are edge.lua's (status SLOW, having changed nothing),
-- so that the plain follow pays for the other kinds only three more
-- fields of the HMGET it made already, one ZSCORE of rf(u) when u has
-- blocks or requests at all, and on a standalone Redis one HMGET of t's
-- counters hash (its private flag and state, and what the write moves).
--
-- KEYS (scripts.ChangeKeys): OUT out(u), OV ov(u), H h(u), OUTBOX the
--       outbox stream of u's slot, RF rf(u), and on a standalone Redis
--       also TIN in(t), TIV iv(t), TH h(t): chunk 0 of each list; the
--       script reads the member's chunk (chunks.lua) by the counts in h(u)
--       and h(t), and leaves to edge.lua a change that would bring one to
--       its split (SLOW).
-- ARGV (scripts.ChangeArgs): OP OP_FOLLOW or OP_UNFOLLOW, MEMBER t as a
--       member, NOW the client's time in ms (decimal), MAX_FOLLOWING the
--       following limit (0: none), OUTBOX_LIMIT the outbox bound, USER u
--       and TARGET t in decimal, RATE u's writes per second (0: no limit)
--       and BURST their burst, USER_MEMBER u as a member (for the extra
--       keys), PRIVATE '1' when the caller knows t is private (a Cluster:
--       redisgraph's Graph.Follow), REGION the region of the versions
--       u's changes take (0: none; version.lua's nextv).
--
-- Returns a status first (layout.Status):
-- {NONE, version}: nothing to change, version the edge's (ZERO if none);
-- {LIMIT}: the following limit is reached; {FULL}: the outbox is full;
-- {LOST}: the outbox stream does not exist (Redis lost its data);
-- {RATE, ms}: u is over its write rate, a token is there in ms;
-- {SLOW}: a change for edge.lua; {USER_INACTIVE}, {TARGET_INACTIVE}:
-- refused by u's or t's account state (state.lua);
-- {CHANGED, version, the event's outbox entry id, u's stamp[, t's stamp]}:
-- changed, as the event in the outbox says. Nothing is changed unless the
-- status is CHANGED.
--
-- This is the script of every live write, so it makes as few calls into
-- Redis as it can (lib.lua's set does the same work in more): u's counters
-- hash is read by one HMGET and written by one HSET (and so is t's, on a
-- standalone Redis); the new version is above every version of the edge
-- (every version of an edge u → t goes through u's clock), so it is not
-- compared with the edge's; on a standalone Redis the followee's side of
-- the edge is not read: every script writes both sides together, so t's
-- side of the edge (live, versions hash entry) is what u's side is; and a
-- follow does not look for a tombstone to remove in u's versions hash when
-- h(u) says that hash is empty: field e is '1' only while ov(u) is known
-- to be empty (a user without a clock has never had a change or an Apply
-- of an edge of theirs, so has an empty ov too); every write to ov(u)
-- removes it or sets it to '0' (this script, and the others through
-- lib.lua's set).
local op, m, out, ov, h = ARGV[A_OP], ARGV[A_MEMBER], KEYS[K_OUT], KEYS[K_OV], KEYS[K_H]
local follow = op == OP_FOLLOW
local hv, bucket
if take then
  hv = redis.call('HMGET', h, H_CLOCK, H_NFO, H_STAMP, H_EMPTY, H_NBO, H_NBI, H_NRO, H_STATE, H_HIDDEN, H_KFO, H_KRF,
    H_RATE_TOKENS, H_RATE_COUNTED)
else
  hv = redis.call('HMGET', h, H_CLOCK, H_NFO, H_STAMP, H_EMPTY, H_NBO, H_NBI, H_NRO, H_STATE, H_HIDDEN, H_KFO, H_KRF)
end
-- u's follows out in chunks (chunks.lua): m's chunk of out(u) and ov(u).
local nko = tonumber(hv[10] or '1')
if nko > 1 then
  local j = chunkOf(hashOf(m), nko)
  out, ov = chunkKey(out, j), chunkKey(ov, j)
end
-- Account states (state.lua): no write by a user who is not active, no
-- follow of one (on a Cluster, where t's keys are not here, its second
-- step checks: effects.SecondStep).
if hv[8] and hv[8] ~= STATE_ACTIVE then return {USER_INACTIVE} end
local th = KEYS[K_TH] and redis.call('HMGET', KEYS[K_TH], H_PRIVATE, H_STATE, H_CLOCK, H_NFI, H_STAMP, H_KFI)
if follow and th and th[2] and th[2] ~= STATE_ACTIVE then return {TARGET_INACTIVE} end
local s = redis.call('ZSCORE', out, m)
if follow == (s ~= false) then
  -- Nothing to change, as far as this Redis knows: unless it lost the
  -- graph (see the XADD below), when the edge may well be there, or, for
  -- an unfollow, u has requests out, one of which it may withdraw, or
  -- hidden edges (nh: archive.lua), one of which may be this follow or
  -- request, which it ends as stored.
  if not follow and (hv[7] and hv[7] ~= '0' or hv[9] and hv[9] ~= '0') then return {SLOW} end
  if redis.call('EXISTS', KEYS[K_OUTBOX]) == 0 then return {LOST} end
  local v = redis.call('HGET', ov, m)
  if take then
    local wait
    bucket, wait = take(hv[12], hv[13])
    if not bucket then return {RATE, wait} end
    redis.call('HSET', h, unpack(bucket))
  end
  if v then return {NONE, v} end
  if s then return {NONE, vfmt(tonumber(s), 0)} end
  return {NONE, ZERO}
end
-- An unfollow by a u with requests out is edge.lua's: it ends the request
-- of its direction too (followgraph.Event.Effects), which only regions
-- leave beside a follow (followgraph.Mend).
if not follow and hv[7] and hv[7] ~= '0' then return {SLOW} end
-- A follow between u and a t with a block either way, a request or a
-- mute between them (t in rf(u); looked up only when u has blocks or
-- requests out at all), or of a private target, is edge.lua's: its checks
-- and effects are not here. So is one over a hidden follow (u has hidden
-- edges, nh: one may be this edge, left by a job that has not restored it
-- yet), which lib.lua's set knows.
if follow and ((hv[5] and hv[5] ~= '0' or hv[6] and hv[6] ~= '0' or hv[7] and hv[7] ~= '0') and
      redis.call('ZSCORE', chunkKey(KEYS[K_RF], chunkOf(hashOf(m), tonumber(hv[11] or '1'))), m) or
    ARGV[A_PRIVATE] == '1' or (th and th[1] == '1') or
    hv[9] and hv[9] ~= '0' and string.sub(redis.call('HGET', ov, m) or '', 1, 1) == HIDDEN) then
  return {SLOW}
end
if take then
  local wait
  bucket, wait = take(hv[12], hv[13])
  if not bucket then return {RATE, wait} end
end
local empty = not hv[1] or hv[4] == '1'
local n = tonumber(hv[2] or '0')
if follow then
  local max = tonumber(ARGV[A_MAX_FOLLOWING])
  -- Requests out count against the limit too (edge.lua): none of them is
  -- to t, which is not in rf(u).
  if max > 0 and n + tonumber(hv[7] or '0') >= max then return {LIMIT} end
end
local v = nextv(hv[1], tonumber(ARGV[A_NOW]), tonumber(ARGV[A_REGION]))
local score, c = string.format('%d', vms(v)), vctr(v)
-- A change that would bring a chunk to its split is edge.lua's, whose
-- writes split (lib.lua's fit): a follow that adds to out(u) (and in(t)),
-- a version stored in ov(u) (and iv(t)).
local tin, tiv, um = KEYS[K_TIN], KEYS[K_TIV], ARGV[A_USER_MEMBER]
local nki = th and tonumber(th[6] or '1') or 1
if nki > 1 then
  local j = chunkOf(hashOf(um), nki)
  tin, tiv = chunkKey(tin, j), chunkKey(tiv, j)
end
if follow then
  if nko == 1 and n + 1 >= SPLIT_AT or nko > 1 and redis.call('ZCARD', out) + 1 >= SPLIT_AT then return {SLOW} end
  if th and (nki == 1 and tonumber(th[4] or '0') + 1 >= SPLIT_AT or nki > 1 and redis.call('ZCARD', tin) + 1 >= SPLIT_AT) then
    return {SLOW}
  end
end
if (not follow or c ~= 0) and (redis.call('HLEN', ov) + 1 >= SPLIT_AT or th and redis.call('HLEN', tiv) + 1 >= SPLIT_AT) then
  return {SLOW}
end
if redis.call('XLEN', KEYS[K_OUTBOX]) >= tonumber(ARGV[A_OUTBOX_LIMIT]) then return {FULL} end
-- The event, before anything changes: NOMKSTREAM adds it only to an
-- existing outbox stream. The streams are created once for a deployment
-- and never deleted (trimming keeps them), so a missing one means Redis
-- lost its data; until a rebuild restores the graph and the stream, a
-- write on what is left could be wrong (an unfollow finding nothing to
-- remove), so it is refused.
local id = redis.call('XADD', KEYS[K_OUTBOX], 'NOMKSTREAM', '*', E_USER, ARGV[A_USER], E_TARGET, ARGV[A_TARGET], E_OP, op, E_VERSION, v)
if not id then return {LOST} end
-- stored: whether the versions hashes held a version of the edge (only a
-- follow over a tombstone needs to know: unfollows overwrite it).
-- e: h(u)'s field H_EMPTY as this change leaves it (nil: as it was).
local stored, e = false, '0'
if follow then
  redis.call('ZADD', out, score, m)
  n = n + 1
  if c ~= 0 then
    redis.call('HSET', ov, m, v)
  elseif empty then
    e = '1'
  else
    stored = redis.call('HDEL', ov, m) == 1
    e = nil
  end
else
  redis.call('ZREM', out, m)
  n = n - 1
  redis.call('HSET', ov, m, v)
end
local st = tonumber(hv[3] or '0') + 1
local fields = {H_CLOCK, v, H_NFO, n, H_STAMP, st}
if e then
  fields[#fields + 1], fields[#fields + 2] = H_EMPTY, e
end
if bucket then
  for _, f in ipairs(bucket) do fields[#fields + 1] = f end
end
redis.call('HSET', h, unpack(fields))
if not KEYS[K_TIN] then return {CHANGED, v, id, st} end
-- t's side, on a standalone Redis: the edge in in(t) and iv(t), then h(t)
-- by one HSET: the count, the stamp, and the clock moved past v, as every
-- script that writes a user's keys moves the user's clock (lib.lua's
-- observe; effects.lua on a Cluster).
local nin = tonumber(th[4] or '0')
if follow then
  redis.call('ZADD', tin, score, um)
  nin = nin + 1
  if c ~= 0 then
    redis.call('HSET', tiv, um, v)
  elseif stored then
    redis.call('HDEL', tiv, um)
  end
else
  redis.call('ZREM', tin, um)
  nin = nin - 1
  redis.call('HSET', tiv, um, v)
end
local tst = tonumber(th[5] or '0') + 1
local tf = {H_NFI, nin, H_STAMP, tst}
if not th[3] or vless(th[3], v) then
  tf[5], tf[6] = H_CLOCK, v
end
redis.call('HSET', KEYS[K_TH], unpack(tf))
return {CHANGED, v, id, st, tst}
