package main

import (
	"fmt"
	"os"
	"regexp"
	"runtime/debug"
	"strings"

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
	root.SetFlagErrorFunc(flagError)
	setHelp(root)
	return root
}

// execute runs root on the command line, and returns the error to print:
// one that names a flag the environment set names the variable too.
func execute(root *cobra.Command) error {
	cmd, err := root.ExecuteC()
	if err != nil && cmd != nil {
		err = namingEnv(err, cmd.Flags())
	}
	return err
}

// envSet marks a flag that envDefaults set from the environment.
const envSet = "followgraph/env-set"

// envDefaults sets each flag the command line did not set from its
// environment variable FOLLOWGRAPH_<NAME> (envName), and marks it so
// (namingEnv). A command that calls it is marked readsEnv, so that its
// help names the variables.
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
				return
			}
			flags.SetAnnotation(f.Name, envSet, []string{name})
		}
	})
	return err
}

// flagMention finds the flags an error names.
var flagMention = regexp.MustCompile(`--([a-z0-9][a-z0-9-]*)`)

// namingEnv returns err saying which of the flags it names were set by
// the environment, and by which variable (not its value, which may be a
// secret): the error speaks of --fsync, the operator wrote
// FOLLOWGRAPH_FSYNC.
func namingEnv(err error, flags *pflag.FlagSet) error {
	var set []string
	seen := map[string]bool{}
	for _, m := range flagMention.FindAllStringSubmatch(err.Error(), -1) {
		f := flags.Lookup(m[1])
		if f == nil || seen[f.Name] || len(f.Annotations[envSet]) == 0 {
			continue
		}
		seen[f.Name] = true
		set = append(set, "--"+f.Name+" by "+f.Annotations[envSet][0])
	}
	if len(set) == 0 {
		return err
	}
	return fmt.Errorf("%w (set in the environment: %s)", err, strings.Join(set, ", "))
}

// flagError is the error of a command line that does not parse: for a
// flag that does not exist, with the nearest that does.
func flagError(c *cobra.Command, err error) error {
	name, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
	if !ok {
		return err
	}
	if near := nearestFlag(c, name); near != "" {
		return fmt.Errorf("%w (did you mean --%s?); see %s --help", err, near, c.CommandPath())
	}
	return fmt.Errorf("%w; see %s --help", err, c.CommandPath())
}

// nearestFlag returns the flag of c whose name is nearest name, within a
// distance a typo makes (one edit for a short name, two for a longer), or
// "" when none is.
func nearestFlag(c *cobra.Command, name string) string {
	best, bestD := "", 0
	visit := func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		if d := editDistance(name, f.Name); best == "" || d < bestD {
			best, bestD = f.Name, d
		}
	}
	c.LocalFlags().VisitAll(visit)
	c.InheritedFlags().VisitAll(visit)
	limit := 1
	if len(name) >= 5 {
		limit = 2
	}
	if best == "" || bestD > limit {
		return ""
	}
	return best
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
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
