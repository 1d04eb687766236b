package audit

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/reinception/rein/schemas"
)

// TextWriter renders records as a readable transcript: a header whenever
// the conversation changes, then one line per event with its event time,
// stream sequence, turn and kind (USER, AGENT, DETECTION, TASK, STEP, …).
// Continuation lines of a multi-line text are indented.
type TextWriter struct {
	w       *bufio.Writer
	conv    string
	Written uint64
}

// NewTextWriter buffers the transcript to w. Flush when done.
func NewTextWriter(w io.Writer) *TextWriter { return &TextWriter{w: bufio.NewWriter(w)} }

// Write renders one record.
func (t *TextWriter) Write(r *Record) error {
	tenant, conv := r.Attr(schemas.ExtTenant), r.Attr(schemas.ExtConversation)
	typ, data := r.Type(), r.Data
	if typ == "" { // structured mode: take the attributes from the body
		var ev struct {
			Type, Time, Tenant, Conversation, Turn string
			Data                                   json.RawMessage
		}
		if json.Unmarshal(r.Data, &ev) == nil {
			typ, data, tenant, conv = ev.Type, ev.Data, ev.Tenant, ev.Conversation
		}
	}
	if key := tenant + "/" + conv; key != t.conv {
		if t.conv != "" {
			t.w.WriteByte('\n')
		}
		t.conv = key
		if tenant == "" && conv == "" {
			fmt.Fprintf(t.w, "== %s (no conversation)\n", r.Stream)
		} else {
			fmt.Fprintf(t.w, "== tenant %s, conversation %s\n", tenant, conv)
		}
	}
	kind, text := Summarize(typ, data)
	at := r.Stored
	if t, err := time.Parse(time.RFC3339Nano, r.Attr("time")); err == nil {
		at = t
	}
	when := at.UTC().Format(timeLayout)
	turn := r.Attr(schemas.ExtTurn)
	if turn == "" {
		turn = "-"
	}
	prefix := fmt.Sprintf("%s #%-6d turn %-3s %-11s ", when, r.Sequence, turn, kind)
	writeIndented(t.w, prefix, text)
	t.Written++
	return nil
}

// timeLayout is how transcripts and timelines print times (UTC, milliseconds).
const timeLayout = "2006-01-02T15:04:05.000Z"

// Flush writes out the buffer.
func (t *TextWriter) Flush() error { return t.w.Flush() }

func writeIndented(w *bufio.Writer, prefix, text string) {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	pad := strings.Repeat(" ", len([]rune(prefix)))
	for i, l := range lines {
		if i == 0 {
			w.WriteString(prefix)
		} else {
			w.WriteString(pad)
		}
		w.WriteString(l)
		w.WriteByte('\n')
	}
}
