package main

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/reinception/rein/streams"
)

func init() { register(newStreamsCmd) }

// streamReport is one row of `rein streams --json`.
type streamReport struct {
	Name      string           `json:"name"`
	Messages  uint64           `json:"messages"`
	Bytes     uint64           `json:"bytes"`
	FirstSeq  uint64           `json:"first_seq"`
	LastSeq   uint64           `json:"last_seq"`
	Consumers []consumerReport `json:"consumers"`
}

type consumerReport struct {
	Name        string `json:"name"`
	Pending     uint64 `json:"pending"`
	AckPending  int    `json:"ack_pending"`
	Redelivered int    `json:"redelivered"`
	AckFloor    uint64 `json:"ack_floor"`
}

func newStreamsCmd() *cobra.Command {
	var nf natsFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "streams",
		Short: "Show every rein stream and consumer: messages, bytes, pending and ack-pending",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := applySources(cmd, nil); err != nil {
				return err
			}
			nc, js, err := connectJS(&nf, "rein-streams")
			if err != nil {
				return err
			}
			defer nc.Close()
			ctx := cmd.Context()
			var rows []streamReport
			for _, name := range streams.StreamNames {
				s, err := js.Stream(ctx, name)
				if err != nil {
					if streams.IsNotFound(err) {
						continue
					}
					return fmt.Errorf("stream %s: %w", name, err)
				}
				info, err := s.Info(ctx)
				if err != nil {
					return fmt.Errorf("stream %s: %w", name, err)
				}
				row := streamReport{Name: name, Messages: info.State.Msgs, Bytes: info.State.Bytes,
					FirstSeq: info.State.FirstSeq, LastSeq: info.State.LastSeq, Consumers: []consumerReport{}}
				lister := s.ListConsumers(ctx)
				for ci := range lister.Info() {
					row.Consumers = append(row.Consumers, consumerReport{Name: ci.Name, Pending: ci.NumPending,
						AckPending: ci.NumAckPending, Redelivered: ci.NumRedelivered, AckFloor: ci.AckFloor.Stream})
				}
				if err := lister.Err(); err != nil {
					return fmt.Errorf("consumers of %s: %w", name, err)
				}
				rows = append(rows, row)
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(rows)
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "STREAM\tMESSAGES\tBYTES\tCONSUMER\tPENDING\tACK PENDING\tREDELIVERED")
			for _, r := range rows {
				fmt.Fprintf(tw, "%s\t%d\t%d\t\t\t\t\n", r.Name, r.Messages, r.Bytes)
				for _, c := range r.Consumers {
					fmt.Fprintf(tw, "\t\t\t%s\t%d\t%d\t%d\n", c.Name, c.Pending, c.AckPending, c.Redelivered)
				}
			}
			return tw.Flush()
		},
	}
	nf.bind(cmd, streams.DefaultURL)
	cmd.AddCommand(newStreamsBackupCmd(), newStreamsRestoreCmd())
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array of {name, messages, bytes, consumers: [...]}")
	return cmd
}
