#!lua flags=no-writes
-- A user's counters and clock, and the sizes of the sets the counters
-- count, in one atomic step: what Reconcile checks the counters against.
--
-- KEYS: 1 out(u), 2 in(u), 3 h(u).
--
-- Returns {ZCARD out, ZCARD in, nout, nin, clk}; nout, nin and clk are
-- nil where h(u) lacks them.
local hv = redis.call('HMGET', KEYS[3], 'nout', 'nin', 'clk')
return {redis.call('ZCARD', KEYS[1]), redis.call('ZCARD', KEYS[2]), hv[1], hv[2], hv[3]}
