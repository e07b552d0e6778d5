-- Apply of one event u → t: the follower's side, and on a standalone Redis
-- the followee's side too. Conditional on the version; no outbox event.
--
-- KEYS: 1 out(u), 2 ov(u), 3 h(u), and on a standalone Redis also 4 in(t),
--       5 iv(t), 6 h(t).
-- ARGV: 1 t as a member, 2 the version, 3 'follow' or 'unfollow', and with
--       the extra keys 4 u as a member.
--
-- Returns {u's stamp[, t's stamp]}.
observe(KEYS[3], ARGV[2])
local su = apply(KEYS[1], KEYS[2], KEYS[3], 'nout', ARGV[1], ARGV[2], ARGV[3], 'e') or stamp(KEYS[3])
if KEYS[4] then
  return {su, apply(KEYS[4], KEYS[5], KEYS[6], 'nin', ARGV[4], ARGV[2], ARGV[3]) or stamp(KEYS[6])}
end
return {su}
