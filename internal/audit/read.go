package audit

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
)

// Record is one stored message as read back, undecoded: replay writes it
// without paying for a CloudEvents decode and schema validation per event.
type Record struct {
	Stream   string
	Subject  string
	Sequence uint64
	Stored   time.Time // when the server stored it
	Header   nats.Header
	Data     []byte
}

// Attr returns the CloudEvents attribute or extension name from the
// binary-mode headers ("ce-<name>"; "content-type" or
// "ce-datacontenttype" for datacontenttype).
func (r *Record) Attr(name string) string {
	if name == "datacontenttype" {
		if v := r.header(streams.HeaderContentType); v != "" {
			return v
		}
	}
	return r.header(streams.HeaderCEPrefix + name)
}

func (r *Record) header(key string) string {
	if v, ok := r.Header[key]; ok && len(v) > 0 {
		return v[0]
	}
	for k, v := range r.Header { // headers written by other clients may differ in case
		if len(v) > 0 && strings.EqualFold(k, key) {
			return v[0]
		}
	}
	return ""
}

// Type is the CloudEvents type ("" when the message is not a binary-mode event).
func (r *Record) Type() string { return r.Attr("type") }

// readPull is how many messages the ordered consumer asks for at once.
const readPull = 1000

// Read calls fn for each message of the selection in stream order through
// an ordered consumer (no durable state is left on the server). start, if
// not nil, is told first how many messages the consumer holds pending (an
// upper bound when tenant or conversation filter by header). The *Record
// passed to fn is reused for the next message: copy what you keep. It stops at the
// end of the range, when fn returns an error or when ctx ends.
func Read(ctx context.Context, js jetstream.JetStream, sel Selection, start func(pending uint64), fn func(*Record) error) error {
	if err := sel.Validate(); err != nil {
		return err
	}
	s, err := js.Stream(ctx, sel.Stream)
	if err != nil {
		return fmt.Errorf("read %s: %w", sel.Stream, err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		return fmt.Errorf("read %s: %w", sel.Stream, err)
	}
	last := info.State.LastSeq
	if sel.ToSeq > 0 {
		last = min(last, sel.ToSeq)
	}
	if info.State.Msgs == 0 || last < max(sel.FromSeq, info.State.FirstSeq) {
		if start != nil {
			start(0)
		}
		return nil
	}
	filters := sel.filters()
	byHeader := len(sel.Filters) == 0 && filters == nil && (sel.Tenant != "" || sel.Conversation != "")
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: filters, DeliverPolicy: jetstream.DeliverAllPolicy}
	switch {
	case sel.FromSeq > 0:
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, sel.FromSeq
	case !sel.Since.IsZero():
		t := sel.Since
		cfg.DeliverPolicy, cfg.OptStartTime = jetstream.DeliverByStartTimePolicy, &t
	}
	cons, err := js.OrderedConsumer(ctx, sel.Stream, cfg)
	if err != nil {
		return fmt.Errorf("read %s: %w", sel.Stream, err)
	}
	ci, err := cons.Info(ctx)
	if err != nil {
		return fmt.Errorf("read %s: %w", sel.Stream, err)
	}
	if start != nil {
		start(ci.NumPending)
	}
	if ci.NumPending == 0 {
		return nil
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(readPull))
	if err != nil {
		return fmt.Errorf("read %s: %w", sel.Stream, err)
	}
	defer it.Stop()
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-ctx.Done():
			it.Stop()
		case <-done:
		}
	}()
	rec := &Record{Stream: sel.Stream}
	for {
		msg, err := it.Next()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if errors.Is(err, jetstream.ErrMsgIteratorClosed) {
				return nil
			}
			return fmt.Errorf("read %s: %w", sel.Stream, err)
		}
		md, err := msg.Metadata()
		if err != nil {
			return fmt.Errorf("read %s: %w", sel.Stream, err)
		}
		seq := md.Sequence.Stream
		if seq > last || (!sel.Until.IsZero() && md.Timestamp.After(sel.Until)) {
			return nil
		}
		rec.Subject, rec.Sequence, rec.Stored, rec.Header, rec.Data = msg.Subject(), seq, md.Timestamp, msg.Headers(), msg.Data()
		if !byHeader || (matchHeader(rec, schemas.ExtTenant, sel.Tenant) && matchHeader(rec, schemas.ExtConversation, sel.Conversation)) {
			if err := fn(rec); err != nil {
				return err
			}
		}
		if md.NumPending == 0 || seq >= last {
			return nil
		}
	}
}

func matchHeader(r *Record, ext, want string) bool {
	return want == "" || r.Attr(ext) == want
}
