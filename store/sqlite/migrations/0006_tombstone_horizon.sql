-- The tombstone horizon (followgraph.TombstonePurger): every tombstone
-- with a version below it may be gone, removed by PurgeTombstones once no
-- older change can still arrive. It only grows, and is raised in the same
-- transaction as the removals it allows. A change below it to an edge
-- with no row is refused, never written as new (docs/design/horizon.md).
-- Only edges between two users go: the private setting and the account
-- state, one row per user, stay.
INSERT INTO meta (key, value) VALUES ('tombstone_horizon', 0);

-- The tombstones, oldest first, for PurgeTombstones. Partial: a live edge
-- has no entry, so a follow writes nothing here; an unfollow adds one, a
-- follow again removes it.
CREATE INDEX edges_tombstones ON edges (version) WHERE following = 0;
CREATE INDEX links_tombstones ON links (kind, version) WHERE active = 0;
