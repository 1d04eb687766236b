package streams

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/synadia-io/orbit.go/jetstreamext"
)

// subjectPage is how many messages one batched direct get returns.
const subjectPage = 256

// ReadSubject reads the messages of one subject filter stored before stop
// (0: up to the last), in sequence order, with batched direct gets: no
// consumer is created, and a read costs one round trip per page of 256
// messages. It is for the short per-conversation reads of a stage's cache
// miss; long ranges use ReadStream.
func ReadSubject(ctx context.Context, js jetstream.JetStream, stream, filter string, stop uint64, fn func(Raw) error) error {
	for seq := uint64(1); ; {
		msgs, err := jetstreamext.GetBatch(ctx, js, stream, subjectPage, jetstreamext.GetBatchSeq(seq), jetstreamext.GetBatchSubject(filter))
		if err != nil {
			return fmt.Errorf("read %s %s: %w", stream, filter, err)
		}
		n := 0
		for m, err := range msgs {
			if errors.Is(err, jetstreamext.ErrNoMessages) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("read %s %s: %w", stream, filter, err)
			}
			if stop > 0 && m.Sequence >= stop {
				return nil
			}
			n++
			seq = m.Sequence + 1
			r := Raw{Stream: stream, Subject: m.Subject, Sequence: m.Sequence, Time: m.Time, Header: m.Header, Data: m.Data}
			if d, err := Decode(m.Subject, m.Header, m.Data, 0); err == nil {
				d.Sequence = m.Sequence
				r.Decoded = &d
			}
			if err := fn(r); err != nil {
				return err
			}
		}
		if n < subjectPage {
			return nil
		}
	}
}
