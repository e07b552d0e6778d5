-- Gives a slot's graph marker a new epoch where the slot's outbox stream
-- exists (Vouch).
--
-- KEYS (scripts.MarkerKeys): STREAM the outbox stream, MARKER the marker.
-- ARGV (scripts.MarkerArgs): EPOCH the epoch.
--
-- Returns 1 when it set the marker, 0 when the stream is gone.
if redis.call('EXISTS', KEYS[K_STREAM]) == 0 then return 0 end
redis.call('SET', KEYS[K_MARKER], ARGV[A_EPOCH])
return 1
