-- One step of removing a user's tombstones older than a horizon
-- (redisgraph's PurgeTombstones): the entries of its versions hashes that
-- are versions below it (16 hex digits: a hidden edge's start with HIDDEN)
-- of edges not in the side's sorted set, side after side (SIDE_CODES),
-- chunk after chunk, by HSCAN. The user's tombstone horizon (H_HORIZON) is
-- raised to the horizon before the first removal, in the same step, so
-- that effects.lua refuses from then on what these tombstones would have
-- stopped; a user who had none to remove is left without it (it costs
-- some 20 bytes a user).
--
-- KEYS (scripts.PurgeKeys): USER the user's keys.
-- ARGV (scripts.PurgeArgs): BELOW the horizon, LIMIT the most tombstones
--       to remove, and where the last step stopped: SIDE (an index of
--       SIDE_CODES), CHUNK and CURSOR (HSCAN's).
--
-- Returns {removed, side, chunk, cursor}: where the next step goes on, side
-- 0 when the user is done. A step reads some thousand entries at most.
local uk = userKeys(K_USER)
local below, limit = ARGV[A_BELOW], tonumber(ARGV[A_LIMIT])
local si, j, cursor = tonumber(ARGV[A_SIDE]), tonumber(ARGV[A_CHUNK]), ARGV[A_CURSOR]
local raised = false
local function raise()
  raised = true
  local hz = redis.call('HGET', uk.h, H_HORIZON)
  if not hz or vless(hz, below) then redis.call('HSET', uk.h, H_HORIZON, below) end
end
local removed, read = 0, 0
local c = counts(uk)
while si <= #SIDE_CODES do
  local s = sides[SIDE_CODES[si]]
  while j < c[groupOf[s[1]]] do
    local set, versions = chunkKey(uk[s[1]], j), chunkKey(uk[s[2]], j)
    repeat
      local r = redis.call('HSCAN', versions, cursor, 'COUNT', 100)
      local kv, gone, full = r[2], {}, false
      for i = 1, #kv, 2 do
        local v = kv[i + 1]
        if #v == #ZERO and vless(v, below) and not redis.call('ZSCORE', set, kv[i]) then
          if removed + #gone == limit then full = true break end
          gone[#gone + 1] = kv[i]
        end
      end
      if #gone > 0 then
        if not raised then raise() end
        removed = removed + redis.call('HDEL', versions, unpack(gone))
      end
      -- Full, the step ends on the same cursor: what it left is read again.
      if full then return {removed, si, j, cursor} end
      cursor, read = r[1], read + #kv / 2
      if read >= 1000 and cursor ~= '0' then return {removed, si, j, cursor} end
    until cursor == '0'
    j = j + 1
  end
  si, j = si + 1, 0
end
return {removed, 0, 0, '0'}
