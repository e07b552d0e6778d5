-- Versions, shared by the write scripts.
--
-- A version is followgraph.Version as 16 lowercase hex digits: 11 of
-- milliseconds, 5 of counter. Lua numbers are doubles, which cannot hold
-- 64 bits, so versions are split into (ms, counter) to be compared.
local ZERO = '0000000000000000'

local function vms(v) return tonumber(string.sub(v, 1, 11), 16) end
local function vctr(v) return tonumber(string.sub(v, 12, 16), 16) end
local function vfmt(ms, c) return string.format('%011x%05x', ms, c) end

-- vless reports whether version a is below version b.
local function vless(a, b)
  local am, bm = vms(a), vms(b)
  if am ~= bm then return am < bm end
  return vctr(a) < vctr(b)
end

-- nextv returns the version of a change by a user whose clock is clk
-- (nil: none yet) at the client's time now (ms) in region (0: none), as
-- followgraph.NextVersion: now (counter 0) unless the clock is already
-- there, else one past the clock; in a region, the counter then rounded
-- up to the next whose low 4 bits (followgraph.RegionBits) are region.
-- The counter's carry into the next ms keeps them: 1048576 is a multiple
-- of 16.
local function nextv(clk, now, region)
  local ms, c = now, 0
  if clk and vms(clk) >= now then ms, c = vms(clk), vctr(clk) + 1 end
  if region > 0 then c = c + (region - c) % 16 end
  if c >= 1048576 then ms, c = ms + 1, c - 1048576 end
  return vfmt(ms, c)
end
