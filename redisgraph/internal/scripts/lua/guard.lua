#!lua flags=no-writes
-- Every read's check of a slot's graph marker (the guard): a vouched
-- script, so a server not vouched for answers NOSCRIPT.
--
-- KEYS (scripts.GuardKeys): MARKER the marker.
--
-- Returns the marker's value (its epoch), or nil.
return redis.call('GET', KEYS[K_MARKER])
