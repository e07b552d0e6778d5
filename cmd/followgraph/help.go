package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// The help of every command fits in helpWidth columns, as a terminal
// shows it: each flag on a line of its own, with its environment variable
// where the command reads them (readsEnv), and its help below, wrapped.

// helpWidth is the widest line of any command's help.
const helpWidth = 80

// flagIndent and usageIndent are where a flag's line and its help begin.
const (
	flagIndent  = "  "
	usageIndent = "      "
)

// envAnnotation marks a command whose flags are also set from the
// environment (envDefaults).
const envAnnotation = "followgraph/env"

// readsEnv marks cmd as reading its flags from the environment too, for
// its help; its RunE must call envDefaults.
func readsEnv(cmd *cobra.Command) *cobra.Command {
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[envAnnotation] = "true"
	return cmd
}

// envName is the environment variable that sets the flag name:
// FOLLOWGRAPH_<NAME>, dashes as underscores.
func envName(flag string) string {
	return "FOLLOWGRAPH_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// setHelp makes root and every command under it print their help and
// usage wrapped at helpWidth.
func setHelp(root *cobra.Command) {
	root.SetHelpFunc(func(c *cobra.Command, _ []string) {
		w := c.OutOrStdout()
		text := c.Long
		if text == "" {
			text = c.Short
		}
		if text = strings.TrimRight(text, " \t\n"); text != "" {
			fmt.Fprintf(w, "%s\n\n", wrapText(text, helpWidth))
		}
		if c.Runnable() || c.HasSubCommands() {
			io.WriteString(w, c.UsageString())
		}
	})
	root.SetUsageFunc(func(c *cobra.Command) error {
		_, err := io.WriteString(c.OutOrStderr(), usage(c))
		return err
	})
}

// usage is c's usage: its command line, its subcommands, its flags.
func usage(c *cobra.Command) string {
	var b strings.Builder
	b.WriteString("Usage:")
	if c.Runnable() {
		b.WriteString("\n" + flagIndent + c.UseLine())
	}
	if c.HasAvailableSubCommands() {
		b.WriteString("\n" + flagIndent + c.CommandPath() + " [command]")
	}
	if c.HasExample() {
		b.WriteString("\n\nExamples:\n" + wrapText(c.Example, helpWidth))
	}
	if c.HasAvailableSubCommands() {
		b.WriteString("\n\nAvailable Commands:")
		var subs []*cobra.Command
		pad := 0
		for _, s := range c.Commands() {
			if s.IsAvailableCommand() || s.Name() == "help" {
				subs = append(subs, s)
				pad = max(pad, len(s.Name()))
			}
		}
		for _, s := range subs {
			head := flagIndent + s.Name() + strings.Repeat(" ", pad-len(s.Name())+2)
			b.WriteString("\n" + hang(head, s.Short, helpWidth))
		}
	}
	if c.HasAvailableLocalFlags() {
		env := c.Annotations[envAnnotation] != ""
		rows, col := flagRows(c.LocalFlags(), env)
		groups := groupsOf(rows)
		switch {
		case env && len(groups) > 1:
			b.WriteString("\n\n" + wrapText("Flags, each also set by the environment variable on its line "+
				"(FOLLOWGRAPH_ and the name, dashes as underscores); a flag given on the command line wins.", helpWidth))
		case env:
			b.WriteString("\n\n" + wrapText("Flags, each also set by the environment variable on its line "+
				"(FOLLOWGRAPH_ and the name, dashes as underscores); a flag given on the command line wins:", helpWidth))
		default:
			b.WriteString("\n\nFlags:")
		}
		for _, g := range groups {
			if len(groups) > 1 {
				b.WriteString("\n\n" + wrapText(g.heading+":", helpWidth))
			}
			b.WriteString("\n" + strings.TrimSuffix(renderRows(g.rows, col), "\n"))
		}
	}
	if c.HasAvailableInheritedFlags() {
		rows, col := flagRows(c.InheritedFlags(), false)
		b.WriteString("\n\nGlobal Flags:\n" + strings.TrimSuffix(renderRows(rows, col), "\n"))
	}
	if c.HasAvailableSubCommands() {
		b.WriteString("\n\n" + wrapText(fmt.Sprintf("Use \"%s [command] --help\" for more information about a command.", c.CommandPath()), helpWidth))
	}
	return strings.TrimRight(b.String(), "\n") + "\n"
}

// groupAnnotation holds, on a flag, the heading it is listed under in
// its command's help (group).
const groupAnnotation = "followgraph/group"

// group lists the flags names of fs under heading in their command's
// help; the groups are listed in the order they are made (their number),
// the flags of none last, under "Other".
func group(fs *pflag.FlagSet, number int, heading string, names ...string) {
	for _, name := range names {
		if err := fs.SetAnnotation(name, groupAnnotation, []string{fmt.Sprint(number), heading}); err != nil {
			panic(err) // a flag's name mistyped
		}
	}
}

// flagRow is a flag's entry in a help: its line, with the variable that
// sets it, its help below, and its group.
type flagRow struct {
	head, env, help string
	order           int // its group's number; -1 for none
	heading         string
}

// flagGroup is the rows of one heading.
type flagGroup struct {
	heading string
	rows    []flagRow
}

// flagRows lists the flags of fs: a line with the flag, its value's type
// and, with env, the variable that sets it; then its help, with its
// default. col is where the variables begin, after the longest flag.
func flagRows(fs *pflag.FlagSet, env bool) (rows []flagRow, col int) {
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		head := flagIndent
		if f.Shorthand != "" && f.ShorthandDeprecated == "" {
			head += "-" + f.Shorthand + ", "
		}
		head += "--" + f.Name
		typ, help := pflag.UnquoteUsage(f)
		if typ != "" {
			head += " " + typ
		}
		if !zeroDefault(f) {
			if f.Value.Type() == "string" {
				help += fmt.Sprintf(" (default %q)", f.DefValue)
			} else {
				help += fmt.Sprintf(" (default %s)", f.DefValue)
			}
		}
		if f.Deprecated != "" {
			help += fmt.Sprintf(" (deprecated: %s)", f.Deprecated)
		}
		r := flagRow{head: head, help: help, order: -1}
		if g := f.Annotations[groupAnnotation]; len(g) == 2 {
			fmt.Sscan(g[0], &r.order)
			r.heading = g[1]
		}
		if env && f.Name != "help" {
			r.env = envName(f.Name)
			col = max(col, len(head)+2)
		}
		rows = append(rows, r)
	})
	return rows, col
}

