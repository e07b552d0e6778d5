-- The durable record of the follow graph, as in store/sqlite: one row per
-- edge that ever existed. following is 1 for a live edge and 0 for a
-- tombstone (an unfollowed edge, kept so that a late, older follow cannot
-- bring it back). version is the edge's highest applied
-- followgraph.Version; since_ms is that change's time in Unix milliseconds
-- (the follow time of a live edge, the unfollow time of a tombstone).
-- Every write is conditional on version.
--
-- Unlike SQLite's, this record keeps the two list indexes: it is a shared
-- system of record that others query without the hot copy. Each is
-- covering (InnoDB appends the primary key to every secondary index
-- entry), so a page of a following or followers list, newest first, is a
-- backward range scan of one index and reads no row.
--
-- MySQL DDL is not transactional: a process that dies between a statement
-- here and its schema_migrations row runs the file again, so every
-- statement is idempotent (IF NOT EXISTS, INSERT IGNORE), and the indexes
-- are created with their table (CREATE INDEX IF NOT EXISTS is MariaDB's
-- only).
CREATE TABLE IF NOT EXISTS edges (
	follower  BIGINT NOT NULL,
	followee  BIGINT NOT NULL,
	following TINYINT NOT NULL,
	since_ms  BIGINT NOT NULL,
	version   BIGINT NOT NULL,
	PRIMARY KEY (follower, followee),
	INDEX edges_following (follower, following, since_ms, followee),
	INDEX edges_followers (followee, following, since_ms, follower)
) ENGINE = InnoDB;

-- Single values kept with the edges and changed in the same transactions.
-- last_seq: the event-log stream sequence of the last applied batch. Its
-- row is also the lock that serializes the store's writers (see Apply).
CREATE TABLE IF NOT EXISTS meta (
	`key` VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL PRIMARY KEY,
	value BIGINT NOT NULL
) ENGINE = InnoDB;

INSERT IGNORE INTO meta (`key`, value) VALUES ('last_seq', 0);
