-- Reconcile's repairs of the other kinds on one user's keys: each edge
-- (or the private setting) is set to the expected state where Redis does
-- not hold a state newer than both that state and the horizon (as
-- bulk.lua's repairs), with lib.lua's set, the write the rest uses; then
-- the flags in rf of the members given are set from the edges, and each
-- counter to the size of its set.
--
-- KEYS (scripts.LinksKeys): USER the user's keys (lib.lua's userKeys).
-- ARGV (scripts.LinksArgs): HORIZON the horizon (a version), N the number
--       of edges, then EDGES, each edge as six values: its side code
--       (lib.lua's sides, or PRIVATE_CODE), the other user as a member (''
--       for PRIVATE_CODE), the state: '1' on, '0' off or EDGE_NONE no
--       record, its version ('' for EDGE_NONE), a mute's since and expiry
--       (ms; expiry 0: none); then the members whose flags to set.
--
-- Returns {the user's stamp, a string of one character per edge: '1'
-- where it was written}.
local uk = userKeys(K_USER)
local horizon, n = ARGV[A_HORIZON], tonumber(ARGV[A_N])
local flags, written = {}, false
local members = {}
for i = 0, n - 1 do
  local b = A_EDGES + 6 * i
  local code, m, want, v = ARGV[b], ARGV[b + 1], ARGV[b + 2], ARGV[b + 3]
  local st = state(uk, code, m)
  if want == EDGE_NONE then v = ZERO end
  local differs = st[2] ~= (want == '1') or vless(st[1], v) or vless(v, st[1])
  local write = differs and (not vless(v, st[1]) or not vless(horizon, st[1]))
  if write and want == EDGE_NONE then
    if code == PRIVATE_CODE then
      redis.call('HDEL', uk.h, H_PRIVATE, H_PRIVATE_V)
    else
      local s = sides[code]
      redis.call('ZREM', ck(uk, s[1], m), m)
      redis.call('HDEL', ck(uk, s[2], m), m)
      if code == 'mo' then redis.call('HDEL', ck(uk, 'mx', m), m) end
    end
  elseif write then
    set(uk, code, m, v, want == '1', st, {ARGV[b + 4], ARGV[b + 5]})
  end
  written = written or write
  flags[#flags + 1] = write and '1' or '0'
  if m ~= '' then members[#members + 1] = m end
end
for i = A_EDGES + 6 * n, #ARGV do members[#members + 1] = ARGV[i] end

-- The flags of each member from the edges it has on, as set keeps them.
for _, m in ipairs(members) do
  local f = 0
  for code, bit in pairs(flagOf) do
    if redis.call('ZSCORE', ck(uk, sides[code][1], m), m) then f = f + bit end
  end
  local rf = ck(uk, 'rf', m)
  local had = tonumber(redis.call('ZSCORE', rf, m) or '0')
  if f ~= had then
    written = true
    if f == 0 then
      redis.call('ZREM', rf, m)
    else
      redis.call('ZADD', rf, f, m)
      fit(uk, 'rf', m)
    end
  end
end
-- Each counter is its set's size.
for code in pairs(flagOf) do
  local s = sides[code]
  local card = cardOf(uk, s[1])
  if tonumber(redis.call('HGET', uk.h, s[3]) or '0') ~= card then
    redis.call('HSET', uk.h, s[3], card)
    written = true
  end
end
local st = stamp(uk.h)
if written then st = redis.call('HINCRBY', uk.h, H_STAMP, 1) end
return {st, table.concat(flags)}
