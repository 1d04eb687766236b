package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/reinception/rein/internal/app/audit"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/consume"
	"github.com/reinception/rein/streams/natsserver"
)

func init() { register(newDLQCmd) }

// dlqFilterFlags select dead letters for list and redrive.
type dlqFilterFlags struct {
	stage, tenant, conv, reason, since, until string
	fromSeq, toSeq                            uint64
}

func (f *dlqFilterFlags) bind(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&f.stage, "stage", "", "only dead letters of this stage (detector, injector, agentworker, escalation, ingress)")
	fs.StringVar(&f.tenant, "tenant", "", "only this tenant's")
	fs.StringVar(&f.conv, "conversation", "", "only this conversation's")
	fs.StringVar(&f.reason, "reason", "", "only those whose reason contains this text")
	fs.StringVar(&f.since, "since", "", "dead-lettered at or after: RFC3339 or a duration before now (24h, 90m, 7d)")
	fs.StringVar(&f.until, "until", "", "dead-lettered at or before: RFC3339 or a duration before now")
	fs.Uint64Var(&f.fromSeq, "from-seq", 0, "first REIN_DLQ sequence")
	fs.Uint64Var(&f.toSeq, "to-seq", 0, "last REIN_DLQ sequence")
}

func (f *dlqFilterFlags) filter() (consume.DeadLetterFilter, error) {
	now := time.Now()
	since, err := audit.ParseTime(f.since, now)
	if err != nil {
		return consume.DeadLetterFilter{}, fmt.Errorf("--since: %w", err)
	}
	until, err := audit.ParseTime(f.until, now)
	if err != nil {
		return consume.DeadLetterFilter{}, fmt.Errorf("--until: %w", err)
	}
	return consume.DeadLetterFilter{Stage: f.stage, Tenant: f.tenant, Conversation: f.conv, Reason: f.reason,
		Since: since, Until: until, FromSeq: f.fromSeq, ToSeq: f.toSeq}, nil
}

func newDLQCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dlq",
		Short: "Inspect dead letters and put them back (redrive), each exactly once",
		Long: `dlq reads REIN_DLQ, where every stage puts what it could not handle, with the reason and the
original message.

  rein dlq list [--stage S] [--tenant T] [--reason TEXT] [--since 24h] [--json]
  rein dlq show SEQ
  rein dlq redrive [filters]          a dry run: what would be put back, and what not and why
  rein dlq redrive [filters] --yes    put them back on their original subjects

A redrive is idempotent: each dead letter goes back once (a dev.rein.redrive.v1 record on
rein.dlq.redriven names it, and later redrives skip it), under a message id of its own. The
stage then handles it as any delivery: a turn whose outcome is already stored (for instance a
task that failed and was handed to a human as agent_unavailable) publishes nothing new.
Undecodable input and conflicting duplicates are never put back, nor is a truncated dead letter:
one of a message over the event limit keeps only the body's first 16 KiB, its size and its
SHA-256 (shown by list and show), never the whole body.`,
	}
	cmd.AddCommand(newDLQListCmd(), newDLQShowCmd(), newDLQRedriveCmd())
	return cmd
}

func newDLQListCmd() *cobra.Command {
	var nf natsFlags
	var ff dlqFilterFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List dead letters (sequence, time, stage, conversation, reason, whether redriven)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, entries, closeNC, err := selectDeadLetters(cmd, &nf, &ff)
			if err != nil {
				return err
			}
			defer closeNC()
			if asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(entries)
			}
			printDeadLetters(cmd.OutOrStdout(), entries)
			return nil
		},
	}
	nf.bind(cmd, natsserver.DefaultURL)
	ff.bind(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array")
	return cmd
}

// selectDeadLetters connects and reads the dead letters the flags select.
func selectDeadLetters(cmd *cobra.Command, nf *natsFlags, ff *dlqFilterFlags) (jetstream.JetStream, []consume.DeadLetterEntry, func(), error) {
	if err := applySources(cmd, nil); err != nil {
		return nil, nil, nil, err
	}
	f, err := ff.filter()
	if err != nil {
		return nil, nil, nil, err
	}
	nc, js, err := connectJS(nf, "rein-dlq")
	if err != nil {
		return nil, nil, nil, err
	}
	entries, err := consume.ListDeadLetters(cmd.Context(), js, f)
	if err != nil {
		nc.Close()
		return nil, nil, nil, err
	}
	return js, entries, nc.Close, nil
}

