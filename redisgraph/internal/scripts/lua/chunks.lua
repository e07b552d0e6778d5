-- Chunks: a user's keys are split, by groups (layout.Groups), into chunks
-- of at most MAXKEY entries, split at SPLIT_AT (the scripts that split
-- have both from their first line: scripts.SizeHeader). Chunk 0 of
-- a key is the key itself, chunk j is <key>:<j>, in the same slot; h's
-- field of the group holds its number of chunks (none: 1).

-- hashOf returns the hash of member m, an 8-byte big-endian id
-- (layout.MemberHash): a polynomial of its bytes modulo 2^31-1, exact in
-- Lua's doubles.
local function hashOf(m)
  local a, b, c, d, e, f, g, h = string.byte(m, 1, 8)
  local x = a or 0
  x = (x * 31 + (b or 0)) % 2147483647
  x = (x * 31 + (c or 0)) % 2147483647
  x = (x * 31 + (d or 0)) % 2147483647
  x = (x * 31 + (e or 0)) % 2147483647
  x = (x * 31 + (f or 0)) % 2147483647
  x = (x * 31 + (g or 0)) % 2147483647
  return (x * 31 + (h or 0)) % 2147483647
end

-- chunkOf returns the chunk, of n, of a member of hash x (layout.ChunkOf):
-- linear hashing, so that splitting chunk n - lo makes chunk n.
local function chunkOf(x, n)
  if n <= 1 then return 0 end
  local lo = 1
  while lo * 2 <= n do lo = lo * 2 end
  local c = x % (lo * 2)
  if c >= n then c = x % lo end
  return c
end

-- chunkKey returns chunk j of key k.
local function chunkKey(k, j)
  if j == 0 then return k end
  return k .. ':' .. j
end
