package main

import (
	"fmt"
	"os"
	"runtime/debug"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "followgraph",
		Short:         "The follow graph of a social product, as a service",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newServe(), newImport(), newRebuild(), newReconcile(), newGen(), newBench(), newProbe(), newVersion())
	setHelp(root)
	return root
}

// envDefaults sets each flag the command line did not set from its
// environment variable FOLLOWGRAPH_<NAME> (envName). A command that calls
// it is marked readsEnv, so that its help names the variables.
func envDefaults(flags *pflag.FlagSet) error {
	var err error
	flags.VisitAll(func(f *pflag.Flag) {
		if f.Changed || err != nil {
			return
		}
		name := envName(f.Name)
		if v, ok := os.LookupEnv(name); ok {
			if e := f.Value.Set(v); e != nil {
				err = fmt.Errorf("%s=%q: %w", name, v, e)
			}
		}
	})
	return err
}

func newVersion() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintln(cmd.OutOrStdout(), "followgraph", version())
		},
	}
}

// version is the module version, or the VCS revision of a source build.
func version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	rev, dirty := "devel", ""
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value[:min(12, len(s.Value))]
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	return rev + dirty
}
