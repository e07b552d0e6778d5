-- The seeds' follow script, literally: check, then both directions, then
-- the counters, in one atomic EVALSHA. Used by the Go baseline
-- (seeds_bench_test.go) and by follow_bench.sh, so that both run the same
-- script.
--
-- From follow-high-concurrency-zset-lua-mq (§2, §3): following:{uid} and
-- follower:{uid} sorted sets scored by follow time; "zscore, return if
-- followed, zadd, hincrby follow:count". Both directions in the same script
-- as redis-follow-set-zset-guide (§2.3) and redis-social-relations-practice
-- (§5.1) do it.
--
-- KEYS[1] following:<user>   KEYS[2] follower:<target>
-- KEYS[3] follow:count (follower counts, field <target>)
-- KEYS[4] following:count (following counts, field <user>)
-- ARGV[1] user   ARGV[2] target   ARGV[3] follow time, unix ms
-- Returns 1 when the follow is new, 0 when user already followed target.
if redis.call('ZSCORE', KEYS[1], ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[2])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
redis.call('HINCRBY', KEYS[3], ARGV[2], 1)
redis.call('HINCRBY', KEYS[4], ARGV[1], 1)
return 1
