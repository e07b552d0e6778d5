-- The durable record of the follow graph: one row per edge that ever
-- existed. following is 1 for a live edge and 0 for a tombstone (an
-- unfollowed edge, kept so that a late, older follow cannot bring it back).
-- version is the edge's highest applied followgraph.Version; since_ms is
-- that change's time in Unix milliseconds (the follow time of a live edge,
-- the unfollow time of a tombstone). Every write is conditional on version.
CREATE TABLE edges (
	follower  INTEGER NOT NULL,
	followee  INTEGER NOT NULL,
	following INTEGER NOT NULL,
	since_ms  INTEGER NOT NULL,
	version   INTEGER NOT NULL,
	PRIMARY KEY (follower, followee)
) WITHOUT ROWID;

-- The following list of a user and the followers list of a user, both
-- newest first, each paged from its own index alone: the primary key
-- columns are part of every index entry, so both are covering.
CREATE INDEX edges_following ON edges (follower, following, since_ms, followee);
CREATE INDEX edges_followers ON edges (followee, following, since_ms, follower);

-- Single values kept with the edges and changed in the same transactions.
-- last_seq: the event-log stream sequence of the last applied batch.
CREATE TABLE meta (
	key   TEXT PRIMARY KEY,
	value INTEGER NOT NULL
) WITHOUT ROWID;

INSERT INTO meta (key, value) VALUES ('last_seq', 0);
