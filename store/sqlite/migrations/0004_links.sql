-- The edges of the other kinds, beside the follows in edges: one row per
-- block, mute or follow request that ever existed, and the private
-- setting of a user as a row of its own kind with target_id 0, all by the
-- mechanism of edges (followgraph.Kind, docs/DESIGN.md "One edge
-- mechanism"). kind is the followgraph.Kind's number: 1 block, 2 mute,
-- 3 request, 4 private. active is 1 while the edge is on, 0 for a
-- tombstone. since_ms is when the edge was made (a mute's own since; the
-- change's time for the others), expires_ms a live mute's expiry in Unix
-- milliseconds (0: none). version is the row's highest applied version;
-- every write is conditional on it. A request whose pair has an edges row
-- of a higher version was ended by that follow (see row.Link.Settle).
-- No list index, as for edges: the engine answers every read.
CREATE TABLE links (
	user_id    INTEGER NOT NULL,
	kind       INTEGER NOT NULL,
	target_id  INTEGER NOT NULL,
	active     INTEGER NOT NULL,
	since_ms   INTEGER NOT NULL,
	expires_ms INTEGER NOT NULL,
	version    INTEGER NOT NULL,
	PRIMARY KEY (user_id, kind, target_id)
) WITHOUT ROWID;
