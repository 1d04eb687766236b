package audit

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/reinception/rein/schemas"
)

// TextWriter renders records as a readable transcript grouped by
// conversation: a header per conversation, in the order conversations first
// appear, then one line per event with its event time, stream sequence,
// turn and kind (USER, AGENT, DETECTION, TASK, STEP, …), in stream order.
// Continuation lines of a multi-line text are indented.
//
// Grouping holds the rendered transcript in memory until Flush, up to
// MaxBuffered bytes: past it the groups so far are written out, so a
// conversation of a very long replay may then get a second header.
type TextWriter struct {
	w     *bufio.Writer
	order []string                    // conversation keys, first appearance
	group map[string]*strings.Builder // rendered lines per conversation
	held  int                         // bytes held in group
	// wroteAny: a group was written, the next one starts with a blank line.
	wroteAny bool
	// MaxBuffered bounds the bytes held for grouping (DefaultTextBuffer
	// when zero).
	MaxBuffered int
	Written     uint64
	// prefix and line are reused for every event.
	prefix, line []byte
}

// DefaultTextBuffer is TextWriter's default grouping bound (64 MiB).
const DefaultTextBuffer = 64 << 20

// NewTextWriter renders a transcript to w. Flush when done.
func NewTextWriter(w io.Writer) *TextWriter {
	return &TextWriter{w: bufio.NewWriter(w), group: map[string]*strings.Builder{}}
}

// Write renders one record into its conversation's group.
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
	key := tenant + "/" + conv
	if tenant == "" && conv == "" {
		key = "\x00" + r.Stream // no conversation: one group per stream
	}
	g, ok := t.group[key]
	if !ok {
		g = &strings.Builder{}
		if tenant == "" && conv == "" {
			fmt.Fprintf(g, "== %s (no conversation)\n", r.Stream)
		} else {
			fmt.Fprintf(g, "== tenant %s, conversation %s\n", tenant, conv)
		}
		t.group[key] = g
		t.order = append(t.order, key)
	}
	kind, text := Summarize(typ, data)
	turn := r.Attr(schemas.ExtTurn)
	if turn == "" {
		turn = "-"
	}
	// The prefix fmt would render as "%s #%-6d turn %-3s %-11s ", built
	// in place: replay writes one per event.
	p := append(r.Time().UTC().AppendFormat(t.prefix[:0], timeLayout), " #"...)
	n := len(p)
	p = padRunes(strconv.AppendUint(p, r.Sequence, 10), n, 6)
	p = append(p, " turn "...)
	n = len(p)
	p = append(padRunes(append(p, turn...), n, 3), ' ')
	n = len(p)
	p = append(padRunes(append(p, kind...), n, 11), ' ')
	t.prefix = p
	t.line = t.line[:0]
	if steps, _, ok := batchSteps(data); typ == schemas.TypeSteps && ok {
		for _, s := range steps { // a line each, as the single steps read
			t.line = appendIndented(t.line, p, stepText(s))
		}
	} else {
		t.line = appendIndented(t.line, p, text)
	}
	g.Write(t.line)
	t.held += len(t.line)
	t.Written++
	limit := t.MaxBuffered
	if limit <= 0 {
		limit = DefaultTextBuffer
	}
	if t.held > limit {
		return t.writeGroups()
	}
	return nil
}

// writeGroups writes the groups held so far, each after a blank line but
// the first, and forgets them.
func (t *TextWriter) writeGroups() error {
	for _, key := range t.order {
		if t.wroteAny {
			t.w.WriteByte('\n')
		}
		t.w.WriteString(t.group[key].String())
		t.wroteAny = true
	}
	t.order, t.held = t.order[:0], 0
	clear(t.group)
	return nil
}

// timeLayout is how transcripts and timelines print times (UTC, milliseconds).
const timeLayout = "2006-01-02T15:04:05.000Z"

// Flush writes out the groups held and the buffer.
func (t *TextWriter) Flush() error {
	if err := t.writeGroups(); err != nil {
		return err
	}
	return t.w.Flush()
}

// padRunes pads the field b[start:] with spaces to width runes, as fmt's
// %-<width>s does.
func padRunes(b []byte, start, width int) []byte {
	for n := utf8.RuneCount(b[start:]); n < width; n++ {
		b = append(b, ' ')
	}
	return b
}

// appendIndented appends text after prefix, one line per line of text
// (trailing line breaks dropped), continuation lines indented by as many
// spaces as prefix has runes.
func appendIndented(dst, prefix []byte, text string) []byte {
	text = strings.TrimRight(text, "\n")
	dst = append(dst, prefix...)
	pad := -1
	for {
		line, rest, more := strings.Cut(text, "\n")
		dst = append(append(dst, line...), '\n')
		if !more {
			return dst
		}
		if pad < 0 {
			pad = utf8.RuneCount(prefix)
		}
		for range pad {
			dst = append(dst, ' ')
		}
		text = rest
	}
}
