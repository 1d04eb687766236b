package detector

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
)

// conversation is one conversation's surface context. Only the consume
// loop's worker that owns the conversation touches it.
type conversation struct {
	utter   []Utterance
	turns   []turnKey // parallel to utter: which turn and role each came from
	lastSeq uint64    // stream sequence of the newest turn applied
}

type turnKey struct {
	turn int
	role string
}

// add appends a turn unless it is already there (a redelivery), keeping
// the newest max utterances.
func (c *conversation) add(t schemas.Turn, seq uint64, max int) {
	k := turnKey{t.Turn, t.Role}
	if seq != 0 && seq <= c.lastSeq || slices.Contains(c.turns, k) {
		return
	}
	c.utter = append(c.utter, Utterance{Role: t.Role, Text: t.Text})
	c.turns = append(c.turns, k)
	if seq > c.lastSeq {
		c.lastSeq = seq
	}
	if n := len(c.utter) - max; n > 0 {
		c.utter = slices.Delete(c.utter, 0, n)
		c.turns = slices.Delete(c.turns, 0, n)
	}
}

// dialogue is the surface context up to and including the newest turn.
func (c *conversation) dialogue() []Utterance { return slices.Clone(c.utter) }

// conversation returns the surface context of d's conversation, rebuilding
// it from REIN_TURNS (the turns stored before d) when it is not in memory:
// after a restart, an eviction, or on a replica that just took over. The
// cost is bounded by the conversation's own length, never the stream's.
func (s *Stage) conversation(ctx context.Context, d streams.Decoded) (*conversation, error) {
	key := streams.ConversationKey(d.Meta.Tenant, d.Meta.Conversation)
	if c, ok := s.convs.Get(key); ok {
		return c, nil
	}
	c := &conversation{}
	if d.Sequence > 1 && s.hasEarlierTurns(ctx, d) {
		err := streams.ReadStream(ctx, s.deps.JS, streams.StreamTurns, streams.ReadOptions{
			Filters: []string{streams.ConversationTurns(d.Meta.Tenant, d.Meta.Conversation)},
			StopSeq: d.Sequence,
		}, func(r streams.Raw) error {
			if r.Decoded == nil {
				return nil
			}
			var t schemas.Turn
			if r.Decoded.Payload(&t) == nil {
				c.add(t, r.Sequence, s.cfg.HistoryTurns)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("detector: rebuild surface context: %w", err)
		}
	}
	s.convs.Put(key, c)
	return c, nil
}

// hasEarlierTurns asks the stream, with one direct get, whether the
// conversation has a turn stored before d, so that a conversation's first
// turn costs no rebuild. On error it answers yes (the rebuild then decides).
func (s *Stage) hasEarlierTurns(ctx context.Context, d streams.Decoded) bool {
	st, err := s.turnsStream(ctx)
	if err != nil {
		return true
	}
	m, err := st.GetMsg(ctx, 1, jetstream.WithGetMsgSubject(streams.ConversationTurns(d.Meta.Tenant, d.Meta.Conversation)))
	if err != nil {
		return !errors.Is(err, jetstream.ErrMsgNotFound)
	}
	return m.Sequence < d.Sequence
}

func (s *Stage) turnsStream(ctx context.Context) (jetstream.Stream, error) {
	s.streamMu.Lock()
	defer s.streamMu.Unlock()
	if s.stream != nil {
		return s.stream, nil
	}
	st, err := s.deps.JS.Stream(ctx, streams.StreamTurns)
	if err == nil {
		s.stream = st
	}
	return st, err
}
