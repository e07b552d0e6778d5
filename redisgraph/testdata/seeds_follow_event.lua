-- The seeds' follow script (seeds_follow.lua) with one thing added: the
-- change event, written to a stream in the same atomic step, as the
-- engine's outbox requires. No versions, clock, change stamp, outbox
-- bound or following limit: it measures what the event alone costs the
-- seeds' design. follow_bench.sh runs it ("seeds-event").
--
-- KEYS[1] following:<user>   KEYS[2] follower:<target>
-- KEYS[3] follow:count       KEYS[4] following:count
-- KEYS[5] the event stream
-- ARGV[1] user   ARGV[2] target   ARGV[3] follow time, unix ms
if redis.call('ZSCORE', KEYS[1], ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[2])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
redis.call('HINCRBY', KEYS[3], ARGV[2], 1)
redis.call('HINCRBY', KEYS[4], ARGV[1], 1)
redis.call('XADD', KEYS[5], '*', 'u', ARGV[1], 't', ARGV[2], 'op', 'follow', 'v', ARGV[3])
return 1
