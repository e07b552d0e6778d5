package scripts

import (
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"unicode"

	"github.com/followgraph/followgraph/redisgraph/internal/layout"
)

// A script reads the layout's constants (layout.Scalars) and its own
// keys and arguments by name. Its header declares, as locals, those names
// it uses, and nothing more: a script of Redis is one Lua function, which
// may have 200 locals at most, and each costs an instruction a call.

// names returns the names of the keys (prefix "K_") or arguments ("A_")
// of the struct type t, each with its index in KEYS or ARGV.
func names(t reflect.Type, prefix string) map[string]int {
	out := map[string]int{}
	fieldNames(t, prefix, 1, out)
	return out
}

// fieldNames adds to out the names of t's fields, the first at index i,
// and returns the index after them.
func fieldNames(t reflect.Type, prefix string, i int, out map[string]int) int {
	for j := range t.NumField() {
		f := t.Field(j)
		if f.Anonymous {
			i = fieldNames(f.Type, prefix, i, out)
			continue
		}
		out[prefix+snake(f.Name)] = i
		switch f.Type.Kind() {
		case reflect.String:
			i++
		case reflect.Array:
			i += f.Type.Len()
		case reflect.Slice:
			if f.Index[0] != t.NumField()-1 {
				panic(fmt.Sprintf("scripts: %s.%s: a list comes last", t, f.Name))
			}
		default:
			panic(fmt.Sprintf("scripts: %s.%s: a %s", t, f.Name, f.Type))
		}
	}
	return i
}

// snake returns a Go field's name as a script names it: MaxFollowing is
// MAX_FOLLOWING.
func snake(name string) string {
	var b strings.Builder
	for i, r := range name {
		if i > 0 && unicode.IsUpper(r) && unicode.IsLower(rune(name[i-1])) {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToUpper(r))
	}
	return b.String()
}

var (
	identifier = regexp.MustCompile(`\b[A-Z][A-Z0-9_]*\b`)
	comment    = regexp.MustCompile(`--[^\n]*`)
)

// header returns the declarations of the names src uses among the
// layout's scalars and own, src's keys and arguments.
func header(src string, own map[string]int) string {
	values := map[string]string{}
	for _, s := range layout.Scalars() {
		values[s.Name] = s.Value
	}
	for n, i := range own {
		values[n] = fmt.Sprint(i)
	}
	var ns, vs []string
	seen := map[string]bool{}
	for _, n := range identifier.FindAllString(comment.ReplaceAllString(src, ""), -1) {
		if v, ok := values[n]; ok && !seen[n] {
			seen[n] = true
			ns, vs = append(ns, n), append(vs, v)
		}
	}
	var b strings.Builder
	for len(ns) > 0 {
		k := min(len(ns), 8)
		fmt.Fprintf(&b, "local %s = %s\n", strings.Join(ns[:k], ", "), strings.Join(vs[:k], ", "))
		ns, vs = ns[k:], vs[k:]
	}
	return b.String()
}

// define returns the script of src, read with the keys K and the
// arguments A, headed by the declarations of what it names.
func define[K, A lister](name, src string, flags int) Def[K, A] {
	own := names(reflect.TypeFor[K](), "K_")
	for n, i := range names(reflect.TypeFor[A](), "A_") {
		own[n] = i
	}
	return Def[K, A]{newScript(name, headed(header(src, own), src), flags)}
}
