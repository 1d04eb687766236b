package agentworker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/reinception/rein/internal/llm"
	"github.com/reinception/rein/streams"
)

// record is one turn's part of a conversation's State, stored as JSON in
// the KV bucket REIN_CONVERSATIONS under <tenant>.<conv>.<turn>. A write
// therefore costs the size of one turn, however long the conversation.
type record struct {
	progress // the conversation as of this record
	// Messages are the turn's part of the internal context, its user
	// message first (none for a turn on the human path).
	Messages []llm.Message `json:"messages"`
	// Overlay is the backend's whole conversation state, present when it
	// differs from a new conversation's (the newest record holds the
	// current one).
	Overlay []byte `json:"overlay,omitempty"`
}

// store reads and writes State records. Writes carry an optimistic
// concurrency check over all of the conversation's keys (the stream's
// expected-last-sequence for the subject filter <tenant>.<conv>.*): a
// worker whose copy is stale — another replica wrote since it read — is
// refused instead of overwriting, and reloads.
type store struct {
	js     jetstream.JetStream
	stream jetstream.Stream // the bucket's stream
}

func openStore(ctx context.Context, js jetstream.JetStream) (store, error) {
	st, err := js.Stream(ctx, streams.StreamConversations)
	if err != nil {
		return store{}, fmt.Errorf("agentworker: KV %s: %w", streams.BucketConversations, err)
	}
	return store{js: js, stream: st}, nil
}

// LoadState reads a conversation's State from REIN_CONVERSATIONS; ok is
// false when it has none. Tools and tests use it; the stage keeps states
// in memory and reads them only on a miss.
func LoadState(ctx context.Context, js jetstream.JetStream, tenant, conv string) (s *State, ok bool, err error) {
	st, err := openStore(ctx, js)
	if err != nil {
		return nil, false, err
	}
	return st.load(ctx, tenant, conv)
}

// load assembles a State from the conversation's records, read with
// batched direct gets: a cache miss costs a round trip or two, never a
// consumer, and a conversation's turns are not limited in number.
func (st store) load(ctx context.Context, tenant, conv string) (*State, bool, error) {
	s := &State{progress: progress{Status: StatusActive}}
	filter := streams.ConversationStateSubject(streams.ConversationStateKeys(tenant, conv))
	// A plain direct get first: it answers a new conversation (the common
	// miss) on the connection's shared reply subscription, where the
	// batched get would set up a subscription of its own.
	if _, err := st.stream.GetLastMsgForSubject(ctx, filter); errors.Is(err, jetstream.ErrMsgNotFound) {
		return s, false, nil
	} else if err != nil {
		return nil, false, fmt.Errorf("agentworker: look up state %s: %w", filter, err)
	}
	// The bucket keeps one message per key (history 1), so reading the
	// filter returns exactly the current records, a page per round trip.
	var recs []record
	err := streams.ReadSubjectRaw(ctx, st.js, streams.StreamConversations, filter, 0, 0, func(m streams.Raw) error {
		s.seq = max(s.seq, m.Sequence)
		if op := nats.Header(m.Header).Get(kvOperation); op != "" {
			return nil // a deleted or purged key
		}
		var r record
		if err := json.Unmarshal(m.Data, &r); err != nil {
			return fmt.Errorf("%w: %s: %w", ErrBadState, m.Subject, err)
		}
		recs = append(recs, r)
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("agentworker: read state %s: %w", filter, err)
	}
	if len(recs) == 0 {
		return s, false, nil
	}
	s.assemble(recs)
	return s, true, nil
}

// kvOperation is the header NATS KV sets on delete and purge markers.
const kvOperation = "KV-Operation"

// assemble rebuilds the State from its records.
func (s *State) assemble(recs []record) {
	slices.SortFunc(recs, func(a, b record) int { return a.Turn - b.Turn })
	for i, r := range recs {
		msgs := r.Messages
		if !r.TurnDone && i < len(recs)-1 && len(msgs) > 1 {
			msgs = msgs[:1] // an earlier turn that never finished keeps only its user message
		}
		s.TurnStart = len(s.Messages)
		s.Messages = append(s.Messages, msgs...)
	}
	last := recs[len(recs)-1]
	s.progress, s.Overlay = last.progress, last.Overlay
}

// record is the current turn's record. fresh is the overlay of a new
// conversation, which is not stored.
func (s *State) record(overlay, fresh []byte) record {
	r := record{progress: s.progress, Messages: s.Messages[min(s.TurnStart, len(s.Messages)):]}
	if !bytes.Equal(overlay, fresh) {
		r.Overlay = overlay
	}
	return r
}

// save writes the current turn's record, refused when another writer has
// stored a record of the conversation since this copy was read.
func (st store) save(ctx context.Context, tenant, conv string, s *State, fresh []byte) error {
	ov, err := s.conv.State()
	if err != nil {
		return fmt.Errorf("agentworker: backend state: %w", err)
	}
	data, err := json.Marshal(s.record(ov, fresh))
	if err != nil {
		return fmt.Errorf("agentworker: encode state: %w", err)
	}
	subject := streams.ConversationStateSubject(streams.TurnStateKey(tenant, conv, s.Turn))
	all := streams.ConversationStateSubject(streams.ConversationStateKeys(tenant, conv))
	ack, err := st.publish(ctx, subject, data, jetstream.WithExpectLastSequenceForSubject(s.seq, all))
	if err != nil {
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence {
			return fmt.Errorf("%w: %s: %w", ErrStateConflict, all, err)
		}
		return fmt.Errorf("agentworker: write state %s: %w", subject, err)
	}
	s.seq, s.Overlay = ack.Sequence, ov
	return nil
}

// publish stores one record and waits for its acknowledgement. It goes
// through the connection's asynchronous publisher: a synchronous publish
// costs a request/reply round trip of its own (a reply subscription
// lookup and a channel per call), about three times the client CPU.
func (st store) publish(ctx context.Context, subject string, data []byte, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	f, err := st.js.PublishAsync(subject, data, opts...)
	if err != nil {
		return nil, err
	}
	select {
	case ack := <-f.Ok():
		return ack, nil
	case err := <-f.Err():
		return nil, err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
