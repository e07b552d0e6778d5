package main

import (
	"fmt"
	"net/http"
	"time"

	"github.com/spf13/cobra"
)

// newProbe is `followgraph probe URL`: a health check for where there is
// no curl (the image from scratch, deploy/compose). It succeeds when a GET
// of URL answers 2xx within --timeout, and fails naming the status or the
// error otherwise.
func newProbe() *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "probe URL",
		Short: "GET a URL and succeed on a 2xx answer: a health check without curl",
		Long: `GET URL (such as http://127.0.0.1:8080/readyz) and succeed on a 2xx
answer within --timeout; fail, naming the status or the error, otherwise. A
health check for where there is no curl (the image from scratch): /readyz
for "send me traffic", /healthz for "alive".`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			resp, err := (&http.Client{Timeout: timeout}).Get(args[0])
			if err != nil {
				return err
			}
			resp.Body.Close()
			if resp.StatusCode/100 != 2 {
				return fmt.Errorf("probe %s: %s", args[0], resp.Status)
			}
			return nil
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 2*time.Second, "longest the answer may take")
	return cmd
}
