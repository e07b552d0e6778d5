-- Creates an empty outbox stream where there is none (XADD with MAXLEN 0
-- adds an entry and trims it at once), and with it the slot's graph
-- marker (InitOutbox).
--
-- KEYS (scripts.MarkerKeys): STREAM the stream, MARKER the marker.
-- ARGV (scripts.MarkerArgs): EPOCH the marker's epoch.
--
-- Returns 1 when it created the stream, 0 when there was one.
if redis.call('EXISTS', KEYS[K_STREAM]) == 1 then return 0 end
redis.call('XADD', KEYS[K_STREAM], 'MAXLEN', '0', '*', E_CREATED, '1')
redis.call('SET', KEYS[K_MARKER], ARGV[A_EPOCH])
return 1
