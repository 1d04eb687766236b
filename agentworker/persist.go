package agentworker

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/reinception/rein/internal/llm"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
	"github.com/reinception/rein/streams/natsserver"
)

// record is one write of a conversation's State, stored as JSON in the KV
// bucket REIN_CONVERSATIONS under the conversation's key <tenant>.<conv>.
// The bucket keeps the key's last streams.ConversationHistory values: the
// records of the conversation in the order written. An ordinary record
// holds the part of the context of its turn only, so a write costs the
// size of one turn, however long the conversation; a later record of the
// same turn supersedes it. Every snapshotEvery records, one is a snapshot:
// the whole context, so that the newest snapshot and the records after it
// are always within the kept history. Keeping the records under one key
// keeps the server's subject index at one entry per conversation, where a
// key per turn cost one per turn (≈150 B of server memory each).
type record struct {
	at       time.Time // when it was stored (not part of the JSON)
	seq      uint64    // its stream sequence (not part of the JSON)
	progress           // the conversation as of this record
	// Messages are the turn's part of the internal context, its user
	// message first (on the human path, that message alone); in a snapshot,
	// the whole context, the turn's part starting at TurnStart.
	Messages  []llm.Message `json:"messages"`
	Snapshot  bool          `json:"snapshot,omitempty"`
	TurnStart int           `json:"turn_start,omitempty"`
	// Overlay is the backend's whole conversation state, present when it
	// differs from a new conversation's (the newest record holds the
	// current one).
	Overlay []byte `json:"overlay,omitempty"`
	// Prev is the sequence of the record this one continues: the newest
	// record stored when its turn began, or the snapshot written since in
	// its turn. A reader follows it back to a record holding the whole
	// context and decodes nothing else (chain). Whole marks an ordinary
	// record that holds it: one of a conversation's first turn. Records
	// stored before the two fields existed have neither.
	Prev  uint64 `json:"prev,omitempty"`
	Whole bool   `json:"whole,omitempty"`
}

// snapshotEvery is how many records may follow a snapshot (or the start of
// a conversation) before the next write is a snapshot: at most half the
// kept history, so a snapshot and its followers always fit.
//
// A conversation's records also expire one by one with the bucket's max
// age (kv_ttl): one active for longer than that would lose its oldest
// records and the context they held. So a write is a snapshot as well when
// the newest record holding the whole context (the last snapshot, or the
// conversation's first record) is older than half the max age.
const snapshotEvery = natsserver.ConversationHistory / 2

// store reads and writes State records. Writes carry an optimistic
// concurrency check on the conversation's key (the stream's expected last
// sequence for its subject): a worker whose copy is stale — another
// replica wrote since it read — is refused instead of overwriting, and
// reloads.
type store struct {
	js     jetstream.JetStream
	stream jetstream.Stream // the bucket's stream
	maxAge time.Duration    // the bucket's max age (0: records never expire)
	now    func() time.Time
	// ackWait bounds the wait for a record's acknowledgement (0:
	// streams.DefaultAckTimeout).
	ackWait time.Duration
}

func openStore(ctx context.Context, js jetstream.JetStream) (store, error) {
	st, err := js.Stream(ctx, bus.StreamConversations)
	if err != nil {
		return store{}, fmt.Errorf("agentworker: KV %s: %w", bus.BucketConversations, err)
	}
	return store{js: js, stream: st, maxAge: st.CachedInfo().Config.MaxAge, now: time.Now}, nil
}

// LoadState reads a conversation's State from REIN_CONVERSATIONS; ok is
// false when it has none. Tools and tests use it; the stage keeps states
// in memory and reads them only on a miss.
func LoadState(ctx context.Context, js jetstream.JetStream, tenant, conv string) (s *State, ok bool, err error) {
	st, err := openStore(ctx, js)
	if err != nil {
		return nil, false, err
	}
	return st.load(ctx, tenant, conv, 0)
}

