#!lua flags=no-writes
-- A user's counters, clock and private setting, and the sizes of the sets
-- the counters count, in one atomic step: what Reconcile checks the
-- counters against.
--
-- KEYS: 1 out(u), 2 in(u), 3 h(u), then the sets of the other kinds:
--       4 bo(u), 5 bi(u), 6 mo(u), 7 ro(u), 8 ri(u).
--
-- Returns {ZCARD out, ZCARD in, nout, nin, clk, p, pv, then ZCARD and the
-- counter of each of KEYS[4..8]}; the fields of h(u) are nil where h(u)
-- lacks them.
local hv = redis.call('HMGET', KEYS[3], 'nout', 'nin', 'clk', 'p', 'pv', 'nbo', 'nbi', 'nmo', 'nro', 'nri')
local res = {redis.call('ZCARD', KEYS[1]), redis.call('ZCARD', KEYS[2]), hv[1], hv[2], hv[3], hv[4], hv[5]}
for i = 4, 8 do
  res[#res + 1] = redis.call('ZCARD', KEYS[i])
  res[#res + 1] = hv[i + 2]
end
return res
