package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/reinception/rein/internal/app/audit"
	"github.com/reinception/rein/internal/labels"
)

// labelsEval are rein detect's flags of quality measured from labels
// (--eval --labels).
type labelsEval struct {
	on     bool
	tenant string
	since  string
	nats   natsFlags
}

// labelsEvalFlag is the value pflag gives --eval in `--eval --labels`: a
// string flag takes the next argument whatever it looks like.
const labelsEvalFlag = "--labels"

func (l *labelsEval) bind(fs *pflag.FlagSet) {
	fs.BoolVar(&l.on, "labels", false, "with --eval: measure precision and recall from operators' labels in REIN_LABELS (weighted by the review queue's probabilities) instead of a corpus")
	fs.StringVar(&l.tenant, "tenant", "", "with --eval --labels: one tenant's labels (default: every tenant's)")
	fs.StringVar(&l.since, "since", "", "with --eval --labels: traffic from this day on (YYYY-MM-DD, RFC3339, or a duration before now such as 7d)")
}

// since reads --since: a day, an RFC3339 time or a duration before now.
func (l *labelsEval) sinceTime(now time.Time) (time.Time, error) {
	if d, err := time.Parse(time.DateOnly, l.since); err == nil {
		return d, nil
	}
	t, err := audit.ParseTime(l.since, now)
	if err != nil {
		return time.Time{}, fmt.Errorf("--since: %w", err)
	}
	return t, nil
}

func runDetectLabels(ctx context.Context, l *labelsEval, asJSON bool, stdout io.Writer) error {
	since, err := l.sinceTime(time.Now())
	if err != nil {
		return err
	}
	nc, js, err := connectJS(&l.nats, "rein-detect")
	if err != nil {
		return err
	}
	defer nc.Close()
	ls, err := labels.Read(ctx, js, labels.Filter{Tenant: l.tenant, Since: since})
	if err != nil {
		return err
	}
	r := labels.Quality(ls)
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	return writeLabelQuality(stdout, l, r)
}

func writeLabelQuality(w io.Writer, l *labelsEval, r labels.Report) error {
	who := "every tenant"
	if l.tenant != "" {
		who = "tenant " + l.tenant
	}
	if l.since != "" {
		who += " since " + l.since
	}
	fmt.Fprintf(w, "detection quality of %s, from labels: %d labelled turns of the review queue (each weighted 1/π), %d labels outside it (not counted)\n",
		who, r.Turns, r.AdHoc)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TYPE\tPRECISION\t95% CI\tLABELS\tRECALL\t95% CI\tLABELS")
	for _, row := range r.Rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", row.Name, estimateCells(row.Precision), estimateCells(row.Recall))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, "overall: an activation counts only with the right type; any error: whether an error was present, whatever its type. Intervals are Wilson's on Kish's effective sample size.")
	return err
}

func estimateCells(e labels.Estimate) string {
	if !e.Defined() {
		return "-\t-\t0"
	}
	return fmt.Sprintf("%.3f\t%.3f–%.3f\t%d", e.Value, e.Lower, e.Upper, e.Labels)
}
