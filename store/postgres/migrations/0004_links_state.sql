-- A user's account state (followgraph.State) as a links row of kind 5
-- with target_id 0, by the mechanism of the private setting: active is
-- false for StateActive and true for any other state, and state is the
-- state's number (0 active, 1 deactivated, 2 suspended, 3 deleted),
-- written with the row's version like every column. Rows of the other
-- kinds keep 0. A column with a constant default is added without
-- rewriting the table.
ALTER TABLE links ADD COLUMN state smallint NOT NULL DEFAULT 0;