// load assembles a State from the conversation's records, read with
// batched direct gets: a cache miss costs a round trip or two, never a
// consumer. turn is the turn about to be handled (0: unknown).
func (st store) load(ctx context.Context, tenant, conv string, turn int) (*State, bool, error) {
	s := &State{progress: progress{Status: StatusActive}}
	subject := bus.ConversationStateSubject(bus.ConversationKey(tenant, conv))
	// For a first turn, a plain direct get first: it answers a new
	// conversation (the common miss there) on the connection's shared reply
	// subscription, where the batched get would set up a subscription of
	// its own. A later turn's conversation has records to read.
	if turn <= 1 {
		if _, err := st.stream.GetLastMsgForSubject(ctx, subject); errors.Is(err, jetstream.ErrMsgNotFound) {
			return s, false, nil
		} else if err != nil {
			return nil, false, fmt.Errorf("agentworker: look up state %s: %w", subject, err)
		}
	}
	var raws []streams.Raw
	err := streams.ReadSubjectRaw(ctx, st.js, bus.StreamConversations, subject, 0, 0, func(m streams.Raw) error {
		raws = append(raws, m)
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("agentworker: read state %s: %w", subject, err)
	}
	s, found, err := fromRecords(raws)
	if err != nil {
		return nil, false, fmt.Errorf("agentworker: read state %s: %w", subject, err)
	}
	return s, found, nil
}

// fromRecords assembles a State from the messages stored under a
// conversation's key, in sequence order; found is false when they hold
// no record (none, or a delete marker last).
func fromRecords(raws []streams.Raw) (s *State, found bool, err error) {
	s = &State{progress: progress{Status: StatusActive}}
	for _, m := range raws {
		s.seq = max(s.seq, m.Sequence)
	}
	recs, follow, ok, err := chain(raws)
	if err == nil && !ok {
		recs, err = allRecords(raws)
	}
	if err != nil {
		return nil, false, err
	}
	if len(recs) == 0 {
		return s, false, nil
	}
	s.assemble(recs)
	if ok {
		// assemble saw only the chain: count and date the whole context
		// as every record would, or more cautiously (an earlier snapshot).
		s.records = follow
		if !recs[0].Snapshot {
			s.wholeAt = raws[0].Time
		}
	}
	return s, true, nil
}

// chain decodes only the records a conversation's context is built from:
// from the newest record back along Prev to the newest snapshot (or to the
// oldest record read), oldest first. Records superseded within their turn
// and those before the snapshot stay undecoded: a cache miss of a long
// conversation costs its turns, not its writes. follow is how many records
// were stored after the chain's first (State.records). ok is false when
// the records do not form such a chain — a delete marker, a record from a
// writer before Prev, a link to a record no longer kept — and the caller
// then decodes them all (allRecords), which gives the same State.
func chain(raws []streams.Raw) (recs []record, follow int, ok bool, err error) {
	if len(raws) == 0 {
		return nil, 0, false, nil
	}
	for _, m := range raws {
		if marker(m) {
			return nil, 0, false, nil
		}
	}
	for i := len(raws) - 1; ; {
		r, err := decodeRecord(raws[i])
		if err != nil {
			return nil, 0, false, err
		}
		recs = append(recs, r)
		if r.Snapshot {
			follow = len(raws) - 1 - i
			break
		}
		if r.Whole || r.Prev == 0 {
			// Without Prev only the oldest record read may start the
			// context unmarked (allRecords starts there too).
			if !r.Whole && i != 0 {
				return nil, 0, false, nil
			}
			// No fewer than allRecords would count: a late snapshot is
			// safe, a missed one is not.
			follow = len(raws)
			break
		}
		j, found := slices.BinarySearchFunc(raws[:i], r.Prev, func(m streams.Raw, seq uint64) int { return cmp.Compare(m.Sequence, seq) })
		if !found {
			return nil, 0, false, nil
		}
		i = j
	}
	slices.Reverse(recs)
	return recs, follow, true, nil
}

// allRecords decodes every record read, in the order written; a delete or
// purge marker drops what came before it.
func allRecords(raws []streams.Raw) ([]record, error) {
	var recs []record
	for _, m := range raws {
		if marker(m) {
			recs = recs[:0] // the key was deleted or purged: what came before is gone
			continue
		}
		r, err := decodeRecord(m)
		if err != nil {
			return nil, err
		}
		recs = append(recs, r)
	}
	return recs, nil
}

func decodeRecord(m streams.Raw) (record, error) {
	r := record{at: m.Time, seq: m.Sequence}
	if err := json.Unmarshal(m.Data, &r); err != nil {
		return record{}, fmt.Errorf("%w: %s: %w", ErrBadState, m.Subject, err)
	}
	return r, nil
}

// marker tells a delete or purge marker of the key from a record.
func marker(m streams.Raw) bool { return nats.Header(m.Header).Get(kvOperation) != "" }

// kvOperation is the header NATS KV sets on delete and purge markers.
const kvOperation = "KV-Operation"

// assemble rebuilds the State from its records, in the order written.
func (s *State) assemble(recs []record) {
	var done []llm.Message // the context of the turns before cur's
	cur := recs[0]
	s.records, s.wholeAt = 0, cur.at
	for i, r := range recs {
		if r.Snapshot {
			at := min(r.TurnStart, len(r.Messages))
			done = slices.Clone(r.Messages[:at])
			r.Messages = r.Messages[at:]
			s.records, s.wholeAt = 0, r.at
		} else {
			s.records++
			if i > 0 && r.Turn != cur.Turn {
				done = append(done, closed(cur)...)
			} // else r supersedes cur, a record of the same turn
		}
		cur = r
	}
	s.TurnStart = len(done)
	s.Messages = append(done, cur.Messages...)
	s.sized, s.sizedBytes = 0, 0
	s.progress, s.Overlay = cur.progress, cur.Overlay
	// The turn's next record continues what the newest continued (or the
	// newest itself, a snapshot).
	s.base = cur.Prev
	if cur.Snapshot {
		s.base = cur.seq
	}
}

// closed is the part of a finished-with turn that stays in the context: an
// earlier turn that never finished (its task was dead-lettered) keeps only
// its user message, so the context holds no call without a result.
func closed(r record) []llm.Message {
	if !r.TurnDone && len(r.Messages) > 1 {
		return r.Messages[:1]
	}
	return r.Messages
}

// record is the record to write now: the current turn's part, or the whole
// context when snapshotEvery records have followed the last snapshot or
// aged says the newest whole context is getting old. fresh is the overlay
// of a new conversation, which is not stored.
func (s *State) record(overlay, fresh []byte, aged bool) record {
	r := record{progress: s.progress, Messages: s.Messages[min(s.TurnStart, len(s.Messages)):], Prev: s.base}
	switch {
	case s.records >= snapshotEvery || aged:
		r.Messages, r.Snapshot, r.TurnStart, r.Prev = s.Messages, true, s.TurnStart, 0
	case s.TurnStart == 0:
		r.Whole = true // the first turn's part is the whole context
	}
	if !bytes.Equal(overlay, fresh) {
		r.Overlay = overlay
	}
	return r
}

// save appends the current turn's record, refused when another writer has
// stored a record of the conversation since this copy was read.
func (st store) save(ctx context.Context, tenant, conv string, s *State, fresh []byte) error {
	ov, err := s.conv.State()
	if err != nil {
		return fmt.Errorf("agentworker: backend state: %w", err)
	}
	now := st.now()
	aged := s.seq != 0 && st.maxAge > 0 && now.Sub(s.wholeAt) > st.maxAge/2
	rec := s.record(ov, fresh, aged)
	buf := recordBufs.Get().(*bytes.Buffer)
	buf.Reset()
	// The bytes json.Marshal would give, written into a reused buffer;
	// Encode ends them with a newline, left out.
	if err := json.NewEncoder(buf).Encode(rec); err != nil {
		return fmt.Errorf("agentworker: encode state: %w", err)
	}
	data := buf.Bytes()[:buf.Len()-1]
	subject := bus.ConversationStateSubject(bus.ConversationKey(tenant, conv))
	ack, err := st.publish(ctx, subject, data, jetstream.WithExpectLastSequencePerSubject(s.seq))
	if err == nil && buf.Cap() <= maxPooledRecord {
		// Acknowledged: the publisher holds the bytes no longer (until
		// then it may send them again).
		recordBufs.Put(buf)
	}
	if err != nil {
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence {
			return fmt.Errorf("%w: %s: %w", ErrStateConflict, subject, err)
		}
		return fmt.Errorf("agentworker: write state %s: %w", subject, err)
	}
	s.stored(rec, ack.Sequence, ov, now)
	return nil
}

// stored brings the State's bookkeeping up to date once rec, the record of
// its overlay ov, is stored at sequence seq.
func (s *State) stored(rec record, seq uint64, ov []byte, now time.Time) {
	if rec.Snapshot || s.seq == 0 { // a conversation's first record holds its whole context
		s.wholeAt = now
	}
	s.seq, s.Overlay, s.unsaved = seq, ov, false
	if rec.Snapshot {
		s.records, s.base = 0, seq
	} else {
		s.records++
	}
}

// recordBufs holds the buffers records are encoded into: a write costs
// no new buffer of the record's size.
var recordBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledRecord is the largest buffer kept for reuse: a rare snapshot
// of a long conversation does not stay held.
const maxPooledRecord = 256 << 10

// publish stores one record and waits for its acknowledgement, at most
// streams.DefaultAckTimeout: the handler's context has no deadline, and an
// acknowledgement lost in a leader change would otherwise hold the turn —
// and its conversation — for ever (the cluster chaos test's stuck task).
// It goes through the connection's asynchronous publisher: a synchronous
// publish costs a request/reply round trip of its own (a reply
// subscription lookup and a channel per call), about three times the
// client CPU.
func (st store) publish(ctx context.Context, subject string, data []byte, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	f, err := st.js.PublishAsync(subject, data, opts...)
	if err != nil {
		return nil, err
	}
	bound := streams.AckTimer(st.ackTimeout())
	defer streams.ReleaseAckTimer(bound)
	select {
	case ack := <-f.Ok():
		return ack, nil
	case err := <-f.Err():
		return nil, err
	case <-bound.C:
		return nil, fmt.Errorf("%w: no acknowledgement within %s", jetstream.ErrAsyncPublishTimeout, st.ackTimeout())
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// ackTimeout bounds the wait for one record's acknowledgement.
func (st store) ackTimeout() time.Duration { return cmp.Or(st.ackWait, streams.DefaultAckTimeout) }
