package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/reinception/rein/internal/labels"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/natsserver"
)

func init() { register(newLabelCmd) }

// labelNow is the clock of rein label (a day's queue is drawn once the
// day is over); tests move it.
var labelNow = time.Now

// queueFlags are the review queue's settings, shared by rein label (which
// records a queued turn's draw), rein label queue and rein serve (the
// dashboard's label form): all must draw alike, so the flags, and so
// their variables (REIN_LABEL_BUDGET, …), have one name everywhere.
type queueFlags struct{ cfg labels.QueueConfig }

func (q *queueFlags) bind(fs *pflag.FlagSet) {
	fs.IntVar(&q.cfg.Budget, "label-budget", labels.DefaultBudget, "review queue: turns to label per tenant and day, on average")
	fs.Float64Var(&q.cfg.CleanShare, "label-clean-share", labels.DefaultCleanShare, "review queue: the budget's share for turns rein did not activate on (recall needs them)")
	fs.StringVar(&q.cfg.Key, "label-sample-key", labels.DefaultKey, "review queue: the key of the draw; every replica and run with the same key draws the same turns")
}

func newLabelCmd() *cobra.Command {
	var nf natsFlags
	var qf queueFlags
	var req labels.Request
	cmd := &cobra.Command{
		Use:   "label",
		Short: "Label a judged turn (correct, false activation, wrong type, missed error) or list the review queue",
		Long: `label records what an operator says of rein's detection of one user turn, as a dev.rein.label.v1
event in REIN_LABELS (one per turn and labeller: the same label twice is stored once, a changed one
replaces it). The verdict is checked against the stored detection:

  correct           rein was right (an activation of the right type, or a clear turn with no error)
  false_activation  rein activated on a turn with no error
  wrong_type        rein activated, but the error is of another type (--type names it)
  missed_error      rein did not activate on a turn with an error (--type names it)

A turn drawn by the review queue (rein label queue) is recorded with its inclusion probability, which
rein detect --eval --labels weighs it by; a label of any other turn is kept and shown, never weighted.
See docs/labels.md.`,
		Example: `  rein label queue --tenant acme
  rein label --tenant acme --conversation c1 --turn 3 --verdict wrong_type --type unsupported_action --labeller ann
  rein detect --eval --labels --tenant acme`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := applySources(cmd, nil); err != nil {
				return err
			}
			nc, js, err := connectJS(&nf, "rein-label")
			if err != nil {
				return err
			}
			defer nc.Close()
			r, err := labels.Put(cmd.Context(), js, streams.NewPublisher(js, nil, streams.PublisherConfig{}), req, qf.cfg, labelNow())
			if err != nil {
				return err
			}
			return writeLabelResult(cmd.OutOrStdout(), req, r)
		},
	}
	nf.bind(cmd, natsserver.DefaultURL)
	fs := cmd.Flags()
	fs.StringVar(&req.Tenant, "tenant", "", "the conversation's tenant (required)")
	fs.StringVar(&req.Conversation, "conversation", "", "the conversation id (required)")
	fs.IntVar(&req.Turn, "turn", 0, "the user turn's number (required)")
	fs.StringVar(&req.Verdict, "verdict", "", "correct, false_activation, wrong_type or missed_error (required)")
	fs.StringVar(&req.ErrorType, "type", "", "the right error type (with wrong_type and missed_error)")
	fs.StringVar(&req.Labeller, "labeller", "operator", "who labels ([A-Za-z0-9_-]); one label per turn and labeller counts")
	fs.StringVar(&req.Note, "note", "", "a short note kept with the label")
	qf.bind(fs)
	for _, f := range []string{"tenant", "conversation", "turn", "verdict"} {
		_ = cmd.MarkFlagRequired(f)
	}
	cmd.AddCommand(newLabelQueueCmd())
	return cmd
}

