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

	"github.com/reinception/rein/internal/app/dashboard"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
	"github.com/reinception/rein/streams/consume"
	"github.com/reinception/rein/streams/natsserver"
)

func init() { register(newStreamsCmd) }

// streamReport is one row of `rein streams --json`.
type streamReport struct {
	Name      string            `json:"name"`
	Replicas  int               `json:"replicas"`
	Leader    string            `json:"leader"`
	Peers     []natsserver.Peer `json:"peers"`
	Messages  uint64            `json:"messages"`
	Bytes     uint64            `json:"bytes"`
	FirstSeq  uint64            `json:"first_seq"`
	LastSeq   uint64            `json:"last_seq"`
	Consumers []consumerReport  `json:"consumers"`
	// Rates is what the stream stored in the last minute, 15 minutes and
	// hour, read from the stream itself (every replica's messages, not one
	// process's counters); Trend compares the later half of the last 15
	// minutes with the earlier (rising, falling, steady, idle).
	Rates []rateReport `json:"rates"`
	Trend string       `json:"trend,omitempty"`
	// RatesError says why the rates could not be read.
	RatesError string `json:"rates_error,omitempty"`
	// Error says why the stream could not be read (no leader, no answer).
	Error string `json:"error,omitempty"`
}

// rateReport is one window of a stream's traffic.
type rateReport struct {
	Window    string  `json:"window"` // 1m, 15m, 1h
	Messages  uint64  `json:"messages"`
	PerSecond float64 `json:"per_second"`
}

// rateWindows are the windows rein streams reports; trendWindow is the one
// whose halves give the trend.
var (
	rateWindows = []struct {
		name string
		span time.Duration
	}{{"1m", time.Minute}, {"15m", 15 * time.Minute}, {"1h", time.Hour}}
	trendWindow = 15 * time.Minute
)

type consumerReport struct {
	Name string `json:"name"`
	// Pending is the consumer's lag: messages not yet delivered.
	Pending     uint64 `json:"pending"`
	AckPending  int    `json:"ack_pending"`
	Redelivered int    `json:"redelivered"`
	AckFloor    uint64 `json:"ack_floor"`
	// OldestPendingS is how long, in seconds, the oldest message it has
	// not had acknowledged has been in the stream (its lag in time).
	OldestPendingS float64 `json:"oldest_pending_s"`
	// WorkedBy is, for a partition's durable, the live replica that works
	// it (empty while the stage has none).
	WorkedBy *consume.Member `json:"worked_by,omitempty"`
}

