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
