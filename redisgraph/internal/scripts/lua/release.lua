-- Gives up a lease, if the owner holds it.
--
-- KEYS (scripts.LeaseKeys): LEASE the lease.
-- ARGV (scripts.LeaseArgs): OWNER the owner.
if redis.call('GET', KEYS[K_LEASE]) == ARGV[A_OWNER] then return redis.call('DEL', KEYS[K_LEASE]) end
return 0
