-- One counterpart's side of one edge of an account-state job on a Redis
-- Cluster (jobs.Jobs.ArchiveBatch), after version.lua and lib.lua.
-- There the two sides of an edge are in two slots, so a batch of user u's
-- job is two steps: this script on each counterpart c's side first, then
-- archive.lua on u's side with the answers. A job that stops between the
-- two finds the edges again on u's side (still shown for a hide, still
-- hidden for a show or a drop), and runs this step again, which changes
-- nothing the second time.
--
-- KEYS (scripts.PairSideKeys): SET c's sorted set of the side, VERSIONS
--       its versions hash, H h(c), RF rf(c).
-- ARGV (scripts.PairSideArgs): STEP STEP_HIDE, STEP_SHOW or STEP_DROP,
--       CODE c's side code (lib.lua's sides), MEMBER u as a member,
--       VERSION the edge's version as u's side holds it (without the
--       HIDDEN of a hidden edge).
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
local op, code, um, v = ARGV[A_STEP], ARGV[A_CODE], ARGV[A_MEMBER], ARGV[A_VERSION]
local s = sides[code]
if not s then return redis.error_reply('unknown side ' .. code) end
local uk = {[s[1]] = KEYS[K_SET], [s[2]] = KEYS[K_VERSIONS], h = KEYS[K_H], rf = KEYS[K_RF]}
local st = state(uk, code, um)
if vless(v, st[1]) then return NEWER end
local older = st[1] ~= v

local function wrote(status)
  observe(uk.h, v)
  redis.call('HINCRBY', uk.h, H_STAMP, 1)
  return status
end

if op == STEP_HIDE then
  if st[5] and not older then return DONE end
  if not st[2] and not older then return DONE end -- off at this version: nothing to hide
  set(uk, code, um, v, true, st, nil, 'hidden')
  return wrote(DONE)
end
if op == STEP_DROP then
  if not st[2] then return DONE end -- off (a tombstone at the version, or older)
  set(uk, code, um, v, false, st)
  return wrote(DONE)
end

-- show
local cs = redis.call('HGET', uk.h, H_STATE) or STATE_ACTIVE
if cs == STATE_DELETED then
  if st[2] then
    set(uk, code, um, v, false, st)
    return wrote(ENDED)
  end
  return ENDED
end
if cs ~= STATE_ACTIVE then
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
redis.call('HINCRBY', uk.h, H_HIDDEN, -1)
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
