-- Raises a server's checkpoint to a log sequence (Checkpoint).
--
-- KEYS (scripts.CheckpointKeys): CHECKPOINT the checkpoint.
-- ARGV (scripts.CheckpointArgs): SEQ the sequence, decimal.
--
-- Returns what the checkpoint holds.
local cur = tonumber(redis.call('GET', KEYS[K_CHECKPOINT]) or '0')
local seq = tonumber(ARGV[A_SEQ])
if seq > cur then
  redis.call('SET', KEYS[K_CHECKPOINT], ARGV[A_SEQ])
  return seq
end
return cur
