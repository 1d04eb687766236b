package audit

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
)

// TimelineStreams are the streams a conversation's timeline is read from,
// in pipeline order (which breaks ties between equal event times).
// REIN_HANDOFF is left out: it is a work queue (an extra consumer would
// compete with the handoff claimers) and its items repeat escalations.
var TimelineStreams = []string{
	bus.StreamTurns, bus.StreamDetections, bus.StreamTasks, bus.StreamSteps,
	bus.StreamOutcomes, bus.StreamDLQ, bus.StreamFeedback, bus.StreamLabels,
}

// Entry is one event of a conversation's timeline.
type Entry struct {
	Time     time.Time       `json:"time"`
	Stream   string          `json:"stream"`
	Sequence uint64          `json:"seq"`
	Subject  string          `json:"subject"`
	Type     string          `json:"type"`
	ID       string          `json:"id"`
	Turn     int             `json:"turn"`
	Kind     string          `json:"kind"`
	Text     string          `json:"text"`
	Data     json.RawMessage `json:"data,omitempty"`
	// After names, for a task, step, escalation or report, the detection
	// of the same turn that preceded it (its id), so every agent action
	// shows which decision and plan came before it.
	After string `json:"after_detection,omitempty"`
	rank  int
}

// Timeline reads every stream in TimelineStreams for one conversation and
// merges the events in time order (the event's time attribute, else the
// stored time), then pipeline order, then stream sequence. Streams that do
// not exist are skipped.
func Timeline(ctx context.Context, js jetstream.JetStream, tenant, conv string) ([]Entry, error) {
	if err := schemas.CheckIDs(tenant, conv); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadSelection, err)
	}
	var out []Entry
	for rank, name := range TimelineStreams {
		err := Read(ctx, js, Selection{Stream: name, Tenant: tenant, Conversation: conv}, nil, func(r *Record) error {
			out = appendEntries(out, r, rank)
			return nil
		})
		if err != nil {
			if streams.IsNotFound(err) {
				continue
			}
			return nil, err
		}
	}
	slices.SortStableFunc(out, func(a, b Entry) int {
		if c := a.Time.Compare(b.Time); c != 0 {
			return c
		}
		if a.rank != b.rank {
			return a.rank - b.rank
		}
		return int(a.Sequence) - int(b.Sequence)
	})
	linkDetections(out)
	return out, nil
}

// appendEntries appends r's entry: one, or for a dev.rein.steps.v1 the
// entries of the single steps it stands for (their ids and data, its
// stream sequence and time).
func appendEntries(out []Entry, r *Record, rank int) []Entry {
	e := entryOf(r, rank)
	steps, raw, ok := batchSteps(r.Data)
	if e.Type != schemas.TypeSteps || !ok {
		return append(out, e)
	}
	tenant, conv := r.Attr(schemas.ExtTenant), r.Attr(schemas.ExtConversation)
	for i, s := range steps {
		one := e
		one.Type, one.ID, one.Kind, one.Text, one.Data = schemas.TypeStep, schemas.StepEventID(tenant, conv, s.Turn, s.Step), KindStep, stepText(s), raw[i]
		out = append(out, one)
	}
	return out
}

func entryOf(r *Record, rank int) Entry {
	e := Entry{Stream: r.Stream, Sequence: r.Sequence, Subject: r.Subject, Type: r.Type(), ID: r.Attr("id"), rank: rank,
		Time: r.Time().UTC(), Data: json.RawMessage(r.Data)}
	e.Turn, _ = strconv.Atoi(r.Attr(schemas.ExtTurn))
	e.Kind, e.Text = Summarize(e.Type, r.Data)
	if !json.Valid(r.Data) {
		e.Data = nil
	}
	return e
}

// linkDetections sets After on every agent-side entry to the latest
// detection of its turn seen before it.
func linkDetections(es []Entry) {
	last := map[int]string{}
	for i := range es {
		switch es[i].Type {
		case schemas.TypeDetection:
			last[es[i].Turn] = es[i].ID
		case schemas.TypeTask, schemas.TypeStep, schemas.TypeEscalation, schemas.TypeReport:
			es[i].After = last[es[i].Turn]
		}
	}
}

// WriteTimeline renders a timeline as text: one line per event with time,
// stream and sequence, turn, kind and summary; agent actions name the
// detection they followed.
func WriteTimeline(w io.Writer, tenant, conv string, es []Entry) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "== tenant %s, conversation %s: %d events\n", tenant, conv, len(es))
	var p, line []byte
	for _, e := range es {
		text := e.Text
		if e.After != "" && e.Type != schemas.TypeStep {
			text += "  (after " + e.After + ")"
		}
		// "%s %-18s turn %-3d %-11s ", as TextWriter builds its prefix.
		p = append(e.Time.AppendFormat(p[:0], timeLayout), ' ')
		n := len(p)
		p = padRunes(strconv.AppendUint(append(append(p, e.Stream...), '#'), e.Sequence, 10), n, 18)
		p = append(p, " turn "...)
		n = len(p)
		p = append(padRunes(strconv.AppendInt(p, int64(e.Turn), 10), n, 3), ' ')
		n = len(p)
		p = append(padRunes(append(p, e.Kind...), n, 11), ' ')
		line = appendIndented(line[:0], p, text)
		bw.Write(line)
	}
	return bw.Flush()
}
