package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/followgraph/followgraph/graphgen"
)

func newGen() *cobra.Command {
	var (
		edges, users int
		seed         uint64
		out          string
	)
	cmd := &cobra.Command{
		Use:   "gen",
		Short: "Write a generated power-law follow graph as TSV",
		Long: `Write a generated power-law follow graph as TSV, a line an edge:
follower<TAB>followee<TAB>unix_ms, which import reads. The same --edges,
--users and --seed give the same graph.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg := graphgen.Default(edges, seed)
			if users > 0 {
				cfg.Users = users
			}
			if err := cfg.Validate(); err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if out != "" && out != "-" {
				f, err := os.Create(out)
				if err != nil {
					return err
				}
				defer f.Close()
				w = f
			}
			bw := bufio.NewWriterSize(w, 1<<20)
			var line []byte
			for e := range graphgen.Edges(cfg) {
				line = strconv.AppendInt(line[:0], int64(e.Follower), 10)
				line = append(line, '\t')
				line = strconv.AppendInt(line, int64(e.Followee), 10)
				line = append(line, '\t')
				line = strconv.AppendInt(line, e.Millis, 10)
				line = append(line, '\n')
				if _, err := bw.Write(line); err != nil {
					return fmt.Errorf("gen: %w", err)
				}
			}
			return bw.Flush()
		},
	}
	f := cmd.Flags()
	f.IntVar(&edges, "edges", 1_000_000, "about how many edges")
	f.IntVar(&users, "users", 0, "how many users (default: edges/50)")
	f.Uint64Var(&seed, "seed", 1, "the same seed gives the same graph")
	f.StringVarP(&out, "out", "o", "-", "output file (- for standard output)")
	return cmd
}
