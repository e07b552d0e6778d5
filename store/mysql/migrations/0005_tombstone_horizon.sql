-- The tombstone horizon (followgraph.TombstonePurger), as in
-- store/sqlite: every tombstone with a version below it may be gone. It
-- only grows, raised in the same transaction as the removals it allows,
-- which holds the writers' lock (see Apply). Only edges between two users
-- go: the private setting and the account state, one row per user, stay.
INSERT IGNORE INTO meta (`key`, value) VALUES ('tombstone_horizon', 0);

-- The tombstones, oldest first, for PurgeTombstones. MySQL has no partial
-- index, so every row has an entry; versions grow with time, so a new
-- edge's entry goes to the index's newest end. Safe to run again (see
-- 0004): each index is added only when information_schema lacks it.
SET @followgraph_ddl = IF((SELECT COUNT(*) FROM information_schema.statistics
	WHERE table_schema = DATABASE() AND table_name = 'edges' AND index_name = 'edges_tombstones') = 0,
	'ALTER TABLE edges ADD INDEX edges_tombstones (following, version)', 'DO 0');
PREPARE followgraph_ddl FROM @followgraph_ddl;
EXECUTE followgraph_ddl;
DEALLOCATE PREPARE followgraph_ddl;
SET @followgraph_ddl = IF((SELECT COUNT(*) FROM information_schema.statistics
	WHERE table_schema = DATABASE() AND table_name = 'links' AND index_name = 'links_tombstones') = 0,
	'ALTER TABLE links ADD INDEX links_tombstones (active, kind, version)', 'DO 0');
PREPARE followgraph_ddl FROM @followgraph_ddl;
EXECUTE followgraph_ddl;
DEALLOCATE PREPARE followgraph_ddl;
SET @followgraph_ddl = NULL;
