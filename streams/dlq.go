package streams

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"

	"github.com/reinception/rein/schemas"
)

// PublishDeadLetter stores a dev.rein.deadletter.v1 event on
// rein.dlq.<stage> carrying the reason and the original message (subject,
// headers and body). Its id is derived from the source stream and sequence
// so that a redelivered poison message yields one dead letter, not many.
func PublishDeadLetter(ctx context.Context, p *Publisher, stage, stream string, seq uint64, attempts int, subject string, hdr nats.Header, data []byte, reason string) error {
	dl := schemas.DeadLetter{
		Stage: stage, Reason: reason, Subject: subject, Stream: stream,
		Sequence: seq, Attempts: attempts, Headers: hdr, Data: data,
	}
	raw, err := json.Marshal(dl)
	if err != nil {
		return fmt.Errorf("dead letter: %w", err)
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
	_, err = p.Publish(ctx, StreamDLQ, DLQSubject(stage), &ev)
	return err
}
