-- A live change of any kind by user u, with other user t, decided on u's
-- side: every op but the plain follow and unfollow (change.lua's), and
-- those when change.lua says SLOW. The ops (A_OP):
--
--   follow, unfollow  u → t; a follow of a private t that u does not
--                     follow is a request, an unfollow that finds a
--                     request withdraws it (op unrequest)
--   block, unblock, mute, unmute   u → t
--   approve           t's request to u becomes the follow t → u (when t
--                     follows u already: the request ends, op unrequest)
--   remove            ends the follow t → u, or t's request (unrequest)
--   private, public   u's setting (t is '0')
--   undo              ends the edge of kind A_UNDO_KIND (KIND_FOLLOW or
--                     KIND_REQUEST) between u and t (u → t when A_UNDO_DIR
--                     is DIR_OUT, t → u when DIR_IN) if it is still on at
--                     version A_UNDO_VERSION: a change whose second step
--                     met a block (redisgraph's Graph.undo)
--
-- Every effect of the change (followgraph.Event.Effects) is written on
-- u's side, and on a standalone Redis on t's too, at one version: the
-- next of u's clock, raised above every version those edges have here,
-- so that edges t → u, whose versions come from t's clock, take it too
-- (the other side's step moves t's clock past it: effects.lua).
--
-- KEYS (scripts.EdgeKeys): USER u's keys (lib.lua's userKeys), OUTBOX the
--       outbox stream of u's slot, and on a standalone Redis also TARGET
--       t's keys.
-- ARGV (scripts.EdgeArgs): change.lua's, but that PRIVATE may be '' (read
--       it here, from t's keys), then MUTE a mute's duration in ms (0:
--       none), UNDO_KIND, UNDO_VERSION and UNDO_DIR an undo's.
--
-- Returns a status first (layout.Status): {NONE, version,
-- op, since, expiry} when there is nothing to change (the edge's version,
-- ZERO if none, and since, ms, when it is on); {CHANGED, version, op,
-- since, expiry, the outbox entry id, u's stamp[, t's stamp]}; {LIMIT},
-- {FULL}, {LOST}, {RATE, ms} as change.lua's; {BLOCKED}: one of u and t
-- blocks the other; {NOREQUEST}: approve found neither request nor
-- follow; {USER_INACTIVE}, {TARGET_INACTIVE}: refused by u's or t's
-- account state. op is the op of the event (or of the edge found), since and
-- expiry are ms (expiry 0: none). Nothing is changed unless CHANGED.
local op, tm, um, now, region = ARGV[A_OP], ARGV[A_MEMBER], ARGV[A_USER_MEMBER], tonumber(ARGV[A_NOW]), tonumber(ARGV[A_REGION])
local uk = userKeys(K_USER)
local tk = KEYS[K_TARGET] and userKeys(K_TARGET)
local hv = redis.call('HMGET', uk.h, H_CLOCK, H_NFO, H_NRO, H_RATE_TOKENS, H_RATE_COUNTED, H_STATE)
-- Account states (state.lua): no write by a user who is not active (an
-- undo is the graph's own, of a change already made); no follow or
-- request of one, nor a block or mute of a deleted one (on a Cluster,
-- where t's keys are not here, the second step checks: effects.SecondStep).
local tword = tk and redis.call('HGET', tk.h, H_STATE)
if op ~= OP_UNDO then
  if hv[6] and hv[6] ~= STATE_ACTIVE then return {USER_INACTIVE} end
  if tword and tword ~= STATE_ACTIVE and (op == OP_FOLLOW or tword == STATE_DELETED and (op == OP_BLOCK or op == OP_MUTE)) then
    return {TARGET_INACTIVE}
  end
end
-- What the two states make of an edge turned on (lib.lua's set): a block
-- of a hidden user, or an approval of a hidden requester, is hidden.
local pair = pairState(hv[6], tword)
local bucket
if take then
  local wait
  bucket, wait = take(hv[4], hv[5])
  if not bucket then return {RATE, wait} end
end
local function charge()
  if bucket then redis.call('HSET', uk.h, unpack(bucket)) end
end

-- The change, once decided: the event's op, user and target (u's and t's
-- ids, or t's and u's), and its effects as {code, on} on u's side and on
-- t's side.
local eop, eu, et = op, ARGV[A_USER], ARGV[A_TARGET]
local mine, theirs = {}, {}
local since, exp = 0, 0
local function none(st, o)
  charge()
  local s = 0
  if st[2] then s = tonumber(st[4]) end
  return {NONE, st[1], o or op, s, 0}
end

if op == OP_FOLLOW or op == OP_UNFOLLOW then
  local f = state(uk, 'fo', tm)
  if op == OP_UNFOLLOW then
    if f[2] then
      -- and the request of this direction, if regions left one beside the
      -- follow (followgraph.Event.Effects; dropped when there is none)
      mine, theirs = {{'fo', false}, {'ro', false}}, {{'fi', false}, {'ri', false}}
    else
      local r = state(uk, 'ro', tm)
      if not r[2] then return none(f) end
      eop, mine, theirs = OP_UNREQUEST, {{'ro', false}}, {{'ri', false}}
    end
  else
    if f[2] then return none(f) end
    if state(uk, 'bo', tm)[2] or state(uk, 'bi', tm)[2] then charge() return {BLOCKED} end
    local private = ARGV[A_PRIVATE] == '1' or (ARGV[A_PRIVATE] == '' and tk and redis.call('HGET', tk.h, H_PRIVATE) == '1')
    local r = state(uk, 'ro', tm)
    local max = tonumber(ARGV[A_MAX_FOLLOWING])
    if private then
      if r[2] then return none(r, OP_REQUEST) end
      eop, mine, theirs = OP_REQUEST, {{'ro', true}}, {{'ri', true}}
    else
      mine, theirs = {{'fo', true}, {'ro', false}}, {{'fi', true}, {'ri', false}}
    end
    if not r[2] and max > 0 and tonumber(hv[2] or '0') + tonumber(hv[3] or '0') >= max then
      charge()
      return {LIMIT}
    end
  end
elseif op == OP_BLOCK then
  local b = state(uk, 'bo', tm)
  if b[2] then return none(b) end
  mine = {{'bo', true}, {'fo', false}, {'fi', false}, {'ro', false}, {'ri', false}}
  theirs = {{'bi', true}, {'fi', false}, {'fo', false}, {'ri', false}, {'ro', false}}
elseif op == OP_UNBLOCK then
  local b = state(uk, 'bo', tm)
  if not b[2] then return none(b) end
  mine, theirs = {{'bo', false}}, {{'bi', false}}
elseif op == OP_MUTE or op == OP_UNMUTE then
  local mu = state(uk, 'mo', tm)
  local x = 0
  if mu[2] then x = expiry(uk, tm) end
  -- A mute of a deleted user is kept by no read (redisgraph's Graph.unexpired),
  -- nor by an unmute: nothing is kept of an edge with a deleted user.
  local on = mu[2] and (x == 0 or x > now) and tword ~= STATE_DELETED
  if op == OP_UNMUTE then
    if not on then return none({mu[1], false}) end
    mine = {{'mo', false}}
  else
    if on and ARGV[A_MUTE] == '0' and x == 0 then return none(mu) end
    if on then since = tonumber(mu[4]) end
    mine = {{'mo', true}}
  end
elseif op == OP_APPROVE or op == OP_REMOVE then
  eu, et = et, eu
  local f = state(uk, 'fi', tm)
  if op == OP_APPROVE then
    local r = state(uk, 'ri', tm)
    if f[2] then
      if not r[2] then return none(f, OP_FOLLOW) end
      -- Followed, and asked to follow too: a request made in one region
      -- while another approved an earlier one (followgraph.Mend). The
      -- request ends; the follow stays as it is.
      eop, mine, theirs = OP_UNREQUEST, {{'ri', false}}, {{'ro', false}}
      since = tonumber(f[4])
    else
      if not r[2] then charge() return {NOREQUEST} end
      eop, mine, theirs = OP_FOLLOW, {{'fi', true}, {'ri', false}}, {{'fo', true}, {'ro', false}}
    end
  elseif f[2] then
    eop, mine, theirs = OP_UNFOLLOW, {{'fi', false}}, {{'fo', false}}
  else
    local r = state(uk, 'ri', tm)
    if not r[2] then return none(f, OP_UNFOLLOW) end
    eop, mine, theirs = OP_UNREQUEST, {{'ri', false}}, {{'ro', false}}
  end
elseif op == OP_PRIVATE or op == OP_PUBLIC then
  local p = state(uk, PRIVATE_CODE, '')
  if p[2] == (op == OP_PRIVATE) then return none({p[1], false}) end
  tm, mine = '', {{PRIVATE_CODE, op == OP_PRIVATE}}
elseif op == OP_UNDO then
  local k, dir = ARGV[A_UNDO_KIND], ARGV[A_UNDO_DIR]
  local other = DIR_IN
  if dir == DIR_IN then other, eu, et = DIR_OUT, et, eu end
  local e = state(uk, k .. dir, tm)
  local word = OP_FOLLOW
  if k == KIND_REQUEST then word = OP_REQUEST end
  if not e[2] then return none(e, 'un' .. word) end
  if e[1] ~= ARGV[A_UNDO_VERSION] then return none(e, word) end
  eop = 'un' .. word
  mine, theirs = {{k .. dir, false}}, {{k .. other, false}}
else
  return redis.error_reply('unknown op ' .. op)
end

-- The change is made: first the outbox (see change.lua's XADD).
if redis.call('XLEN', KEYS[K_OUTBOX]) >= tonumber(ARGV[A_OUTBOX_LIMIT]) then return {FULL} end
local v = nextv(hv[1], now, region)
-- The states of the edges of the effects on one side, those not needed
-- (lib.lua) left out, with v raised past their versions: to the next of
-- the region's after theirs (nextv at a time of 0, which never leads).
local ekind = string.sub((string.gsub(eop, '^un', '')), 1, 1)
local function states(keys, list, m)
  local out, kept = {}, {}
  for _, e in ipairs(list) do
    local st = state(keys, e[1], m)
    if needed(e[1], e[2], st, ekind) then
      kept[#kept + 1], out[#kept + 1] = e, st
      if not vless(st[1], v) then v = nextv(st[1], 0, region) end
    end
  end
  return out, kept
end
local ms, ts
ms, mine = states(uk, mine, tm)
if tk then ts, theirs = states(tk, theirs, um) end
-- since: a new edge's is the change's time; a mute changed keeps its own.
if eop == OP_REQUEST or eop == OP_BLOCK or eop == OP_FOLLOW or (eop == OP_MUTE and since == 0) then since = vms(v) end
if eop == OP_MUTE and tonumber(ARGV[A_MUTE]) > 0 then exp = vms(v) + tonumber(ARGV[A_MUTE]) end
local fields = {E_USER, eu, E_TARGET, et, E_OP, eop, E_VERSION, v}
if eop == OP_MUTE then
  fields[#fields + 1], fields[#fields + 2] = E_SINCE, string.format('%d', since)
  fields[#fields + 1], fields[#fields + 2] = E_EXPIRES, string.format('%d', exp)
end
local id = redis.call('XADD', KEYS[K_OUTBOX], 'NOMKSTREAM', '*', unpack(fields))
if not id then return {LOST} end
local mute = {string.format('%d', since), string.format('%d', exp)}
for i, e in ipairs(mine) do set(uk, e[1], tm, v, e[2], ms[i], mute, pair) end
charge()
redis.call('HSET', uk.h, H_CLOCK, v)
local res = {CHANGED, v, eop, since, exp, id, redis.call('HINCRBY', uk.h, H_STAMP, 1)}
if tk and #theirs > 0 then
  for i, e in ipairs(theirs) do set(tk, e[1], um, v, e[2], ts[i], mute, pair) end
  observe(tk.h, v)
  res[8] = redis.call('HINCRBY', tk.h, H_STAMP, 1)
end
return res
