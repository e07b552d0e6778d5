-- The effects of one event on the sides of one or two users, each only
-- over an older version of its edge (followgraph.Event.Effects): Apply, the
-- second step of a change on a Cluster (the other user's side), and the
-- settling of the outbox. Writes no outbox event.
--
-- An effect that turns on a follow or a request is not written while a
-- block between the two stands, either way, with a version at least the
-- event's (the block ended it), nor a request when the follow of its
-- direction has (the follow ended it): so the end of a request of which a
-- side has no record needs no tombstone (lib.lua's needed). A block's
-- ends are tombstones, which decide once no block stands.
--
-- KEYS (scripts.EffectsKeys): USER the keys of a user (lib.lua's
--       userKeys), and OTHER those of a second one, if any.
-- ARGV (scripts.EffectsArgs): VERSION the version, REFUSE REFUSE_BLOCKS
--       to refuse (change nothing, return BLOCKED) when a follow or
--       request would be turned on between two users one of whom blocks
--       the other, as a live second step must, REFUSE_INACTIVE to refuse
--       that and also (TARGET_INACTIVE) a follow or request turned on
--       here, on the side of its target, when the target is not active
--       (the live second step of a follow or request), REFUSE_NOTHING
--       else; MUTE_SINCE and MUTE_EXPIRES a mute's (ms; expiry 0: none),
--       KIND the letter of the event's kind, FIRST_EFFECTS how many
--       effects are the first user's, TOMBSTONE_HORIZON the deployment's
--       (ZERO: none), then EFFECTS, each effect as three values: its side
--       code (lib.lua's sides, or PRIVATE_CODE), the other user as a member
--       ('' for PRIVATE_CODE), '1' for on or '0' for off.
--
-- An edge turned on, of which a side keeps no record, by a version below
-- the higher of TOMBSTONE_HORIZON and the user's own (H_HORIZON, raised by
-- purge.lua) is refused there: its tombstone, newer than the change, may
-- have been removed (followgraph.Refusal).
--
-- Returns {CHANGED (1) or NONE (0), each user's stamp, each user's
-- account state (STATE_ACTIVE when never set), then for each effect
-- refused its index among EFFECTS (from 0) and the horizon it is below},
-- or {BLOCKED}, or {TARGET_INACTIVE}. On a Cluster, where each call has
-- one user, the caller settles the other side by the state
-- (effects.Pairs).
local v, check, mute = ARGV[A_VERSION], ARGV[A_REFUSE] ~= REFUSE_NOTHING, {ARGV[A_MUTE_SINCE], ARGV[A_MUTE_EXPIRES]}
local ekind, n1 = ARGV[A_KIND], tonumber(ARGV[A_FIRST_EFFECTS])
local users = {userKeys(K_USER)}
if KEYS[K_OTHER] then users[2] = userKeys(K_OTHER) end
local effects = {}
for i = A_EFFECTS, #ARGV, 3 do
  local u = 1
  if (i - A_EFFECTS) / 3 >= n1 then u = 2 end
  effects[#effects + 1] = {u, ARGV[i], ARGV[i + 1], ARGV[i + 2] == '1'}
end

-- blocks returns whether a block between the user whose keys are uk and m
-- is on, either way, and the newest version of the two blocks' edges.
local function blocks(uk, m)
  if redis.call('EXISTS', ck(uk, 'bo', m), ck(uk, 'bi', m), ck(uk, 'bov', m), ck(uk, 'biv', m)) == 0 then return false, ZERO end
  local a, b = state(uk, 'bo', m), state(uk, 'bi', m)
  if vless(a[1], b[1]) then return a[2] or b[2], b[1] end
  return a[2] or b[2], a[1]
end

-- A follow or a request turned on.
local function linking(e) local k = string.sub(e[2], 1, 1) return e[4] and (k == KIND_FOLLOW or k == KIND_REQUEST) end
if check then
  for _, e in ipairs(effects) do
    if linking(e) and blocks(users[e[1]], e[3]) then return {BLOCKED} end
  end
end
-- Each user's account state and tombstone horizon, in one HMGET. What the
-- users' states make of an edge turned on (lib.lua's set): on a Cluster
-- only one user's state is here, and the caller settles the other side
-- (effects.Pairs).
local words, hzs = {}, {}
for i, uk in ipairs(users) do
  local hv = redis.call('HMGET', uk.h, H_STATE, H_HORIZON)
  words[i], hzs[i] = hv[1], hv[2]
end
if ARGV[A_REFUSE] == REFUSE_INACTIVE then
  for _, e in ipairs(effects) do
    local w = words[e[1]]
    if linking(e) and string.sub(e[2], 2) == DIR_IN and w and w ~= STATE_ACTIVE and
        vless(state(users[e[1]], e[2], e[3])[1], v) then
      return {TARGET_INACTIVE}
    end
  end
end
local pair = pairState(words[1], words[2])
local floors = {}
for i = 1, #users do
  floors[i] = ARGV[A_TOMBSTONE_HORIZON]
  if hzs[i] and vless(floors[i], hzs[i]) then floors[i] = hzs[i] end
end
local changed, touched, refused = {}, {}, {}
for i, e in ipairs(effects) do
  local uk, code, m, on = users[e[1]], e[2], e[3], e[4]
  local st = state(uk, code, m)
  local write = vless(st[1], v) and needed(code, on, st, ekind)
  if write and on and code ~= PRIVATE_CODE and st[1] == ZERO and vless(v, floors[e[1]]) then
    write = false
    refused[#refused + 1], refused[#refused + 2] = i - 1, floors[e[1]]
  end
  if write and linking(e) then
    -- A block that stands and is newer, or whose unblock is, refuses it
    -- (regions mend a follow newer than a block that stands: followgraph.Mend);
    -- once no block stands, its tombstone decides, which the block wrote.
    local standing, newest = blocks(uk, m)
    write = not standing or vless(newest, v)
    if write and string.sub(code, 1, 1) == KIND_REQUEST then write = vless(state(uk, KIND_FOLLOW .. string.sub(code, 2), m)[1], v) end
  end
  if write then
    set(uk, code, m, v, on, st, mute, pair)
    changed[e[1]] = true
  end
  touched[e[1]] = true
end
local res = {NONE}
for u, uk in ipairs(users) do
  -- The user's clock passes every version on the user's side, those of
  -- the other user's changes written here too, so that the user's next
  -- change is newer than all of them: a change is then newer than every
  -- state its own side knew of the pair (the rules above compare edges
  -- whose versions come from both users' clocks).
  if touched[u] then observe(uk.h, v) end
  if changed[u] then
    res[1] = CHANGED
    res[u + 1] = redis.call('HINCRBY', uk.h, H_STAMP, 1)
  else
    res[u + 1] = stamp(uk.h)
  end
end
for u = 1, #users do res[#users + 1 + u] = words[u] or STATE_ACTIVE end
for _, r in ipairs(refused) do res[#res + 1] = r end
return res
