-- The edges of the other kinds, beside the follows in edges, as in
-- store/sqlite: one row per block, mute or follow request that ever
-- existed, and a user's private setting as a row of its own kind with
-- target_id 0 (docs/DESIGN.md "One edge mechanism"). kind is the
-- followgraph.Kind's number: 1 block, 2 mute, 3 request, 4 private. active
-- is 1 while the edge is on, 0 for a tombstone. since_ms is when the edge
-- was made (a mute's own since; the change's time for the others),
-- expires_ms a live mute's expiry in Unix milliseconds (0: none). version
-- is the row's highest applied version; every write is conditional on it.
-- A request whose pair has an edges row of a higher version was ended
-- by that follow (see row.Link.Settle), which writes no row here.
--
-- The list indexes, covering as edges' are: a user's blocks or mutes
-- (with a mute's expiry, which the list filters), and the pending
-- requests to a user (with the version, which the list compares with the
-- pair's follow row), newest first.
CREATE TABLE IF NOT EXISTS links (
	user_id    BIGINT   NOT NULL,
	kind       SMALLINT NOT NULL,
	target_id  BIGINT   NOT NULL,
	active     TINYINT  NOT NULL,
	since_ms   BIGINT   NOT NULL,
	expires_ms BIGINT   NOT NULL,
	version    BIGINT   NOT NULL,
	PRIMARY KEY (user_id, kind, target_id),
	INDEX links_out (user_id, kind, active, since_ms, target_id, expires_ms),
	INDEX links_requests (target_id, kind, active, since_ms, user_id, version)
) ENGINE = InnoDB;
