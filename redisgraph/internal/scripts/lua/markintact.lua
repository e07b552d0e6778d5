-- Gives a graph marker to a slot whose outbox stream exists and whose
-- marker does not: a graph written before markers were (MarkIntact).
--
-- KEYS (scripts.MarkerKeys): STREAM the stream, MARKER the marker.
-- ARGV (scripts.MarkerArgs): EPOCH the marker's epoch.
--
-- Returns 1 when it set the marker.
if redis.call('EXISTS', KEYS[K_STREAM]) == 0 or redis.call('EXISTS', KEYS[K_MARKER]) == 1 then return 0 end
redis.call('SET', KEYS[K_MARKER], ARGV[A_EPOCH])
return 1
