-- The edges of the other kinds, beside the follows in edges, as in
-- store/sqlite: one row per block, mute or follow request that ever
-- existed, and a user's private setting as a row of its own kind with
-- target_id 0 (docs/DESIGN.md "One edge mechanism"). kind is the
-- followgraph.Kind's number: 1 block, 2 mute, 3 request, 4 private. active
-- is true while the edge is on, false for a tombstone. since_ms is when
-- the edge was made (a mute's own since; the change's time for the
-- others), expires_ms a live mute's expiry in Unix milliseconds (0: none).
-- version is the row's highest applied version; every write is
-- conditional on it. A request whose pair has an edges row of a higher
-- version was ended by that follow (see row.Link.Settle), which writes no
-- row here.
CREATE TABLE links (
	user_id    bigint   NOT NULL,
	kind       smallint NOT NULL,
	target_id  bigint   NOT NULL,
	active     boolean  NOT NULL,
	since_ms   bigint   NOT NULL,
	expires_ms bigint   NOT NULL,
	version    bigint   NOT NULL,
	PRIMARY KEY (user_id, kind, target_id)
);

-- The lists the record answers, as for follows: a user's blocks or mutes,
-- and the pending requests to a user, newest first, ties by the larger
-- id, each paged by the keyset (since_ms, id) from its own partial index.
CREATE INDEX links_out ON links (user_id, kind, since_ms, target_id) WHERE active;
CREATE INDEX links_requests ON links (target_id, since_ms, user_id) WHERE active AND kind = 3;
