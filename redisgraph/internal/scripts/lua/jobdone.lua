-- Takes a user out of the jobs set once its account-state job is done, if
-- its state's version is still the one the job ran for; a state changed
-- since keeps it there, for the new state's job.
--
-- KEYS (scripts.JobDoneKeys): H h(u), JOBS the jobs set of u's slot.
-- ARGV (scripts.JobDoneArgs): VERSION the state's version the job ran
--       for, USER u in decimal.
if redis.call('HGET', KEYS[K_H], H_STATE_V) == ARGV[A_VERSION] then return redis.call('ZREM', KEYS[K_JOBS], ARGV[A_USER]) end
return 0