func printDeadLetters(w io.Writer, entries []consume.DeadLetterEntry) {
	if len(entries) == 0 {
		fmt.Fprintln(w, "no dead letters match")
		return
	}
	for _, e := range entries {
		conv := "-"
		if e.Tenant != "" {
			conv = e.Tenant + "/" + e.Conv
		}
		state := ""
		if e.Letter.Truncated {
			state = fmt.Sprintf(" [truncated: %d of %d bytes kept]", len(e.Letter.Data), e.Letter.Size)
		}
		if e.Redriven != 0 {
			state += fmt.Sprintf(" [redriven #%d]", e.Redriven)
		}
		reason := e.Letter.Reason
		if len(reason) > 120 {
			reason = reason[:117] + "..."
		}
		fmt.Fprintf(w, "#%-6d %s  %-11s %-28s %s%s\n", e.Sequence, e.Stored.UTC().Format(time.RFC3339), e.Letter.Stage, conv,
			strings.ReplaceAll(reason, "\n", " "), state)
	}
}

func newDLQShowCmd() *cobra.Command {
	var nf natsFlags
	cmd := &cobra.Command{
		Use:   "show SEQ",
		Short: "Show one dead letter in full (reason, original subject, headers and body)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := applySources(cmd, nil); err != nil {
				return err
			}
			var seq uint64
			if _, err := fmt.Sscan(args[0], &seq); err != nil || seq == 0 {
				return fmt.Errorf("SEQ %q is not a REIN_DLQ sequence number", args[0])
			}
			nc, js, err := connectJS(&nf, "rein-dlq")
			if err != nil {
				return err
			}
			defer nc.Close()
			entries, err := consume.ListDeadLetters(cmd.Context(), js, consume.DeadLetterFilter{FromSeq: seq, ToSeq: seq})
			if err != nil {
				return err
			}
			if len(entries) == 0 {
				return fmt.Errorf("REIN_DLQ #%d is not a dead letter (no such message, or a redrive record)", seq)
			}
			enc := json.NewEncoder(cmd.OutOrStdout())
			enc.SetIndent("", "  ")
			return enc.Encode(entries[0])
		},
	}
	nf.bind(cmd, natsserver.DefaultURL)
	return cmd
}

func newDLQRedriveCmd() *cobra.Command {
	var nf natsFlags
	var ff dlqFilterFlags
	var yes, asJSON bool
	cmd := &cobra.Command{
		Use:   "redrive",
		Short: "Put dead letters back on their original subjects, each once (a dry run unless --yes)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			js, entries, closeNC, err := selectDeadLetters(cmd, &nf, &ff)
			if err != nil {
				return err
			}
			defer closeNC()
			res, err := consume.Redrive(cmd.Context(), streams.NewPublisher(js, nil, streams.PublisherConfig{}), entries, !yes)
			if asJSON {
				if jerr := json.NewEncoder(cmd.OutOrStdout()).Encode(res); jerr != nil {
					return jerr
				}
				return err
			}
			out := cmd.OutOrStdout()
			verb := "would put back"
			if yes {
				verb = "put back"
			}
			for _, r := range res.Redriven {
				fmt.Fprintf(out, "%s #%d on %s", verb, r.DLQSequence, r.Subject)
				if r.NewSequence > 0 {
					fmt.Fprintf(out, " (%s #%d)", r.Stream, r.NewSequence)
				}
				fmt.Fprintln(out)
			}
			for _, s := range res.Skipped {
				fmt.Fprintf(out, "skipped #%d: %s\n", s.DLQSequence, s.Why)
			}
			if !yes && len(res.Redriven) > 0 {
				fmt.Fprintf(out, "dry run: %d dead letter(s) would be put back; run again with --yes\n", len(res.Redriven))
			}
			return err
		},
	}
	nf.bind(cmd, natsserver.DefaultURL)
	ff.bind(cmd)
	cmd.Flags().BoolVar(&yes, "yes", false, "put them back (without it, a dry run)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}
