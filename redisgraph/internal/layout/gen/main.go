// Command gen writes lua/layout.lua from package layout: run by go generate
// in redisgraph.
package main

import (
	"fmt"
	"os"

	"github.com/followgraph/followgraph/redisgraph/internal/layout"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gen FILE")
		os.Exit(2)
	}
	if err := os.WriteFile(os.Args[1], []byte(layout.Lua()), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
