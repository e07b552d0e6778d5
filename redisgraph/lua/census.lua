#!lua flags=no-writes
-- A user's counters, clock and private setting, and the sizes of the sets
-- the counters count, in one atomic step: what Reconcile checks the
-- counters against.
--
-- KEYS: 1 h(u), then the sorted set of each side of SIDE_CODES
--       (layout.lua), in that order.
--
-- Returns {clk, p, pv, then for each side the ZCARD of its set and its
-- counter}; the fields of h(u) are nil where h(u) lacks them.
local fields = {'clk', 'p', 'pv'}
for _, code in ipairs(SIDE_CODES) do fields[#fields + 1] = sides[code][3] end
local hv = redis.call('HMGET', KEYS[1], unpack(fields))
local res = {hv[1], hv[2], hv[3]}
for i = 1, #SIDE_CODES do
  res[#res + 1] = redis.call('ZCARD', KEYS[1 + i])
  res[#res + 1] = hv[3 + i]
end
return res
