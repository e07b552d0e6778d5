-- One counterpart's side of one edge of an account-state job on a Redis
-- Cluster (archive.go's archiveCluster), after version.lua and lib.lua.
-- There the two sides of an edge are in two slots, so a batch of user u's
-- job is two steps: this script on each counterpart c's side first, then
-- archive.lua on u's side with the answers. A job that stops between the
-- two finds the edges again on u's side (still shown for a hide, still
-- hidden for a show or a drop), and runs this step again, which changes
-- nothing the second time.
--
-- KEYS: 1 c's sorted set of the side, 2 its versions hash, 3 h(c), 4 rf(c).
-- ARGV: 1 'hide', 'show' or 'drop', 2 c's side code (lib.lua's sides), 3 u
--       as a member, 4 the edge's version as u's side holds it (without
--       the 'h' of a hidden edge).
--
-- Returns what u's side is to do:
--   DONE (1)   c's side is as the step asks: hidden at the version (hide),
--              shown again with its version (show), or ended (drop);
--   WAIT (2)   show: c is not active either, so the edge stays hidden,
--              for c's own job to show;
--   ENDED (3)  show: c is deleted, and its side of the edge is ended;
--   NEWER (0)  c's side holds a change of the edge newer than u's: its
--              event's second step is on its way to u's side, and will
--              write over whatever u's side holds. Nothing changes here.
-- A side older than u's (a second step not yet there) is brought to the
-- version u's side has, as the step leaves it.
local op, code, um, v = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local s = sides[code]
if not s then return redis.error_reply('unknown side ' .. code) end
local uk = {[s[1]] = KEYS[1], [s[2]] = KEYS[2], h = KEYS[3], rf = KEYS[4]}
local st = state(uk, code, um)
if vless(v, st[1]) then return NEWER end
local older = st[1] ~= v

local function wrote(status)
  observe(uk.h, v)
  redis.call('HINCRBY', uk.h, 'st', 1)
  return status
end

if op == 'hide' then
  if st[5] and not older then return DONE end
  if not st[2] and not older then return DONE end -- off at this version: nothing to hide
  set(uk, code, um, v, true, st, nil, 'hidden')
  return wrote(DONE)
end
if op == 'drop' then
  if not st[2] then return DONE end -- off (a tombstone at the version, or older)
  set(uk, code, um, v, false, st)
  return wrote(DONE)
end

-- show
local cs = redis.call('HGET', uk.h, 's') or 'active'
if cs == 'deleted' then
  if st[2] then
    set(uk, code, um, v, false, st)
    return wrote(ENDED)
  end
  return ENDED
end
if cs ~= 'active' then
  if st[5] and not older then return WAIT end
  set(uk, code, um, v, true, st, nil, 'hidden')
  return wrote(WAIT)
end
if not st[5] and not older then
  if st[2] then return DONE end -- shown already: a step run again
  return NEWER
end
if not st[5] then
  set(uk, code, um, v, true, st, nil, nil) -- a second step not yet here
  return wrote(DONE)
end
-- The hidden edge, back into the sorted set, the counter and the flags,
-- with its version (none stored when its counter is 0, as change.lua
-- writes).
redis.call('ZADD', ck(uk, s[1], um), string.format('%d', vms(v)), um)
redis.call('HINCRBY', uk.h, s[3], 1)
redis.call('HINCRBY', uk.h, 'nh', -1)
if vctr(v) ~= 0 then
  redis.call('HSET', ck(uk, s[2], um), um, v)
  if s[4] then redis.call('HDEL', uk.h, s[4]) end
else
  redis.call('HDEL', ck(uk, s[2], um), um)
end
local f = flagOf[code]
if f then redis.call('ZINCRBY', ck(uk, 'rf', um), f, um) end
fit(uk, s[1], um)
if f then fit(uk, 'rf', um) end
return wrote(DONE)
