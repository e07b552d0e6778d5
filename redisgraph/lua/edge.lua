-- A live change of any kind by user u, with other user t, decided on u's
-- side: every op but the plain follow and unfollow (change.lua's), and
-- those when change.lua says SLOW. The ops (ARGV 1):
--
--   follow, unfollow  u → t; a follow of a private t that u does not
--                     follow is a request, an unfollow that finds a
--                     request withdraws it (op unrequest)
--   block, unblock, mute, unmute   u → t
--   approve           t's request to u becomes the follow t → u
--   remove            ends the follow t → u, or t's request (unrequest)
--   private, public   u's setting (t is '0')
--   undo              ends the edge of kind ARGV 12 ('f' or 'r') between
--                     u and t (u → t when ARGV 14 is 'o', t → u when 'i')
--                     if it is still on at version ARGV 13: a change whose
--                     second step met a block (write.go's undo)
--
-- Every effect of the change (followgraph.Event.Effects) is written on
-- u's side, and on a standalone Redis on t's too, at one version: the
-- next of u's clock, raised above every version those edges have here,
-- so that edges t → u, whose versions come from t's clock, take it too
-- (the other side's step moves t's clock past it: effects.lua).
--
-- KEYS: 1-17 u's keys (lib.lua's userKeys), 18 the outbox stream of u's
--       slot, and on a standalone Redis also 19-35 t's keys.
-- ARGV: 1 the op, 2 t as a member, 3 the client's time in ms, 4 the
--       following limit (0: none), 5 the outbox bound, 6 u and 7 t in
--       decimal, 8 u's writes per second (0: no limit) and 9 their burst,
--       10 u as a member, 11 '1' when the caller knows t is private ('':
--       read it here, from t's keys), 12 a mute's duration in ms (0: none)
--       or an undo's kind, 13 and 14 an undo's version and direction.
--
-- Returns a status first (write.go's change* constants): {NONE, version,
-- op, since, expiry} when there is nothing to change (the edge's version,
-- ZERO if none, and since, ms, when it is on); {CHANGED, version, op,
-- since, expiry, the outbox entry id, u's stamp[, t's stamp]}; {LIMIT},
-- {FULL}, {LOST}, {RATE, ms} as change.lua's; {BLOCKED}: one of u and t
-- blocks the other; {NOREQUEST}: approve found neither request nor
-- follow; {USER_INACTIVE}, {TARGET_INACTIVE}: refused by u's or t's
-- account state. op is the op of the event (or of the edge found), since and
-- expiry are ms (expiry 0: none). Nothing is changed unless CHANGED.
local op, tm, um, now = ARGV[1], ARGV[2], ARGV[10], tonumber(ARGV[3])
local uk = userKeys(1)
local tk = KEYS[NKEYS + 2] and userKeys(NKEYS + 2)
local hv = redis.call('HMGET', uk.h, 'clk', 'nout', 'nro', 'rk', 'rkt', 's')
-- Account states (state.lua): no write by a user who is not active (an
-- undo is the graph's own, of a change already made); no follow or
-- request of one, nor a block or mute of a deleted one (on a Cluster,
-- where t's keys are not here, the second step checks; see write.go).
local tword = tk and redis.call('HGET', tk.h, 's')
if op ~= 'undo' then
  if hv[6] and hv[6] ~= 'active' then return {USER_INACTIVE} end
  if tword and tword ~= 'active' and (op == 'follow' or tword == 'deleted' and (op == 'block' or op == 'mute')) then
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

-- The change, once decided: the event's op, user and target (as 'u' or
-- 't'), and its effects as {code, on} on u's side and on t's side.
local eop, eu, et = op, 'u', 't'
local mine, theirs = {}, {}
local since, exp = 0, 0
local function none(st, o)
  charge()
  local s = 0
  if st[2] then s = tonumber(st[4]) end
  return {NONE, st[1], o or op, s, 0}
end

if op == 'follow' or op == 'unfollow' then
  local f = state(uk, 'fo', tm)
  if op == 'unfollow' then
    if f[2] then
      mine, theirs = {{'fo', false}}, {{'fi', false}}
    else
      local r = state(uk, 'ro', tm)
      if not r[2] then return none(f) end
      eop, mine, theirs = 'unrequest', {{'ro', false}}, {{'ri', false}}
    end
  else
    if f[2] then return none(f) end
    if state(uk, 'bo', tm)[2] or state(uk, 'bi', tm)[2] then charge() return {BLOCKED} end
    local private = ARGV[11] == '1' or (ARGV[11] == '' and tk and redis.call('HGET', tk.h, 'p') == '1')
    local r = state(uk, 'ro', tm)
    local max = tonumber(ARGV[4])
    if private then
      if r[2] then return none(r, 'request') end
      eop, mine, theirs = 'request', {{'ro', true}}, {{'ri', true}}
    else
      mine, theirs = {{'fo', true}, {'ro', false}}, {{'fi', true}, {'ri', false}}
    end
    if not r[2] and max > 0 and tonumber(hv[2] or '0') + tonumber(hv[3] or '0') >= max then
      charge()
      return {LIMIT}
    end
  end
elseif op == 'block' then
  local b = state(uk, 'bo', tm)
  if b[2] then return none(b) end
  mine = {{'bo', true}, {'fo', false}, {'fi', false}, {'ro', false}, {'ri', false}}
  theirs = {{'bi', true}, {'fi', false}, {'fo', false}, {'ri', false}, {'ro', false}}
elseif op == 'unblock' then
  local b = state(uk, 'bo', tm)
  if not b[2] then return none(b) end
  mine, theirs = {{'bo', false}}, {{'bi', false}}
elseif op == 'mute' or op == 'unmute' then
  local mu = state(uk, 'mo', tm)
  local x = 0
  if mu[2] then x = expiry(uk, tm) end
  -- A mute of a deleted user is kept by no read (read.go's unexpired),
  -- nor by an unmute: nothing is kept of an edge with a deleted user.
  local on = mu[2] and (x == 0 or x > now) and tword ~= 'deleted'
  if op == 'unmute' then
    if not on then return none({mu[1], false}) end
    mine = {{'mo', false}}
  else
    if on and ARGV[12] == '0' and x == 0 then return none(mu) end
    if on then since = tonumber(mu[4]) end
    mine = {{'mo', true}}
  end
elseif op == 'approve' or op == 'remove' then
  eu, et = 't', 'u'
  local f = state(uk, 'fi', tm)
  if op == 'approve' then
    if f[2] then return none(f, 'follow') end
    local r = state(uk, 'ri', tm)
    if not r[2] then charge() return {NOREQUEST} end
    eop, mine, theirs = 'follow', {{'fi', true}, {'ri', false}}, {{'fo', true}, {'ro', false}}
  elseif f[2] then
    eop, mine, theirs = 'unfollow', {{'fi', false}}, {{'fo', false}}
  else
    local r = state(uk, 'ri', tm)
    if not r[2] then return none(f, 'unfollow') end
    eop, mine, theirs = 'unrequest', {{'ri', false}}, {{'ro', false}}
  end
elseif op == 'private' or op == 'public' then
  local p = state(uk, 'p', '')
  if p[2] == (op == 'private') then return none({p[1], false}) end
  tm, mine = '', {{'p', op == 'private'}}
elseif op == 'undo' then
  local k, dir = ARGV[12], ARGV[14]
  local other = 'i'
  if dir == 'i' then other, eu, et = 'o', 't', 'u' end
  local e = state(uk, k .. dir, tm)
  local word = 'follow'
  if k == 'r' then word = 'request' end
  if not e[2] then return none(e, 'un' .. word) end
  if e[1] ~= ARGV[13] then return none(e, word) end
  eop = 'un' .. word
  mine, theirs = {{k .. dir, false}}, {{k .. other, false}}
else
  return redis.error_reply('unknown op ' .. op)
end

-- The change is made: first the outbox (see change.lua's XADD).
if redis.call('XLEN', KEYS[NKEYS + 1]) >= tonumber(ARGV[5]) then return {FULL} end
local v = nextv(hv[1])
-- The states of the edges of the effects on one side, those not needed
-- (lib.lua) left out, with v raised past their versions.
local ekind = string.sub((string.gsub(eop, '^un', '')), 1, 1)
local function states(keys, list, m)
  local out, kept = {}, {}
  for _, e in ipairs(list) do
    local st = state(keys, e[1], m)
    if needed(e[1], e[2], st, ekind) then
      kept[#kept + 1], out[#kept + 1] = e, st
      if not vless(st[1], v) then v = vnext(st[1]) end
    end
  end
  return out, kept
end
local ms, ts
ms, mine = states(uk, mine, tm)
if tk then ts, theirs = states(tk, theirs, um) end
-- since: a new edge's is the change's time; a mute changed keeps its own.
if eop == 'request' or eop == 'block' or eop == 'follow' or (eop == 'mute' and since == 0) then since = vms(v) end
if eop == 'mute' and tonumber(ARGV[12]) > 0 then exp = vms(v) + tonumber(ARGV[12]) end
local ids = {u = ARGV[6], t = ARGV[7]}
local fields = {'u', ids[eu], 't', ids[et], 'op', eop, 'v', v}
if eop == 'mute' then
  fields[#fields + 1], fields[#fields + 2] = 's', string.format('%d', since)
  fields[#fields + 1], fields[#fields + 2] = 'x', string.format('%d', exp)
end
local id = redis.call('XADD', KEYS[NKEYS + 1], 'NOMKSTREAM', '*', unpack(fields))
if not id then return {LOST} end
local mute = {string.format('%d', since), string.format('%d', exp)}
for i, e in ipairs(mine) do set(uk, e[1], tm, v, e[2], ms[i], mute, pair) end
charge()
redis.call('HSET', uk.h, 'clk', v)
local res = {CHANGED, v, eop, since, exp, id, redis.call('HINCRBY', uk.h, 'st', 1)}
if tk and #theirs > 0 then
  for i, e in ipairs(theirs) do set(tk, e[1], um, v, e[2], ts[i], mute, pair) end
  observe(tk.h, v)
  res[8] = redis.call('HINCRBY', tk.h, 'st', 1)
end
return res
