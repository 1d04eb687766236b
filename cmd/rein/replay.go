package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/reinception/rein/internal/app/audit"
	"github.com/reinception/rein/streams/bus"
	"github.com/reinception/rein/streams/natsserver"
)

func init() { register(newReplayCmd) }

// selectionFlags are the range flags of replay.
type selectionFlags struct {
	stream, tenant, conv, since, until string
	fromSeq, toSeq                     uint64
}

func (f *selectionFlags) bind(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&f.stream, "stream", bus.StreamTurns, "stream to read (any rein stream, or a replay stream such as "+audit.DefaultReplayStream+")")
	fs.StringVar(&f.tenant, "tenant", "", "only this tenant")
	fs.StringVar(&f.conv, "conversation", "", "only this conversation")
	fs.StringVar(&f.since, "since", "", "first stored time: RFC3339 or a duration before now (24h, 90m, 7d)")
	fs.StringVar(&f.until, "until", "", "last stored time: RFC3339 or a duration before now")
	fs.Uint64Var(&f.fromSeq, "from-seq", 0, "first stream sequence (inclusive)")
	fs.Uint64Var(&f.toSeq, "to-seq", 0, "last stream sequence (inclusive)")
}

func (f *selectionFlags) selection(now time.Time) (audit.Selection, error) {
	since, err := audit.ParseTime(f.since, now)
	if err != nil {
		return audit.Selection{}, fmt.Errorf("--since: %w", err)
	}
	until, err := audit.ParseTime(f.until, now)
	if err != nil {
		return audit.Selection{}, fmt.Errorf("--until: %w", err)
	}
	sel := audit.Selection{Stream: f.stream, Tenant: f.tenant, Conversation: f.conv, Since: since, Until: until,
		FromSeq: f.fromSeq, ToSeq: f.toSeq}
	return sel, sel.Validate()
}

func newReplayCmd() *cobra.Command {
	var nf natsFlags
	var sf selectionFlags
	var format, out, to, replayStream string
	var quiet bool
	cmd := &cobra.Command{
		Use:   "replay",
		Short: "Read back any rein stream by tenant, conversation, time or sequence as JSONL, a transcript, or into a replay namespace",
		Long: `replay reads a range of one stream through an ordered consumer (no durable state is left on the
server) and writes it:

  --format jsonl   CloudEvents structured JSON, one event per line (default)
  --format text    a readable transcript grouped by conversation (time, sequence, turn,
                   USER/AGENT/DETECTION/…; conversations in the order they first appear)
  --to PREFIX      republish each event on PREFIX.<original subject> into the stream
                   --replay-stream (created on demand) for re-processing; a prefix starting
                   with "rein." is refused, so a replay never reaches live subjects

Examples:
  rein replay --tenant acme --conversation c1 --format text
  rein replay --since 24h --out last-day.jsonl
  rein replay --stream REIN_DETECTIONS --from-seq 1000 --to-seq 2000
  rein replay --since 2026-03-01T00:00:00Z --to replay.run1

A stored message that is not a CloudEvent never stops a replay: jsonl leaves it out and says how
many on stderr, text shows it raw, --to copies it. An event whose JSON body is broken is written
with its body as data_base64.

A progress bar is drawn on stderr when stderr is a terminal and --out is a file or --to is given.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := applySources(cmd, nil); err != nil {
				return err
			}
			sel, err := sf.selection(time.Now())
			if err != nil {
				return err
			}
			check := audit.ReplayConfig{Format: format, Out: io.Discard, To: to}
			if err := check.Validate(); err != nil {
				return err
			}
			nc, js, err := connectJS(&nf, "rein-replay")
			if err != nil {
				return err
			}
			defer nc.Close()
			showBar := !quiet && isTerminal(os.Stderr) && (out != "" || to != "")
			n, err := runReplay(cmd.Context(), js, sel, replayOptions{format: format, out: out, to: to, replayStream: replayStream,
				stdout: cmd.OutOrStdout(), progress: showBar})
			if err != nil {
				return err
			}
			if n.Skipped > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "left out %d stored message(s) that are not CloudEvents\n", n.Skipped)
			}
			if out != "" || to != "" {
				dest := out
				if to != "" {
					dest = to + ".> in " + replayStreamName(replayStream)
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "replayed %d events from %s to %s\n", n.Written, sel.Stream, dest)
			}
			return nil
		},
	}
	nf.bind(cmd, natsserver.DefaultURL)
	sf.bind(cmd)
	fs := cmd.Flags()
	fs.StringVar(&format, "format", "jsonl", "output format: jsonl or text")
	fs.StringVarP(&out, "out", "o", "", "output file (default stdout)")
	fs.StringVar(&to, "to", "", "republish into PREFIX.<subject> instead of writing (e.g. replay)")
	fs.StringVar(&replayStream, "replay-stream", audit.DefaultReplayStream, "stream that stores --to republished events")
	fs.BoolVarP(&quiet, "quiet", "q", false, "no progress bar")
	return cmd
}

type replayOptions struct {
	format, out, to, replayStream string
	stdout                        io.Writer
	progress                      bool
}

func replayStreamName(s string) string {
	if s == "" {
		return audit.DefaultReplayStream
	}
	return s
}

// runReplay opens the output and the progress bar around audit.Replay.
func runReplay(ctx context.Context, js jetstream.JetStream, sel audit.Selection, o replayOptions) (audit.Replayed, error) {
	cfg := audit.ReplayConfig{Format: o.format, Out: o.stdout, To: o.to, ReplayStream: o.replayStream}
	closeOut := func() error { return nil }
	if o.to == "" && o.out != "" {
		f, err := os.Create(o.out)
		if err != nil {
			return audit.Replayed{}, err
		}
		defer f.Close() // after the close below on success; harmless twice
		cfg.Out, closeOut = f, f.Close
	}
	var bar *progressbar.ProgressBar
	if o.progress {
		cfg.Start = func(pending uint64) {
			if pending > 0 {
				bar = progressbar.NewOptions64(int64(pending), progressbar.OptionSetWriter(os.Stderr),
					progressbar.OptionSetDescription("replay "+sel.Stream), progressbar.OptionShowCount(),
					progressbar.OptionShowIts(), progressbar.OptionSetItsString("events"), progressbar.OptionThrottle(100*time.Millisecond),
					progressbar.OptionClearOnFinish())
			}
		}
		cfg.Each = func() {
			if bar != nil {
				_ = bar.Add(1)
			}
		}
	}
	defer audit.TuneGC()()
	n, err := audit.Replay(ctx, js, sel, cfg)
	if bar != nil {
		_ = bar.Finish()
	}
	if cerr := closeOut(); err == nil {
		err = cerr
	}
	return n, err
}

// isTerminal reports whether f is a character device (a terminal).
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