func writeLabelResult(w io.Writer, req labels.Request, r labels.Result) error {
	what := "labelled"
	if r.Unchanged {
		what = "unchanged (already labelled so)"
	}
	l := r.Label
	verdict := l.Verdict
	if l.ErrorType != "" {
		verdict += " " + l.ErrorType
	}
	detected := "clear"
	if l.Detected {
		detected = l.DetectedType
	}
	draw := "outside the review queue: shown, never weighted"
	if l.Sample != nil {
		draw = fmt.Sprintf("review queue %s, stratum %s, π %.4g", l.Sample.Day, l.Sample.Stratum, l.Sample.Probability)
	}
	_, err := fmt.Fprintf(w, "%s %s/%s turn %d: %s by %s (rein said %s; %s)\n", what, req.Tenant, req.Conversation, req.Turn, verdict, l.Labeller, detected, draw)
	return err
}

func newLabelQueueCmd() *cobra.Command {
	var nf natsFlags
	var qf queueFlags
	var day string
	var asJSON, all bool
	cmd := &cobra.Command{
		Use:   "queue",
		Short: "List the turns of a tenant's daily review queue still to label",
		Long: `queue draws a tenant's review queue of one UTC day (default: yesterday, the last whole day) from
its detections in REIN_DETECTIONS: about --label-budget turns, --label-clean-share of them among turns
rein did not activate on and the rest split between the error types it activated on. The draw is a
keyed hash of each turn, so every run with the same --label-sample-key lists the same turns, each with
its inclusion probability π. Turns someone has labelled already are left out unless --all.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := applySources(cmd, nil); err != nil {
				return err
			}
			q := qf.cfg
			q.Tenant = cmd.Flag("tenant").Value.String()
			now := labelNow().UTC()
			q.Day = now.Truncate(24*time.Hour).AddDate(0, 0, -1)
			if day != "" {
				d, err := time.Parse(time.DateOnly, day)
				if err != nil {
					return fmt.Errorf("--day %q: want YYYY-MM-DD", day)
				}
				q.Day = d
			}
			nc, js, err := connectJS(&nf, "rein-label")
			if err != nil {
				return err
			}
			defer nc.Close()
			items, err := labels.Review(cmd.Context(), js, q, now)
			if err != nil {
				return err
			}
			rows := make([]queueRow, 0, len(items))
			for _, it := range items {
				r := queueRow{Conversation: it.Conversation, Turn: it.Turn, Stratum: it.Sample.Stratum, Probability: it.Sample.Probability,
					Population: it.Sample.Population, Labelled: it.Labelled, Text: it.UserText}
				if all || !r.Labelled {
					rows = append(rows, r)
				}
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(rows)
			}
			return writeQueue(cmd.OutOrStdout(), q, len(items), rows)
		},
	}
	nf.bind(cmd, natsserver.DefaultURL)
	fs := cmd.Flags()
	fs.String("tenant", "", "the tenant whose queue to draw (required)")
	fs.StringVar(&day, "day", "", "the UTC day to draw from, YYYY-MM-DD (default: yesterday)")
	fs.BoolVar(&asJSON, "json", false, "print the queue as a JSON array")
	fs.BoolVar(&all, "all", false, "list labelled turns too")
	qf.bind(fs)
	_ = cmd.MarkFlagRequired("tenant")
	return cmd
}

// queueRow is one line of rein label queue.
type queueRow struct {
	Conversation string  `json:"conversation"`
	Turn         int     `json:"turn"`
	Stratum      string  `json:"stratum"`
	Probability  float64 `json:"probability"`
	Population   int     `json:"population"`
	Labelled     bool    `json:"labelled"`
	Text         string  `json:"user_text"`
}

func writeQueue(w io.Writer, q labels.QueueConfig, drawn int, rows []queueRow) error {
	fmt.Fprintf(w, "review queue of %s, %s: %d turns drawn, %d listed\n", q.Tenant, q.Day.Format(time.DateOnly), drawn, len(rows))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CONVERSATION\tTURN\tSTRATUM\tπ\tLABELLED\tUSER TEXT")
	for _, r := range rows {
		text := strings.Join(strings.Fields(r.Text), " ")
		if rs := []rune(text); len(rs) > 60 {
			text = string(rs[:60]) + "…"
		}
		mark := ""
		if r.Labelled {
			mark = "yes"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%.4g\t%s\t%s\n", r.Conversation, r.Turn, r.Stratum, r.Probability, mark, text)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "label each: rein label --tenant %s --conversation CONV --turn N --verdict V [--type T]\n", q.Tenant)
	return err
}