// groupsOf sorts rows into their groups, in the groups' order, the rows
// of none last under "Other".
func groupsOf(rows []flagRow) []flagGroup {
	var groups []flagGroup
	var other []flagRow
	for _, r := range rows {
		if r.order < 0 {
			other = append(other, r)
			continue
		}
		for len(groups) <= r.order {
			groups = append(groups, flagGroup{})
		}
		groups[r.order].heading = r.heading
		groups[r.order].rows = append(groups[r.order].rows, r)
	}
	if len(other) > 0 {
		groups = append(groups, flagGroup{heading: "Other", rows: other})
	}
	return slices.DeleteFunc(groups, func(g flagGroup) bool { return len(g.rows) == 0 })
}

// renderRows writes rows as the help shows them, each flag's variable
// at col (or after it, or on the next line, where col leaves no room),
// its help below, indented and wrapped.
func renderRows(rows []flagRow, col int) string {
	var b strings.Builder
	for _, r := range rows {
		line := r.head
		switch {
		case r.env == "":
		case col+len(r.env) <= helpWidth:
			line += strings.Repeat(" ", col-len(r.head)) + r.env
		case len(r.head)+2+len(r.env) <= helpWidth:
			line += "  " + r.env
		default:
			line += "\n" + usageIndent + r.env
		}
		b.WriteString(line + "\n" + hang(usageIndent, r.help, helpWidth) + "\n")
	}
	return b.String()
}

// zeroDefault reports whether f's default is its type's zero value,
// which the help does not show.
func zeroDefault(f *pflag.Flag) bool {
	switch f.DefValue {
	case "", "0", "0s", "false", "[]", "<nil>":
		return true
	}
	return false
}

// hang writes text after head, wrapped at width, its further lines
// indented to head's width.
func hang(head, text string, width int) string {
	return wrap(head, strings.Repeat(" ", columns(head)), "", text, width)
}

// wrap writes the words of text after head, wrapped at width: a line
// broken ends with cont, and the next begins with indent.
func wrap(head, indent, cont, text string, width int) string {
	var b strings.Builder
	line := head
	empty := true // line holds no word yet
	for _, word := range strings.Fields(text) {
		if !empty && columns(line)+1+columns(word)+len(cont) > width {
			b.WriteString(line + cont + "\n")
			line, empty = indent, true
		}
		if !empty {
			line += " "
		}
		line += word
		empty = false
	}
	b.WriteString(line)
	return b.String()
}

// wrapText wraps each line of text longer than width at its spaces, the
// further lines indented as the line was. A line indented by tabs is a
// shell command (cobra's completion help): it is indented two spaces
// instead, and its further lines four, the lines before them ending in
// " \\" so that it still runs as shown.
func wrapText(text string, width int) string {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if command := strings.TrimLeft(l, "\t"); command != l {
			lines[i] = wrap("  ", "    ", " \\", command, width)
			continue
		}
		if columns(l) <= width {
			continue
		}
		body := strings.TrimLeft(l, " ")
		lines[i] = hang(l[:len(l)-len(body)], body, width)
	}
	return strings.Join(lines, "\n")
}

// columns is the width of s on a terminal: a rune a column, a tab to the
// next multiple of 8.
func columns(s string) int {
	n := 0
	for _, r := range s {
		if r == '\t' {
			n += 8 - n%8
		} else {
			n++
		}
	}
	return n
}
