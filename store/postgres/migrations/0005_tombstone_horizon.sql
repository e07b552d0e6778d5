-- The tombstone horizon (followgraph.TombstonePurger), as in
-- store/sqlite: every tombstone with a version below it may be gone. It
-- only grows, raised in the same transaction as the removals it allows;
-- its row's lock orders a purge step with Apply and Import (see Apply).
-- Only edges between two users go: the private setting and the account
-- state, one row per user, stay.
INSERT INTO meta (key, value) VALUES ('tombstone_horizon', 0) ON CONFLICT (key) DO NOTHING;

-- The tombstones, oldest first, for PurgeTombstones. Partial: a live edge
-- has no entry, so a follow writes nothing here.
CREATE INDEX edges_tombstones ON edges (version) WHERE NOT following;
CREATE INDEX links_tombstones ON links (kind, version) WHERE NOT active;
