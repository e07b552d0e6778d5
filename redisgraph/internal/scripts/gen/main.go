// Command gen writes lua/layout.lua from package layout (run by go
// generate in redisgraph/internal/scripts), or prints a script as a Graph
// sends it:
//
//	gen LAYOUT_FILE
//	gen -print NAME [BOUND]    the script of name (scripts.Lookup), for keys
//	                           of at most BOUND entries (the default bound)
package main

import (
	"fmt"
	"os"
	"strconv"

	"github.com/followgraph/followgraph/redisgraph/internal/layout"
	"github.com/followgraph/followgraph/redisgraph/internal/scripts"
)

func main() {
	switch {
	case len(os.Args) == 2:
		if err := os.WriteFile(os.Args[1], []byte(layout.Lua()), 0o644); err != nil {
			fail(err)
		}
	case len(os.Args) >= 3 && len(os.Args) <= 4 && os.Args[1] == "-print":
		s, ok := scripts.Lookup(os.Args[2])
		if !ok {
			fail(fmt.Errorf("no script %q", os.Args[2]))
		}
		bound := layout.DefaultMaxKeyMembers
		if len(os.Args) == 4 {
			n, err := strconv.Atoi(os.Args[3])
			if err != nil || n < 2 {
				fail(fmt.Errorf("bound %q: it must be a number of at least 2", os.Args[3]))
			}
			bound = n
		}
		fmt.Print(s.Source(bound))
	default:
		fmt.Fprintln(os.Stderr, "usage: gen LAYOUT_FILE | gen -print NAME [BOUND]")
		os.Exit(2)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "gen:", err)
	os.Exit(1)
}
