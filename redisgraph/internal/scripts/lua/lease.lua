-- Takes or renews a lease: a key holding its owner's name, with a time to
-- live.
--
-- KEYS (scripts.LeaseKeys): LEASE the lease.
-- ARGV (scripts.LeaseArgs): OWNER the owner, TTL the time to live in ms.
--
-- Returns 1 when the owner holds the lease, 0 when another does.
local cur = redis.call('GET', KEYS[K_LEASE])
if cur == ARGV[A_OWNER] then
  redis.call('PEXPIRE', KEYS[K_LEASE], ARGV[A_TTL])
  return 1
end
if cur then return 0 end
redis.call('SET', KEYS[K_LEASE], ARGV[A_OWNER], 'PX', ARGV[A_TTL])
return 1
