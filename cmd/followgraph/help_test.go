package main

import (
	"bytes"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// commandPaths returns the path of args of every command under c, c's
// included, cobra's help and completion commands too.
func commandPaths(c *cobra.Command, path []string) [][]string {
	out := [][]string{path}
	for _, sub := range c.Commands() {
		out = append(out, commandPaths(sub, append(path[:len(path):len(path)], sub.Name()))...)
	}
	return out
}

// TestHelp_Width: the help of every command fits in 80 columns, and that
// of a command that reads the environment names, on each flag's line,
// the FOLLOWGRAPH_ variable that sets the flag.
func TestHelp_Width(t *testing.T) {
	tree := newRoot()
	tree.InitDefaultHelpCmd()
	tree.InitDefaultCompletionCmd()
	paths := commandPaths(tree, nil)
	if len(paths) < 10 {
		t.Fatalf("only %d commands found: %v", len(paths), paths)
	}
	for _, path := range paths {
		name := strings.Join(append([]string{"followgraph"}, path...), " ")
		t.Run(name, func(t *testing.T) {
			root := newRoot()
			var out bytes.Buffer
			root.SetOut(&out)
			root.SetErr(&out)
			root.SetArgs(append(path, "--help"))
			if err := root.Execute(); err != nil {
				t.Fatalf("%s --help: %v", name, err)
			}
			help := out.String()
			if !strings.Contains(help, "Usage:") {
				t.Fatalf("%s --help has no usage:\n%s", name, help)
			}
			for i, line := range strings.Split(help, "\n") {
				if n := columns(line); n > helpWidth {
					t.Errorf("%s --help, line %d: %d columns, over %d:\n%s", name, i+1, n, helpWidth, line)
				}
			}
			cmd, _, err := root.Find(path)
			if err != nil {
				t.Fatal(err)
			}
			if cmd.Annotations[envAnnotation] == "" {
				return
			}
			cmd.LocalFlags().VisitAll(func(f *pflag.Flag) {
				if f.Name == "help" {
					return
				}
				line := regexp.MustCompile(`(?m)^  --` + regexp.QuoteMeta(f.Name) + `\b.*$`).FindString(help)
				if !strings.Contains(line, envName(f.Name)) {
					t.Errorf("%s --help: the line of --%s does not name %s: %q", name, f.Name, envName(f.Name), line)
				}
			})
		})
	}
}

// TestHelp_EnvNames: each command that reads the environment is marked
// so in its help, and the names are those envDefaults reads.
func TestHelp_EnvNames(t *testing.T) {
	if got := envName("nats-cluster-password-file"); got != "FOLLOWGRAPH_NATS_CLUSTER_PASSWORD_FILE" {
		t.Errorf("envName = %s", got)
	}
	root := newRoot()
	for _, name := range []string{"serve", "import", "rebuild", "reconcile", "bench"} {
		cmd, _, err := root.Find([]string{name})
		if err != nil || cmd.Annotations[envAnnotation] == "" {
			t.Errorf("%s reads its flags from the environment, but its help does not say so (%v)", name, err)
		}
	}
	t.Setenv("FOLLOWGRAPH_DISK_RESERVE", "1GiB")
	serve, _, _ := root.Find([]string{"serve"})
	if err := envDefaults(serve.Flags()); err != nil {
		t.Fatal(err)
	}
	if got := serve.Flags().Lookup("disk-reserve").Value.String(); got != "1GiB" {
		t.Errorf("FOLLOWGRAPH_DISK_RESERVE=1GiB set --disk-reserve to %q", got)
	}
}

// run runs the command line args on a new root, as main does, and
// returns what it printed and the error main prints.
func run(args ...string) (string, error) {
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := execute(root)
	return out.String(), err
}

// TestHelp_ServeGrouped: serve's help lists its flags under headings, in
// the order backends, security, limits, tuning, operations, every flag
// under one; it has an example for one machine and one for production,
// and points to the docs.
func TestHelp_ServeGrouped(t *testing.T) {
	help, err := run("serve", "--help")
	if err != nil {
		t.Fatal(err)
	}
	headings := []string{"Backends", "Security", "Limits", "Tuning", "Operations"}
	at := make([]int, len(headings))
	for i, h := range headings {
		at[i] = strings.Index(help, "\n"+h)
		if at[i] < 0 || i > 0 && at[i] < at[i-1] {
			t.Fatalf("serve --help has no heading %q after %q:\n%s", h, headings[max(i-1, 0)], help)
		}
	}
	group := func(flag string) string {
		i := strings.Index(help, "\n  --"+flag+" ")
		if i < 0 {
			i = strings.Index(help, "\n  --"+flag+"\n")
		}
		if i < 0 {
			return ""
		}
		g := ""
		for j, h := range headings {
			if at[j] < i {
				g = h
			}
		}
		return g
	}
	for flag, want := range map[string]string{"redis": "Backends", "nats-cluster": "Backends", "db": "Backends",
		"auth-tokens": "Security", "tls-cert": "Security", "request-timeout": "Limits", "max-connections": "Limits",
		"persist-batch": "Tuning", "jobs-rate": "Tuning", "tombstone-retention": "Tuning", "log-level": "Operations", "addr": "Operations"} {
		if got := group(flag); got != want {
			t.Errorf("--%s is under %q, want %q", flag, got, want)
		}
	}
	serve, _, _ := newRoot().Find([]string{"serve"})
	serve.LocalFlags().VisitAll(func(f *pflag.Flag) {
		if f.Name != "help" && group(f.Name) == "" {
			t.Errorf("--%s is under no heading", f.Name)
		}
	})
	for _, want := range []string{"Examples:", "followgraph serve\n", "--redis redis://", "--db postgres://", "docs/OPERATIONS.md", "/console/"} {
		if !strings.Contains(help, want) {
			t.Errorf("serve --help does not have %q:\n%s", want, help)
		}
	}
	example := help[strings.Index(help, "Examples:"):strings.Index(help, "Flags, each")]
	flags := serveFlags(t)
	for _, command := range strings.Split(strings.ReplaceAll(example, "\\\n", " "), "\n") {
		if args, ok := strings.CutPrefix(strings.TrimSpace(command), "followgraph serve"); ok {
			checkArgs(t, "serve --help's example", flags, strings.Fields(args))
		}
	}
	if line := regexp.MustCompile(`(?s)  --nats-cluster string.*?\n  --`).FindString(help); !strings.Contains(line, "--redis") || !strings.Contains(line, "--db") {
		t.Errorf("the help of --nats-cluster does not say it needs --redis and --db:\n%s", line)
	}
}

// TestHelp_UnknownFlag: a flag that does not exist gets the nearest that
// does.
func TestHelp_UnknownFlag(t *testing.T) {
	for _, tt := range []struct{ args []string }{
		{[]string{"serve", "--adr", "x"}},
		{[]string{"serve", "--adrr=x"}},
		{[]string{"serve", "--nats-clustr", "x"}},
		{[]string{"rebuild", "--rediss", "x"}},
		{[]string{"serve", "--zzzzzz"}},
	} {
		_, err := run(tt.args...)
		if err == nil {
			t.Fatalf("%v: no error", tt.args)
		}
		want := map[string]string{"--adr": "--addr", "--adrr=x": "--addr", "--nats-clustr": "--nats-cluster", "--rediss": "--redis"}[tt.args[1]]
		if want == "" {
			if strings.Contains(err.Error(), "did you mean") {
				t.Errorf("%v: %v, with nothing near", tt.args, err)
			}
			continue
		}
		if !strings.Contains(err.Error(), "did you mean "+want+"?") {
			t.Errorf("%v: %v, want a suggestion of %s", tt.args, err, want)
		}
	}
}

// TestHelp_EnvError: a setting that is not valid, given in the
// environment, is named as the variable that set it.
func TestHelp_EnvError(t *testing.T) {
	t.Setenv("FOLLOWGRAPH_FSYNC", "nope")
	_, err := run("serve", "--data", t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "FOLLOWGRAPH_FSYNC") {
		t.Errorf("FOLLOWGRAPH_FSYNC=nope: %v, want the variable named", err)
	}
	t.Setenv("FOLLOWGRAPH_FSYNC", "")
	os.Unsetenv("FOLLOWGRAPH_FSYNC")
	_, err = run("serve", "--data", t.TempDir(), "--fsync", "nope")
	if err == nil || strings.Contains(err.Error(), "FOLLOWGRAPH_FSYNC") || !strings.Contains(err.Error(), "--fsync") {
		t.Errorf("--fsync nope: %v, want the flag named and no variable", err)
	}
}
