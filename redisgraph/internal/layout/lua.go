package layout

import (
	"fmt"
	"strings"
)

const generated = "-- Code generated from redisgraph/internal/layout by go generate; DO NOT EDIT.\n"

// Lua returns lua/layout.lua: this package's tables as the scripts read
// them, in the scripts that read them (the scalars, Scalars, each script
// declares for itself). Its tables are made again at every call of a
// script (Redis keeps nothing of a script's between calls), so the scripts
// that need none (the plain follow's, the read guard) go without it.
func Lua() string {
	var b strings.Builder
	b.WriteString(generated)
	b.WriteString("-- The layout's keys, sides, flags and groups, as the scripts that use\n")
	b.WriteString("-- them read them.\n\n")
	b.WriteString("-- A user's keys, in the order the scripts take them (layout.UserKeys).\n")
	fmt.Fprintf(&b, "local NKEYS = %d\n", len(UserKeys))
	quoted := make([]string, len(UserKeys))
	for i, k := range UserKeys {
		quoted[i] = "'" + string(k) + "'"
	}
	fmt.Fprintf(&b, "local USER_KEYS = {%s}\n\n", strings.Join(quoted, ", "))

	b.WriteString("-- The sides of a user's edges, in their order and by code (layout.Sides):\n")
	b.WriteString("-- the sorted set,\n")
	b.WriteString("-- its versions hash, the counter in h, and the field of h that says the\n")
	b.WriteString("-- versions hash is empty, where there is one.\n")
	codes := make([]string, len(Sides))
	for i, s := range Sides {
		codes[i] = "'" + s.Code + "'"
	}
	fmt.Fprintf(&b, "local SIDE_CODES = {%s}\n", strings.Join(codes, ", "))
	b.WriteString("local sides = {\n")
	for _, s := range Sides {
		fields := []string{"'" + string(s.Set) + "'", "'" + string(s.Versions) + "'", "'" + s.Counter + "'"}
		if s.Empty != "" {
			fields = append(fields, "'"+s.Empty+"'")
		}
		fmt.Fprintf(&b, "  %s = {%s},\n", s.Code, strings.Join(fields, ", "))
	}
	b.WriteString("}\n\n")

	b.WriteString("-- The bits of the flags of the other kinds, by side code (layout.Flag*).\n")
	var flags []string
	for _, s := range Sides {
		if s.Flag != 0 {
			flags = append(flags, fmt.Sprintf("%s = %d", s.Code, s.Flag))
		}
	}
	fmt.Fprintf(&b, "local flagOf = {%s}\n\n", strings.Join(flags, ", "))

	b.WriteString("-- The groups of keys split into chunks together (layout.Groups): by\n")
	b.WriteString("-- group, its keys and the field of h holding its number of chunks; by key,\n")
	b.WriteString("-- its group; the keys that are hashes.\n")
	b.WriteString("local groups = {\n")
	for _, g := range Groups {
		keys := make([]string, len(g.Keys))
		for i, k := range g.Keys {
			keys[i] = "'" + string(k) + "'"
		}
		fmt.Fprintf(&b, "  %s = {keys = {%s}, field = '%s'},\n", g.Name, strings.Join(keys, ", "), g.Field)
	}
	b.WriteString("}\n")
	var of, hashes []string
	for _, g := range Groups {
		for _, k := range g.Keys {
			of = append(of, fmt.Sprintf("%s = '%s'", luaName(string(k)), g.Name))
			if IsHash(k) {
				hashes = append(hashes, luaName(string(k))+" = true")
			}
		}
	}
	fmt.Fprintf(&b, "local groupOf = {%s}\n", strings.Join(of, ", "))
	fmt.Fprintf(&b, "local isHash = {%s}\n", strings.Join(hashes, ", "))
	return b.String()
}

// luaName returns k as a key of a Lua table constructor: 'in' is a
// reserved word there, so it is written ["in"].
func luaName(k string) string {
	if k == "in" {
		return `["in"]`
	}
	return k
}
