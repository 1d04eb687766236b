package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/spf13/cobra"

	"github.com/reinception/rein/streams"
)

func init() { register(newStreamsCmd) }

// streamReport is one row of `rein streams --json`.
type streamReport struct {
	Name      string           `json:"name"`
	Replicas  int              `json:"replicas"`
	Leader    string           `json:"leader"`
	Peers     []streams.Peer   `json:"peers"`
	Messages  uint64           `json:"messages"`
	Bytes     uint64           `json:"bytes"`
	FirstSeq  uint64           `json:"first_seq"`
	LastSeq   uint64           `json:"last_seq"`
	Consumers []consumerReport `json:"consumers"`
	// Error says why the stream could not be read (no leader, no answer).
	Error string `json:"error,omitempty"`
}

type consumerReport struct {
	Name string `json:"name"`
	// Pending is the consumer's lag: messages not yet delivered.
	Pending     uint64 `json:"pending"`
	AckPending  int    `json:"ack_pending"`
	Redelivered int    `json:"redelivered"`
	AckFloor    uint64 `json:"ack_floor"`
}

func newStreamsCmd() *cobra.Command {
	var nf natsFlags
	var asJSON bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "streams",
		Short: "Show every rein stream: replicas, leader, replica lag, messages; and each consumer's pending (lag), ack-pending, redelivered",
		Long: `streams shows every rein stream, and KV_REIN_CONVERSATIONS (the conversations bucket), with its replicas, its leader and each other replica's state
(current, offline, operations behind the leader), its messages and bytes, and each consumer's pending
messages (its lag), ack-pending and redelivered counts.

Each stream must answer within --timeout: a cluster that has lost its meta leader, or a stream whose
replicas are down, is shown as such and the command exits non-zero instead of waiting.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := applySources(cmd, nil); err != nil {
				return err
			}
			if timeout <= 0 {
				return fmt.Errorf("--timeout must be positive")
			}
			nc, js, err := connectJS(&nf, "rein-streams")
			if err != nil {
				return err
			}
			defer nc.Close()
			rows, failed := streamReports(cmd.Context(), js, timeout)
			if err := printStreams(cmd.OutOrStdout(), rows, asJSON); err != nil {
				return err
			}
			if failed > 0 {
				return fmt.Errorf("%d of %d streams unavailable (no leader, or no answer within %s: is a majority of the cluster's servers up? nats server report jetstream shows the meta leader)", failed, len(rows), timeout)
			}
			return nil
		},
	}
	nf.bind(cmd, streams.DefaultURL)
	cmd.AddCommand(newStreamsBackupCmd(), newStreamsRestoreCmd())
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array of {name, replicas, leader, peers, messages, bytes, consumers: [...], error}")
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Second, "how long each stream may take to answer")
	return cmd
}

// streamReports reads every rein stream, each within timeout; failed
// counts the streams that have no leader or did not answer.
func streamReports(ctx context.Context, js jetstream.JetStream, timeout time.Duration) (rows []streamReport, failed int) {
	// The conversations bucket's stream too: its replicas matter as much.
	for _, name := range append(slices.Clone(streams.StreamNames), streams.StreamConversations) {
		row, err := streamReportOf(ctx, js, name, timeout)
		if streams.IsNotFound(err) {
			continue
		}
		if err != nil {
			failed++
			row.Error = err.Error()
			if errors.Is(err, context.DeadlineExceeded) {
				row.Error = fmt.Sprintf("no answer within %s", timeout)
			}
		}
		rows = append(rows, row)
	}
	return rows, failed
}

func streamReportOf(ctx context.Context, js jetstream.JetStream, name string, timeout time.Duration) (streamReport, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	row := streamReport{Name: name, Peers: []streams.Peer{}, Consumers: []consumerReport{}}
	st, err := streams.Status(ctx, js, name)
	if st.Info != nil {
		info := st.Info
		row.Replicas, row.Leader, row.Peers = st.Replicas, st.Leader, st.Peers
		row.Messages, row.Bytes, row.FirstSeq, row.LastSeq = info.State.Msgs, info.State.Bytes, info.State.FirstSeq, info.State.LastSeq
	}
	if err != nil {
		return row, err
	}
	s, err := js.Stream(ctx, name)
	if err != nil {
		return row, err
	}
	lister := s.ListConsumers(ctx)
	for ci := range lister.Info() {
		row.Consumers = append(row.Consumers, consumerReport{Name: ci.Name, Pending: ci.NumPending,
			AckPending: ci.NumAckPending, Redelivered: ci.NumRedelivered, AckFloor: ci.AckFloor.Stream})
	}
	if err := lister.Err(); err != nil {
		return row, fmt.Errorf("consumers of %s: %w", name, err)
	}
	return row, nil
}

func printStreams(out io.Writer, rows []streamReport, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STREAM\tREPLICAS\tLEADER\tREPLICA LAG\tMESSAGES\tBYTES\tCONSUMER\tPENDING (LAG)\tACK PENDING\tREDELIVERED")
	for _, r := range rows {
		leader := r.Leader
		if r.Error != "" {
			leader = "UNAVAILABLE: " + r.Error
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%d\t%d\t\t\t\t\n", r.Name, r.Replicas, leader, peerSummary(r.Peers), r.Messages, r.Bytes)
		for _, c := range r.Consumers {
			fmt.Fprintf(tw, "\t\t\t\t\t\t%s\t%d\t%d\t%d\n", c.Name, c.Pending, c.AckPending, c.Redelivered)
		}
	}
	return tw.Flush()
}

// peerSummary is "n2 current, n3 offline" or "-" for a single replica.
func peerSummary(peers []streams.Peer) string {
	if len(peers) == 0 {
		return "-"
	}
	parts := make([]string, len(peers))
	for i, p := range peers {
		switch {
		case p.Offline:
			parts[i] = p.Name + " offline"
		case p.Current:
			parts[i] = p.Name + " current"
		default:
			parts[i] = fmt.Sprintf("%s %d behind", p.Name, p.Lag)
		}
	}
	return strings.Join(parts, ", ")
}
