-- Shared by the live writes, change.lua and edge.lua, after version.lua.
-- Both take ARGV 3 (the client's time in ms, decimal) and 8 and 9 (the
-- user's writes per second, 0 for no limit, and their burst).

-- u's write rate: a token bucket in h(u)'s fields rk (tokens) and rkt (the
-- ms they were counted at), shared by every node. Every write is charged,
-- those that change nothing too. take, set only with a rate, returns the
-- bucket's new state, or nil and the ms until a token is there.
local take
if tonumber(ARGV[8]) > 0 then
  local rate, burst = tonumber(ARGV[8]), tonumber(ARGV[9])
  take = function(tokens, at)
    local now = tonumber(ARGV[3])
    at = tonumber(at or '0')
    if at > now then now = at end -- a node whose clock is behind: never back
    tokens = math.min(burst, tonumber(tokens or burst) + (now - at) * rate / 1000)
    if tokens < 1 then return nil, math.ceil((1 - tokens) * 1000 / rate) end
    return {'rk', tostring(tokens - 1), 'rkt', string.format('%d', now)}
  end
end

-- nextv returns the version of a change by a user whose clock is clk
-- (nil: none yet): the client's time (counter 0) unless the clock is
-- already there, else one past the clock.
local function nextv(clk)
  local ms = tonumber(ARGV[3])
  if clk and vms(clk) >= ms then
    local c = vctr(clk) + 1
    ms = vms(clk)
    if c == 1048576 then ms, c = ms + 1, 0 end
    return vfmt(ms, c)
  end
  return vfmt(ms, 0)
end
