package streams

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams/bus"
)

// Bounds of a truncated dead letter (see boundedLetter).
const (
	// DeadLetterPrefixBytes is how much of an oversize body a dead letter
	// keeps.
	DeadLetterPrefixBytes = 16 << 10
	// deadLetterHeaderBytes bounds the original headers it keeps (names
	// and values), deadLetterValueBytes each value, deadLetterReasonBytes
	// the reason.
	deadLetterHeaderBytes = 8 << 10
	deadLetterValueBytes  = 1 << 10
	deadLetterReasonBytes = 4 << 10
	// deadLetterMaxBytes is the largest dead letter body stored whole: the
	// stream's limit less room for the event's own headers.
	deadLetterMaxBytes = MaxMessageBytes - 16<<10
)

// PublishDeadLetter stores a dev.rein.deadletter.v1 event on
// rein.dlq.<stage> carrying the reason and the original message (subject,
// headers and body). Its id is derived from the source stream and sequence
// so that a redelivered poison message yields one dead letter, not many.
// An original that no stage could take again (a body over
// DefaultMaxEventBytes) or whose dead letter would not fit the stream is
// kept bounded: the body's first DeadLetterPrefixBytes, its size and
// SHA-256, and headers and reason cut to a few KiB (boundedLetter).
func PublishDeadLetter(ctx context.Context, p *Publisher, stage, stream string, seq uint64, attempts int, subject string, hdr nats.Header, data []byte, reason string) error {
	dl := schemas.DeadLetter{
		Stage: stage, Reason: reason, Subject: subject, Stream: stream,
		Sequence: seq, Attempts: attempts, Headers: hdr, Data: data,
	}
	var raw []byte
	var err error
	if len(data) <= DefaultMaxEventBytes {
		if raw, err = json.Marshal(dl); err != nil {
			return fmt.Errorf("dead letter: %w", err)
		}
	}
	if raw == nil || len(raw) > deadLetterMaxBytes {
		if raw, err = json.Marshal(boundedLetter(dl)); err != nil {
			return fmt.Errorf("dead letter: %w", err)
		}
	}
	id := "dlq-" + stage + "-" + stream + "-" + strconv.FormatUint(seq, 10)
	if seq == 0 {
		id = "dlq-" + stage + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	}
	ev := event.New()
	ev.SetID(id)
	ev.SetType(schemas.TypeDeadLetter)
	ev.SetSource(schemas.Source)
	ev.SetTime(time.Now().UTC())
	// Keep tenant and conversation when the subject carries valid ones, so
	// that audit can place the dead letter in its conversation.
	if t, c, ok := SubjectIDs(subject); ok && schemas.CheckIDs(t, c) == nil {
		ev.SetSubject(c)
		ev.SetExtension(schemas.ExtTenant, t)
		ev.SetExtension(schemas.ExtConversation, c)
	}
	if err := ev.SetData(schemas.DataContentType, json.RawMessage(raw)); err != nil {
		return fmt.Errorf("dead letter: %w", err)
	}
	_, err = p.Publish(ctx, bus.StreamDLQ, bus.DLQSubject(stage), &ev)
	return err
}

// boundedLetter is dl cut to a bounded size, whatever the original: the
// body's first DeadLetterPrefixBytes with its whole size and SHA-256, the
// headers (in name order) while they fit deadLetterHeaderBytes, each value
// cut to deadLetterValueBytes, and the reason cut to deadLetterReasonBytes.
// JSON escaping at most sextuples what is kept, so the letter stays far
// below MaxMessageBytes.
func boundedLetter(dl schemas.DeadLetter) schemas.DeadLetter {
	sum := sha256.Sum256(dl.Data)
	dl.Truncated, dl.Size, dl.SHA256 = true, int64(len(dl.Data)), hex.EncodeToString(sum[:])
	dl.Data = dl.Data[:min(len(dl.Data), DeadLetterPrefixBytes)]
	dl.Reason = cut(dl.Reason, deadLetterReasonBytes)
	if len(dl.Headers) > 0 {
		kept, budget := map[string][]string{}, deadLetterHeaderBytes
	headers:
		for _, name := range slices.Sorted(maps.Keys(dl.Headers)) {
			for _, v := range dl.Headers[name] {
				v = cut(v, deadLetterValueBytes)
				if budget -= len(name) + len(v); budget < 0 {
					break headers
				}
				kept[name] = append(kept[name], v)
			}
		}
		dl.Headers = kept
	}
	return dl
}

// cut is s's first n bytes, not splitting a UTF-8 sequence.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
