-- What the record knows of the event log it is fed from, beside last_seq
-- (the highest sequence applied): store_id, the record's own identity
-- (drawn at random here; the log keeps the identity of the store it
-- feeds), log_created_ns, the identity of the log
-- (its stream's creation time, in Unix nanoseconds; 0 until the service
-- first starts on it), and seen_seq, the highest sequence the log is known
-- to have stored. At start the service checks them against the log, so
-- that a log or a record that lost events is noticed (docs/DESIGN.md).
INSERT INTO meta (key, value) VALUES ('store_id', (random() & 9223372036854775807) | 1), ('log_created_ns', 0), ('seen_seq', 0);
