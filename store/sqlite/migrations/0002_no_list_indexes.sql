-- The list indexes of 0001 are dropped. Every read of the single-machine
-- service is answered by the engine, which loads from this file at start
-- (a scan in primary-key order) and never reads the lists from it; yet the
-- two indexes made each persisted edge cost three B-tree writes instead of
-- one, which held the persister below the service's write rate (see
-- docs/DESIGN.md, "The SQLite record"). The record still answers any edge
-- by its key, and every edge of a follower in order.
DROP INDEX IF EXISTS edges_following;
DROP INDEX IF EXISTS edges_followers;
