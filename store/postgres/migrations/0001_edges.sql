-- The durable record of the follow graph, as in store/sqlite: one row per
-- edge that ever existed. following is true for a live edge and false for
-- a tombstone (an unfollowed edge, kept so that a late, older follow
-- cannot bring it back). version is the edge's highest applied
-- followgraph.Version (below 2^63: bigint is signed); since_ms is that
-- change's time in Unix milliseconds (the follow time of a live edge, the
-- unfollow time of a tombstone). Every write is conditional on version.
CREATE TABLE edges (
	follower  bigint  NOT NULL,
	followee  bigint  NOT NULL,
	following boolean NOT NULL,
	since_ms  bigint  NOT NULL,
	version   bigint  NOT NULL,
	PRIMARY KEY (follower, followee)
);

-- Unlike the SQLite record, this one answers the lists without the hot
-- copy (it is a shared system of record that others may query): the
-- following list and the followers list of a user, newest first, ties
-- broken by the larger id, each paged by the keyset (since_ms, id) from its
-- own index alone. The other id is a key column, not INCLUDEd, because the
-- keyset compares it. Both indexes are partial: tombstones are never
-- listed, and the changes that only touch tombstones write no entry here.
-- Their price is paid by every write of a live edge: three B-tree
-- insertions at random places instead of one, which is most of Apply's
-- time on a large table.
CREATE INDEX edges_following ON edges (follower, since_ms, followee) WHERE following;
CREATE INDEX edges_followers ON edges (followee, since_ms, follower) WHERE following;

-- Single values kept with the edges and changed in the same transactions.
-- last_seq: the event-log stream sequence of the last applied batch.
CREATE TABLE meta (
	key   text   PRIMARY KEY,
	value bigint NOT NULL
);

INSERT INTO meta (key, value) VALUES ('last_seq', 0);
