package streams

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// ReadOptions select a range of one stream for ReadStream.
type ReadOptions struct {
	Filters  []string  // subject filters (empty: the whole stream)
	StartSeq uint64    // first sequence (0: from the start, or StartTime)
	StartAt  time.Time // first message time when StartSeq is 0
	// StopSeq stops before this sequence (0: read up to the stream's last
	// message at the time of the call).
	StopSeq uint64
	// Until stops at the first message stored after this time (zero: no limit).
	Until time.Time
	// MaxBytes is the decoder's size limit (default 256 KiB).
	MaxBytes int
}

// Raw is one stored message as read back, decoded when it could be.
type Raw struct {
	Stream   string
	Subject  string
	Sequence uint64
	Time     time.Time
	Header   map[string][]string
	Data     []byte
	// Decoded is the event (nil for messages that are not valid rein
	// events, such as dead letters of undecodable input).
	Decoded *Decoded
}

// ReadStream reads a stream range through an ordered consumer, which
// leaves no durable state on the server, calling fn for each message in
// sequence order. It stops at the end of the range, when fn returns an
// error, or when ctx ends.
func ReadStream(ctx context.Context, js jetstream.JetStream, stream string, o ReadOptions, fn func(Raw) error) error {
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return fmt.Errorf("read %s: %w", stream, err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		return fmt.Errorf("read %s: %w", stream, err)
	}
	last := info.State.LastSeq
	if o.StopSeq > 0 {
		last = min(last, o.StopSeq-1)
	}
	if info.State.Msgs == 0 || last < max(o.StartSeq, info.State.FirstSeq) {
		return nil
	}
	// A short inactivity threshold lets the server drop the ephemeral
	// consumer soon after the read, instead of after the 5-minute default.
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: o.Filters, DeliverPolicy: jetstream.DeliverAllPolicy, InactiveThreshold: 5 * time.Second}
	switch {
	case o.StartSeq > 0:
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, o.StartSeq
	case !o.StartAt.IsZero():
		t := o.StartAt
		cfg.DeliverPolicy, cfg.OptStartTime = jetstream.DeliverByStartTimePolicy, &t
	}
	cons, err := js.OrderedConsumer(ctx, stream, cfg)
	if err != nil {
		return fmt.Errorf("read %s: %w", stream, err)
	}
	ci, err := cons.Info(ctx)
	if err != nil {
		return fmt.Errorf("read %s: %w", stream, err)
	}
	if ci.NumPending == 0 {
		return nil
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(1000))
	if err != nil {
		return fmt.Errorf("read %s: %w", stream, err)
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
	for {
		msg, err := it.Next()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if errors.Is(err, jetstream.ErrMsgIteratorClosed) {
				return nil
			}
			return fmt.Errorf("read %s: %w", stream, err)
		}
		md, err := msg.Metadata()
		if err != nil {
			return fmt.Errorf("read %s: %w", stream, err)
		}
		if md.Sequence.Stream > last || (!o.Until.IsZero() && md.Timestamp.After(o.Until)) {
			return nil
		}
		r := Raw{Stream: stream, Subject: msg.Subject(), Sequence: md.Sequence.Stream, Time: md.Timestamp,
			Header: msg.Headers(), Data: msg.Data()}
		if d, err := Decode(msg.Subject(), msg.Headers(), msg.Data(), o.MaxBytes); err == nil {
			d.Sequence = md.Sequence.Stream
			r.Decoded = &d
		}
		if err := fn(r); err != nil {
			return err
		}
		if md.NumPending == 0 || md.Sequence.Stream >= last {
			return nil
		}
	}
}
