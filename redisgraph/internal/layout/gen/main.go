// Command gen writes lua/status.lua and lua/layout.lua from package
// layout: run by go generate in redisgraph.
package main

import (
	"fmt"
	"os"

	"github.com/followgraph/followgraph/redisgraph/internal/layout"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: gen STATUS_FILE LAYOUT_FILE")
		os.Exit(2)
	}
	for i, src := range []string{layout.LuaStatuses(), layout.Lua()} {
		if err := os.WriteFile(os.Args[1+i], []byte(src), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}
