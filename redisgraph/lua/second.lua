-- The followee's side of a change of u → t: idempotent, and a no-op when
-- t's side already has a change of that edge of an equal or higher version.
--
-- KEYS: 1 in(t), 2 iv(t), 3 h(t).
-- ARGV: 1 u as a member, 2 the version, 3 'follow' or 'unfollow'.
--
-- Returns {1 if it changed anything else 0, t's stamp}.
local st = apply(KEYS[1], KEYS[2], KEYS[3], 'nin', ARGV[1], ARGV[2], ARGV[3])
if st then return {1, st} end
return {0, stamp(KEYS[3])}