func newStreamsCmd() *cobra.Command {
	var nf natsFlags
	var asJSON bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "streams",
		Short: "Show every rein stream: replicas, leader, replica lag, messages, traffic over 1m/15m/1h; and each consumer's pending (lag), ack-pending, redelivered, oldest pending",
		Long: `streams shows every rein stream, and KV_REIN_CONVERSATIONS (the conversations bucket), with its replicas, its leader and each other replica's state
(current, offline, operations behind the leader), its messages and bytes, and each consumer's pending
messages (its lag), ack-pending and redelivered counts and the age of its oldest pending message.

Traffic is the whole deployment's, read from the streams (each stored message's sequence and time),
not from any process: the messages stored in the last minute, 15 minutes and hour, the last minute's
rate, and the trend (the later half of the last 15 minutes against the earlier: rising, falling,
steady, idle).

A partition's durable (detector-p3, with --partitions) names the replica that works it (host and pid).

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
	nf.bind(cmd, natsserver.DefaultURL)
	cmd.AddCommand(newStreamsBackupCmd(), newStreamsRestoreCmd())
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array of {name, replicas, leader, peers, messages, bytes, rates: [{window, messages, per_second}], trend, consumers: [...], error}")
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Second, "how long each stream may take to answer")
	return cmd
}

// streamReports reads every rein stream, each within timeout; failed
// counts the streams that have no leader or did not answer.
func streamReports(ctx context.Context, js jetstream.JetStream, timeout time.Duration) (rows []streamReport, failed int) {
	// The conversations bucket's stream too: its replicas matter as much.
	for _, name := range append(slices.Clone(natsserver.StreamNames), bus.StreamConversations) {
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
	row := streamReport{Name: name, Peers: []natsserver.Peer{}, Consumers: []consumerReport{}, Rates: []rateReport{}}
	st, err := natsserver.Status(ctx, js, name)
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
	now := time.Now()
	// The rates take at most half the time, so that an identity that may
	// not read a stream's messages (the reader, the conversations bucket)
	// still gets its consumers.
	rctx, rcancel := context.WithTimeout(ctx, timeout/2)
	if err := streamRates(rctx, js, &row, now); err != nil {
		row.RatesError = err.Error()
	}
	rcancel()
	lister := s.ListConsumers(ctx)
	owners := map[string]map[int]consume.Member{} // by stage, read once
	for ci := range lister.Info() {
		c := consumerReport{Name: ci.Name, Pending: ci.NumPending,
			AckPending: ci.NumAckPending, Redelivered: ci.NumRedelivered, AckFloor: ci.AckFloor.Stream}
		if age, err := dashboard.OldestPending(ctx, js, ci, now); err == nil {
			c.OldestPendingS = age.Seconds()
		}
		if stage, p, ok := consume.ParsePartitionDurable(ci.Name); ok {
			if _, read := owners[stage]; !read {
				owners[stage], _ = consume.PartitionOwners(ctx, js, stage, streams.StreamPartitions(s.CachedInfo().Config))
			}
			if m, ok := owners[stage][p]; ok {
				c.WorkedBy = &m
			}
		}
		row.Consumers = append(row.Consumers, c)
	}
	if err := lister.Err(); err != nil {
		return row, fmt.Errorf("consumers of %s: %w", name, err)
	}
	return row, nil
}

// streamRates fills row's rates and trend from the stream's sequences and
// times.
func streamRates(ctx context.Context, js jetstream.JetStream, row *streamReport, now time.Time) error {
	for _, w := range rateWindows {
		fs, err := dashboard.StreamFlow(ctx, js, row.Name, row.LastSeq, now, w.span, 0)
		if err != nil {
			return err
		}
		row.Rates = append(row.Rates, rateReport{Window: w.name, Messages: fs.Messages, PerSecond: fs.PerSecond})
	}
	fs, err := dashboard.StreamFlow(ctx, js, row.Name, row.LastSeq, now, trendWindow, 2)
	if err != nil {
		return err
	}
	row.Trend = fs.Direction
	return nil
}

func printStreams(out io.Writer, rows []streamReport, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STREAM\tREPLICAS\tLEADER\tREPLICA LAG\tMESSAGES\tBYTES\tSTORED 1M/15M/1H\tRATE 1M\tTREND\tCONSUMER\tPENDING (LAG)\tACK PENDING\tREDELIVERED\tOLDEST PENDING")
	for _, r := range rows {
		leader := r.Leader
		if r.Error != "" {
			leader = "UNAVAILABLE: " + r.Error
		}
		stored, rate, trend := "-", "-", r.Trend
		if len(r.Rates) == len(rateWindows) {
			stored = fmt.Sprintf("%d / %d / %d", r.Rates[0].Messages, r.Rates[1].Messages, r.Rates[2].Messages)
			rate = fmt.Sprintf("%.2f/s", r.Rates[0].PerSecond)
		}
		if trend == "" {
			trend = "-"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%d\t%d\t%s\t%s\t%s\t\t\t\t\t\n", r.Name, r.Replicas, leader, peerSummary(r.Peers), r.Messages, r.Bytes, stored, rate, trend)
		for _, c := range r.Consumers {
			age := (time.Duration(c.OldestPendingS * float64(time.Second))).Round(time.Second)
			name := c.Name
			if c.WorkedBy != nil {
				name += fmt.Sprintf(" (%s pid %d)", c.WorkedBy.Host, c.WorkedBy.PID)
			}
			fmt.Fprintf(tw, "\t\t\t\t\t\t\t\t\t%s\t%d\t%d\t%d\t%s\n", name, c.Pending, c.AckPending, c.Redelivered, age)
		}
	}
	return tw.Flush()
}

// peerSummary is "n2 current, n3 offline" or "-" for a single replica.
func peerSummary(peers []natsserver.Peer) string {
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
