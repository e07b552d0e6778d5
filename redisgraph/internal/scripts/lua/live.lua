-- The write rate of the live writes, change.lua and edge.lua, after
-- version.lua; both take the client's time (A_NOW, ms, decimal) and the
-- user's writes per second (A_RATE, 0 for no limit) and burst (A_BURST).

-- u's write rate: a token bucket in h(u)'s fields H_RATE_TOKENS and
-- H_RATE_COUNTED (the ms they were counted at), shared by every node.
-- Every write is charged, those that change nothing too. take, set only
-- with a rate, returns the bucket's new state, or nil and the ms until a
-- token is there.
local take
if tonumber(ARGV[A_RATE]) > 0 then
  local rate, burst = tonumber(ARGV[A_RATE]), tonumber(ARGV[A_BURST])
  take = function(tokens, at)
    local now = tonumber(ARGV[A_NOW])
    at = tonumber(at or '0')
    if at > now then now = at end -- a node whose clock is behind: never back
    tokens = math.min(burst, tonumber(tokens or burst) + (now - at) * rate / 1000)
    if tokens < 1 then return nil, math.ceil((1 - tokens) * 1000 / rate) end
    return {H_RATE_TOKENS, tostring(tokens - 1), H_RATE_COUNTED, string.format('%d', now)}
  end
end
