#!lua flags=no-writes
-- The members of a sorted set of 8-byte members that are scored ms and
-- come after member id in newest-first order (smaller members), largest
-- first, at most n: the part of a page after the cursor (ms, id) that
-- shares the cursor's millisecond. The rest of the page, the entries
-- scored below ms, is a plain ZRANGE BYSCORE.
--
-- KEYS (scripts.TiesKeys): SET the sorted set.
-- ARGV (scripts.TiesArgs): N n, MS ms, ID id.
--
-- The members scored ms are ranks lo to hi-1 (newest first); the first
-- below id is found by binary search over those ranks. Each command is
-- O(log n), but the last, which returns at most n members.
local key, n, ms, id = KEYS[K_SET], tonumber(ARGV[A_N]), ARGV[A_MS], ARGV[A_ID]

-- Lua compares strings by the locale; members are compared as bytes.
local function less(a, b)
  for i = 1, 8 do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return false
end

local lo = redis.call('ZCOUNT', key, '(' .. ms, '+inf')
local hi = lo + redis.call('ZCOUNT', key, ms, ms)
local top = hi
while lo < hi do
  local mid = math.floor((lo + hi) / 2)
  if less(redis.call('ZRANGE', key, mid, mid, 'REV')[1], id) then
    hi = mid
  else
    lo = mid + 1
  end
end
if lo >= top then return {} end
return redis.call('ZRANGE', key, lo, math.min(top, lo + n) - 1, 'REV')
