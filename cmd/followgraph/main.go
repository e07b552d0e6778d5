// Command followgraph is the follow graph service and its operator tools:
// serve, import, rebuild, reconcile, gen, bench, probe and version. Each
// command's --help lists its flags (help.go), and the README's
// configuration table those of serve.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := newRoot()
	root.SetContext(ctx)
	if err := execute(root); err != nil {
		fmt.Fprintln(os.Stderr, "followgraph:", err)
		os.Exit(1)
	}
}
