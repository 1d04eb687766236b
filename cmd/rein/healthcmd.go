package main

import (
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/spf13/cobra"
)

func init() { register(newHealthCmd) }

// newHealthCmd is the container health check: the image has no shell nor
// curl, so the binary asks its own HTTP port.
func newHealthCmd() *cobra.Command {
	var url string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "health",
		Short: "Ask a running rein's /healthz (or --url /readyz); exit 0 when it answers 200",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := applySources(cmd, nil); err != nil {
				return err
			}
			client := http.Client{Timeout: timeout}
			resp, err := client.Get(url)
			if err != nil {
				return fmt.Errorf("health: %w", err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("health: %s answered %s: %s", url, resp.Status, body)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s\n", body)
			return nil
		},
	}
	cmd.Flags().StringVar(&url, "url", "http://127.0.0.1:8080/healthz", "URL to ask")
	cmd.Flags().DurationVar(&timeout, "timeout", 3*time.Second, "how long to wait for the answer")
	return cmd
}
