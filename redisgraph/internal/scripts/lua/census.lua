#!lua flags=no-writes
-- A user's counters, clock and private setting, and the sizes of the sets
-- the counters count, in one atomic step: what Reconcile checks the
-- counters against.
--
-- KEYS (scripts.CensusKeys): H h(u), then SETS the sorted set of each side
--       of SIDE_CODES (layout.lua), in that order.
--
-- Returns {clk, p, pv, then for each side the size of its set (over its
-- chunks) and its counter}; the fields of h(u) are nil where h(u) lacks them.
local fields = {H_CLOCK, H_PRIVATE, H_PRIVATE_V}
for _, code in ipairs(SIDE_CODES) do fields[#fields + 1] = sides[code][3] end
for _, code in ipairs(SIDE_CODES) do fields[#fields + 1] = groups[code].field end
local hv = redis.call('HMGET', KEYS[K_H], unpack(fields))
local res = {hv[1], hv[2], hv[3]}
for i = 1, #SIDE_CODES do
  local n, card = tonumber(hv[3 + #SIDE_CODES + i] or '1'), 0
  for j = 0, n - 1 do card = card + redis.call('ZCARD', chunkKey(KEYS[K_SETS + i - 1], j)) end
  res[#res + 1] = card
  res[#res + 1] = hv[3 + i]
end
return res
