package audit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime/debug"

	"github.com/nats-io/nats.go/jetstream"
)

// Replay formats.
const (
	FormatJSONL = "jsonl"
	FormatText  = "text"
)

// ReplayConfig says where Replay writes a selection: Out in Format, or,
// when To is set, republished under To in ReplayStream.
type ReplayConfig struct {
	Format       string    // FormatJSONL (default) or FormatText
	Out          io.Writer // the jsonl or text output (unused with To)
	To           string    // republish prefix (CheckPrefix)
	ReplayStream string    // stream for To (DefaultReplayStream when empty)
	// Start, when set, is told first how many messages the read holds
	// pending; Each is called after each message is handed over. The
	// command draws its progress bar with them.
	Start func(pending uint64)
	Each  func()
}

// Validate checks the format and the republish prefix.
func (c ReplayConfig) Validate() error {
	switch c.Format {
	case "", FormatJSONL, FormatText:
	default:
		return fmt.Errorf("%w: --format %q: want jsonl or text", ErrBadOutput, c.Format)
	}
	if c.To != "" {
		return CheckPrefix(c.To)
	}
	if c.Out == nil {
		return fmt.Errorf("%w: no output", ErrBadOutput)
	}
	return nil
}

// ReplayHeapLimit is the soft heap limit TuneGC sets: four times the
// text format's grouping bound.
const ReplayHeapLimit = 4 * DefaultTextBuffer

// TuneGC sets the collector up for a replay and returns what restores
// it. A replay keeps little live, so GOGC 400 (fewer collections for more
// headroom) saves 15-25 % of its CPU (BenchmarkReplay); but text keeps up
// to DefaultTextBuffer of transcript, which that headroom alone would let
// grow to ≈ 800 MB of heap (BenchmarkTextHeap), so a soft limit of
// ReplayHeapLimit holds it, unless GOMEMLIMIT already sets one.
func TuneGC() (restore func()) {
	gc := debug.SetGCPercent(400)
	limit := debug.SetMemoryLimit(-1)
	if limit == math.MaxInt64 {
		debug.SetMemoryLimit(ReplayHeapLimit)
	}
	return func() {
		debug.SetGCPercent(gc)
		debug.SetMemoryLimit(limit)
	}
}

// Replayed counts what a replay did.
type Replayed struct {
	Written uint64 // events written or republished
	// Skipped are stored messages that are not CloudEvents (jsonl only):
	// left out of the output, counted so that the caller can say so.
	Skipped uint64
}

// replaySink is one destination of a replay.
type replaySink interface {
	Write(*Record) error
	flush(context.Context) error
	counts() Replayed
}

func (j *JSONLWriter) flush(context.Context) error { return j.Flush() }
func (j *JSONLWriter) counts() Replayed            { return Replayed{Written: j.Written, Skipped: j.Skipped} }
func (t *TextWriter) flush(context.Context) error  { return t.Flush() }
func (t *TextWriter) counts() Replayed             { return Replayed{Written: t.Written} }
func (p *Republisher) flush(ctx context.Context) error {
	return p.Flush(ctx)
}
func (p *Republisher) counts() Replayed { return Replayed{Written: p.Written} }

// Replay reads sel in stream order and writes it as cfg says. A message
// that is not an event never stops it: jsonl counts it in Skipped, text
// shows it raw, a republish copies it. What was written before an error
// is flushed and counted.
func Replay(ctx context.Context, js jetstream.JetStream, sel Selection, cfg ReplayConfig) (Replayed, error) {
	if err := cfg.Validate(); err != nil {
		return Replayed{}, err
	}
	var sink replaySink
	switch {
	case cfg.To != "":
		p, err := NewRepublisher(ctx, js, cfg.To, cfg.ReplayStream)
		if err != nil {
			return Replayed{}, err
		}
		sink = p
	case cfg.Format == FormatText:
		sink = NewTextWriter(cfg.Out)
	default:
		sink = NewJSONLWriter(cfg.Out)
	}
	fn := sink.Write
	if cfg.Each != nil {
		fn = func(r *Record) error {
			err := sink.Write(r)
			cfg.Each()
			return err
		}
	}
	err := Read(ctx, js, sel, cfg.Start, fn)
	if ferr := sink.flush(ctx); err == nil {
		err = ferr
	}
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		err = fmt.Errorf("stream %s: %w", sel.Stream, err)
	}
	return sink.counts(), err
}
