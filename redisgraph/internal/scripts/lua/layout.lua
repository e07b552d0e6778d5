-- Code generated from redisgraph/internal/layout by go generate; DO NOT EDIT.
-- The layout's keys, sides, flags and groups, as the scripts that use
-- them read them.

-- A user's keys, in the order the scripts take them (layout.UserKeys).
local NKEYS = 17
local USER_KEYS = {'out', 'ov', 'in', 'iv', 'bo', 'bov', 'bi', 'biv', 'mo', 'mov', 'mx', 'ro', 'rov', 'ri', 'riv', 'rf', 'h'}

-- The sides of a user's edges, in their order and by code (layout.Sides):
-- the sorted set,
-- its versions hash, the counter in h, and the field of h that says the
-- versions hash is empty, where there is one.
local SIDE_CODES = {'fo', 'fi', 'bo', 'bi', 'mo', 'ro', 'ri'}
local sides = {
  fo = {'out', 'ov', 'nout', 'e'},
  fi = {'in', 'iv', 'nin'},
  bo = {'bo', 'bov', 'nbo'},
  bi = {'bi', 'biv', 'nbi'},
  mo = {'mo', 'mov', 'nmo'},
  ro = {'ro', 'rov', 'nro'},
  ri = {'ri', 'riv', 'nri'},
}

-- The bits of the flags of the other kinds, by side code (layout.Flag*).
local flagOf = {bo = 1, bi = 2, mo = 4, ro = 8, ri = 16}

-- The groups of keys split into chunks together (layout.Groups): by
-- group, its keys and the field of h holding its number of chunks; by key,
-- its group; the keys that are hashes.
local groups = {
  fo = {keys = {'out', 'ov'}, field = 'kfo'},
  fi = {keys = {'in', 'iv'}, field = 'kfi'},
  bo = {keys = {'bo', 'bov'}, field = 'kbo'},
  bi = {keys = {'bi', 'biv'}, field = 'kbi'},
  mo = {keys = {'mo', 'mov', 'mx'}, field = 'kmo'},
  ro = {keys = {'ro', 'rov'}, field = 'kro'},
  ri = {keys = {'ri', 'riv'}, field = 'kri'},
  rf = {keys = {'rf'}, field = 'krf'},
}
local groupOf = {out = 'fo', ov = 'fo', ["in"] = 'fi', iv = 'fi', bo = 'bo', bov = 'bo', bi = 'bi', biv = 'bi', mo = 'mo', mov = 'mo', mx = 'mo', ro = 'ro', rov = 'ro', ri = 'ri', riv = 'ri', rf = 'rf'}
local isHash = {ov = true, iv = true, bov = true, biv = true, mov = true, mx = true, rov = true, riv = true}
