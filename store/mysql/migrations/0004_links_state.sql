-- A user's account state (followgraph.State) as a links row of kind 5
-- with target_id 0, by the mechanism of the private setting: active is
-- 0 for StateActive and 1 for any other state, and state is the state's
-- number (0 active, 1 deactivated, 2 suspended, 3 deleted), written with
-- the row's version like every column. Rows of the other kinds keep 0.
--
-- Safe to run again (see 0001): ADD COLUMN IF NOT EXISTS is MariaDB's
-- only, so the column is added by a statement prepared from what
-- information_schema says, on the migration's one connection, and a
-- rerun prepares a statement that does nothing.
SET @followgraph_links_state = IF((SELECT COUNT(*) FROM information_schema.columns
	WHERE table_schema = DATABASE() AND table_name = 'links' AND column_name = 'state') = 0,
	'ALTER TABLE links ADD COLUMN state SMALLINT NOT NULL DEFAULT 0', 'DO 0');
PREPARE followgraph_links_state FROM @followgraph_links_state;
EXECUTE followgraph_links_state;
DEALLOCATE PREPARE followgraph_links_state;
SET @followgraph_links_state = NULL;
