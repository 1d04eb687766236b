package streams

import (
	"cmp"
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
	r := Range{Stream: stream, Filters: o.Filters, FromSeq: o.StartSeq, Since: o.StartAt, Until: o.Until, Pull: 1000}
	if o.StopSeq > 0 {
		r.ToSeq = o.StopSeq - 1
		if r.ToSeq == 0 {
			return nil
		}
	}
	return ReadRange(ctx, js, r, nil, func(msg jetstream.Msg, md *jetstream.MsgMetadata) error {
		raw := Raw{Stream: stream, Subject: msg.Subject(), Sequence: md.Sequence.Stream, Time: md.Timestamp,
			Header: msg.Headers(), Data: msg.Data()}
		if d, err := Decode(msg.Subject(), msg.Headers(), msg.Data(), o.MaxBytes); err == nil {
			d.Sequence, d.Stored = md.Sequence.Stream, md.Timestamp
			raw.Decoded = &d
		}
		return fn(raw)
	})
}

// Range is a range of one stream for ReadRange.
type Range struct {
	Stream  string
	Filters []string  // subject filters (empty: the whole stream)
	FromSeq uint64    // first sequence (0: from the start, or Since)
	Since   time.Time // first message time when FromSeq is 0
	ToSeq   uint64    // last sequence, inclusive (0: the stream's last at the call)
	Until   time.Time // stop at the first message stored after this (zero: no limit)
	Pull    int       // messages per pull (default 1000)
}

// ReadRange is rein's one range reader (replay, audit, shadow, the
// dashboard, tests): an ordered consumer over r, fn called for each message
// in sequence order, until the end of the range, fn's error or ctx's end.
// start, when not nil, is told first how many messages the consumer holds
// pending. The ephemeral consumer is deleted when the read ends, however
// it ends (a short inactivity threshold is the backstop if the delete
// cannot reach the server), so reads leave nothing behind — not in `rein
// streams`, not in backups.
func ReadRange(ctx context.Context, js jetstream.JetStream, r Range, start func(pending uint64), fn func(jetstream.Msg, *jetstream.MsgMetadata) error) error {
	s, err := js.Stream(ctx, r.Stream)
	if err != nil {
		return fmt.Errorf("read %s: %w", r.Stream, err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		return fmt.Errorf("read %s: %w", r.Stream, err)
	}
	last := info.State.LastSeq
	if r.ToSeq > 0 {
		last = min(last, r.ToSeq)
	}
	if info.State.Msgs == 0 || last < max(r.FromSeq, info.State.FirstSeq) {
		if start != nil {
			start(0)
		}
		return nil
	}
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: r.Filters, DeliverPolicy: jetstream.DeliverAllPolicy, InactiveThreshold: readInactive}
	switch {
	case r.FromSeq > 0:
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, r.FromSeq
	case !r.Since.IsZero():
		t := r.Since
		cfg.DeliverPolicy, cfg.OptStartTime = jetstream.DeliverByStartTimePolicy, &t
	}
	cons, err := js.OrderedConsumer(ctx, r.Stream, cfg)
	if err != nil {
		return fmt.Errorf("read %s: %w", r.Stream, err)
	}
	defer deleteReader(js, r.Stream, cons)
	ci, err := cons.Info(ctx)
	if err != nil {
		return fmt.Errorf("read %s: %w", r.Stream, err)
	}
	if start != nil {
		start(ci.NumPending)
	}
	if ci.NumPending == 0 {
		return nil
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(cmp.Or(r.Pull, 1000)))
	if err != nil {
		return fmt.Errorf("read %s: %w", r.Stream, err)
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
			return fmt.Errorf("read %s: %w", r.Stream, err)
		}
		md, err := msg.Metadata()
		if err != nil {
			return fmt.Errorf("read %s: %w", r.Stream, err)
		}
		if md.Sequence.Stream > last || (!r.Until.IsZero() && md.Timestamp.After(r.Until)) {
			return nil
		}
		if err := fn(msg, md); err != nil {
			return err
		}
		if md.NumPending == 0 || md.Sequence.Stream >= last {
			return nil
		}
	}
}

// readInactive is the backstop: the server drops a reader's consumer this
// long after its last pull when the reader could not delete it.
const readInactive = 5 * time.Second

// deleteReader deletes the ordered consumer of a finished read (its
// current incarnation: an ordered consumer is recreated after a gap).
func deleteReader(js jetstream.JetStream, stream string, cons jetstream.Consumer) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if ci := cons.CachedInfo(); ci != nil && ci.Name != "" {
		_ = js.DeleteConsumer(ctx, stream, ci.Name)
	}
}
