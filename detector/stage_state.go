package detector

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/reinception/rein/inception"
	"github.com/reinception/rein/internal/experiment"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
)

// conversation is one conversation's surface context, oldest first by
// stream sequence. User turns are added as the stage consumes them; agent
// replies are merged from the stream only when a user turn's module needs
// them (refresh), so the context may lag behind on agent replies: every
// agent reply with a sequence up to agentSeq is in it. Only the consume
// loop's worker that owns the conversation touches it.
type conversation struct {
	utter    []inception.Utterance
	turns    []turnKey // parallel to utter: which turn and role each came from
	seqs     []uint64  // parallel to utter: stream sequence (0: unknown)
	userSeq  uint64    // stream sequence of the newest user turn applied
	agentSeq uint64    // agent replies up to this sequence are merged
	// judged is the newest user turn whose detection this worker stored
	// (0 for a context rebuilt from the stream).
	judged int
	// pending is a decision whose outputs are not all stored yet (turn 0:
	// none).
	pending pendingDetection
	// arm is the conversation's experiment arm, read from its stored
	// detections once (armRead) and then kept (experiment.go).
	arm     experiment.Assignment
	armRead bool
	// planted is the newest turn at which this worker planted a thought,
	// or held one back as a repeat, and its error type (turn 0: none; a
	// context rebuilt from the stream starts with none).
	planted planted
}

// planted is a stored activation: the turn and the error type planted.
type planted struct {
	turn      int
	errorType string
	// control: the arm held it back; only a later control turn (judged
	// as if planted) counts it as a repeat.
	control bool
}

// repeats reports whether an activation of errorType at turn repeats the
// one planted at the turn before: the agent has answered that turn with
// the plan in its context, so planting it again only repeats it.
func (p planted) repeats(turn int, errorType string) bool {
	return p.turn != 0 && p.turn == turn-1 && p.errorType == errorType
}

type pendingDetection struct {
	turn int
	det  schemas.Detection
}

// undelivered is the decision taken for turn by an earlier attempt whose
// publish failed.
func (c *conversation) undelivered(turn int) (schemas.Detection, bool) {
	if c.pending.turn == 0 || c.pending.turn != turn {
		return schemas.Detection{}, false
	}
	return c.pending.det, true
}

type turnKey struct {
	turn int
	role string
}

// DefaultCacheBytes is the detector's default budget of cached
// conversations (Config.MaxCacheBytes).
const DefaultCacheBytes = 32 << 20

// Fixed costs of a cached conversation and of each utterance in it (its
// turn key and sequence beside the text), measured roughly.
const (
	conversationOverhead = 512
	utteranceOverhead    = 64
)

// memBytes estimates what c holds in memory: its utterances' text plus
// fixed costs.
func (c *conversation) memBytes() int {
	n := conversationOverhead
	for _, u := range c.utter {
		n += utteranceOverhead + len(u.Role) + len(u.Text)
	}
	return n
}

// add inserts a turn in sequence order unless it is already there (a
// redelivery, or a turn at or below its role's watermark), keeping the
// newest max utterances. A turn without a sequence goes last.
func (c *conversation) add(t schemas.Turn, seq uint64, max int) {
	k := turnKey{t.Turn, t.Role}
	if slices.Contains(c.turns, k) {
		return
	}
	if seq != 0 {
		mark := &c.userSeq
		if t.Role == schemas.RoleAgent {
			mark = &c.agentSeq
		}
		if seq <= *mark {
			return
		}
		*mark = seq
	}
	i := len(c.seqs)
	for seq != 0 && i > 0 && c.seqs[i-1] > seq {
		i--
	}
	c.utter = slices.Insert(c.utter, i, inception.Utterance{Role: t.Role, Text: t.Text})
	c.turns = slices.Insert(c.turns, i, k)
	c.seqs = slices.Insert(c.seqs, i, seq)
	if n := len(c.utter) - max; n > 0 {
		c.utter = slices.Delete(c.utter, 0, n)
		c.turns = slices.Delete(c.turns, 0, n)
		c.seqs = slices.Delete(c.seqs, 0, n)
	}
}

// sentBefore tells whether the context holds a user turn of this number
// stored at another stream sequence than seq: an earlier copy of the turn
// (a conversation's user turns are consumed in stream order). A retry of
// the same message keeps its sequence; a turn older than the context's
// HistoryTurns is not known.
func (c *conversation) sentBefore(turn int, seq uint64) bool {
	for i, k := range c.turns {
		if k.turn == turn && k.role == schemas.RoleUser && c.seqs[i] != 0 && c.seqs[i] != seq {
			return true
		}
	}
	return false
}

// userText is the text of the context's copy of a user turn.
func (c *conversation) userText(turn int) (string, bool) {
	for i, k := range c.turns {
		if k.turn == turn && k.role == schemas.RoleUser {
			return c.utter[i].Text, true
		}
	}
	return "", false
}

// conflict is the error of a user turn stored again as a new message with
// other text than its first copy: the second is dead-lettered with reason
// conflicting_duplicate, never judged or dropped silently.
func (c *conversation) conflict(t schemas.Turn) error {
	if first, ok := c.userText(t.Turn); ok && first != t.Text {
		return streams.Permanent(fmt.Errorf("%s: user turn %d was stored before with other text (a platform sent two different turns under one number)",
			streams.ReasonConflictingDuplicate, t.Turn))
	}
	return nil
}

// dialogue is the surface context as far as merged.
func (c *conversation) dialogue() []inception.Utterance { return slices.Clone(c.utter) }

// conversation returns the surface context of d's conversation, rebuilding
// it from REIN_TURNS (the user and agent turns stored before d) when it is
// not in memory: after a restart, an eviction, or on a replica that just
// took over. The turns are read with batched direct gets (no consumer), so
// the cost is bounded by the conversation's own length, never the
// stream's; a conversation's first turn costs one direct get.
func (s *Stage) conversation(ctx context.Context, d streams.Decoded) (*conversation, error) {
	key := bus.ConversationKey(d.Meta.Tenant, d.Meta.Conversation)
	if c, ok := s.convs.Get(key); ok {
		return c, nil
	}
	c := &conversation{}
	// A first turn asks the stream whether anything came before it (a
	// greeting); a later turn has earlier ones, so it reads them at once.
	if d.Sequence > 1 && (d.Meta.Turn > 1 || s.hasEarlierTurns(ctx, d)) {
		st, err := s.stream(ctx, bus.StreamTurns)
		if err == nil {
			err = streams.ReadConversationTurns(ctx, s.deps.JS, st, d.Meta.Tenant, d.Meta.Conversation, d.Sequence, func(r streams.Raw) error {
				var t schemas.Turn
				if r.Decoded != nil && r.Decoded.Payload(&t) == nil {
					c.add(t, r.Sequence, s.cfg.HistoryTurns)
				}
				return nil
			})
		}
		if err != nil {
			return nil, fmt.Errorf("detector: rebuild surface context: %w", err)
		}
	}
	if d.Sequence > 0 {
		c.agentSeq = d.Sequence - 1 // everything stored before d is in
	}
	s.convs.Put(key, c)
	return c, nil
}

// refresh merges the conversation's agent replies stored after agentSeq and
// before the sequence before, read with streams.ReadSubject (batched direct
// gets). An undecodable reply is logged and skipped; a failed read is
// returned (the turn is retried) with the replies merged so far kept.
func (s *Stage) refresh(ctx context.Context, c *conversation, meta schemas.Meta, before uint64) error {
	if c.agentSeq+1 >= before {
		return nil
	}
	s.m.fetches.Inc()
	st, err := s.stream(ctx, bus.StreamTurns)
	if err != nil {
		return fmt.Errorf("detector: merge agent replies: %w", err)
	}
	subj := streams.StoredSubject(st, bus.TurnSubject(meta.Tenant, meta.Conversation, schemas.RoleAgent))
	err = streams.ReadSubject(ctx, s.deps.JS, bus.StreamTurns, subj, c.agentSeq+1, before, func(r streams.Raw) error {
		if t, err := agentTurn(r); err != nil {
			s.deps.Logger.Warn("agent reply left out of the surface context", "tenant", meta.Tenant, "seq", r.Sequence, "err", err)
		} else {
			c.add(t, r.Sequence, s.cfg.HistoryTurns)
		}
		c.agentSeq = max(c.agentSeq, r.Sequence)
		return nil
	})
	if err != nil {
		return fmt.Errorf("detector: merge agent replies: %w", err)
	}
	c.agentSeq = before - 1
	return nil
}

// agentTurn is the agent reply a message read back from REIN_TURNS holds.
func agentTurn(r streams.Raw) (schemas.Turn, error) {
	var t schemas.Turn
	if r.Decoded == nil {
		return t, fmt.Errorf("%w: not a valid rein event", streams.ErrUndecodable)
	}
	if typ := r.Decoded.Event.Type(); typ != schemas.TypeTurn {
		return t, fmt.Errorf("%w: event type %q", streams.ErrUndecodable, typ)
	}
	if err := r.Decoded.Payload(&t); err != nil {
		return t, err
	}
	if t.Role != schemas.RoleAgent {
		return t, fmt.Errorf("%w: a %s turn on subject %s", streams.ErrUndecodable, t.Role, r.Subject)
	}
	if t.Turn == 0 {
		t.Turn = r.Decoded.Meta.Turn
	}
	return t, nil
}

// hasEarlierTurns asks the stream, with one direct get, whether the
// conversation has a turn stored before d, so that a conversation's first
// turn costs no rebuild. The get leaves headers out (streams.FirstData),
// so the answer is a payload without a sequence: the conversation's first
// stored message is d itself when it carries d's payload (a turn's
// payload names its turn and role); any other first message was stored
// before d. On error it answers yes (the rebuild then decides).
func (s *Stage) hasEarlierTurns(ctx context.Context, d streams.Decoded) bool {
	first, ok, err := streams.FirstData(ctx, s.deps.JS, bus.StreamTurns, bus.ConversationTurns(d.Meta.Tenant, d.Meta.Conversation), 1)
	if err != nil {
		return true
	}
	return ok && !(len(first) > 0 && bytes.Equal(first, d.Event.Data()))
}

// stream is the named stream, looked up once.
func (s *Stage) stream(ctx context.Context, name string) (jetstream.Stream, error) {
	s.streamMu.Lock()
	defer s.streamMu.Unlock()
	if st, ok := s.streams[name]; ok {
		return st, nil
	}
	st, err := s.deps.JS.Stream(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("detector: stream %s: %w", name, err)
	}
	if s.streams == nil {
		s.streams = map[string]jetstream.Stream{}
	}
	s.streams[name] = st
	return st, nil
}

// errFound stops a read once it has found what it looked for.
var errFound = errors.New("found")

// detectionStored reads the conversation's detections (batched direct gets;
// asked only for a turn sent again) for one of this turn.
func (s *Stage) detectionStored(ctx context.Context, tenant, conv string, turn int) (bool, error) {
	dets, err := s.stream(ctx, bus.StreamDetections)
	if err != nil {
		return false, err
	}
	err = streams.ReadSubject(ctx, s.deps.JS, bus.StreamDetections, streams.StoredSubject(dets, bus.DetectionSubject(tenant, conv)), 0, 0, func(r streams.Raw) error {
		if r.Decoded != nil && r.Decoded.Meta.Turn == turn {
			return errFound
		}
		return nil
	})
	if errors.Is(err, errFound) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("detector: read detections: %w", err)
	}
	return false, nil
}

// userTurn is the number of the user turn d holds; ok is false for
// anything else (the handler rejects or skips it).
func userTurn(d streams.Decoded) (n int, ok bool) {
	var turn schemas.Turn
	if d.Event.Type() != schemas.TypeTurn || d.Payload(&turn) != nil || turn.Role != schemas.RoleUser {
		return 0, false
	}
	n = cmp.Or(turn.Turn, d.Meta.Turn)
	return n, n >= 1
}

// stored is the stage's answer to the consume loop (ConsumerConfig.Stored):
// what of a user turn's outputs is stored, each read with
// streams.TurnStored (the conversation's last, and only when that is of a
// later turn, the turn's own). Its detection and its task make all; its
// detection alone, some: the handler hands the stored decision on as the
// task. A turn stored elsewhere may be missing from the cached surface
// context, which is then read anew.
func (s *Stage) stored(ctx context.Context, out streams.OutputStreams, d streams.Decoded) (streams.Stored, error) {
	turn, ok := userTurn(d)
	if !ok {
		return streams.StoredNone, nil
	}
	tenant, conv := d.Meta.Tenant, d.Meta.Conversation
	_, found, err := streams.TurnStored(ctx, s.deps.JS, out[bus.StreamDetections], bus.DetectionSubject(tenant, conv), turn, d.Stored)
	if err != nil || !found {
		return streams.StoredNone, err
	}
	s.convs.Drop(bus.ConversationKey(tenant, conv))
	_, found, err = streams.TurnStored(ctx, s.deps.JS, out[bus.StreamTasks], bus.TaskSubject(tenant, conv), turn, d.Stored)
	switch {
	case err != nil:
		return streams.StoredNone, err
	case found:
		return streams.StoredAll, nil
	}
	return streams.StoredSome, nil
}

// storedDetection is the turn's stored detection and its event id; ok is
// false when it is not at hand (aged out: the turn is judged again).
func (s *Stage) storedDetection(ctx context.Context, meta schemas.Meta) (det schemas.Detection, id string, ok bool, err error) {
	dets, err := s.stream(ctx, bus.StreamDetections)
	if err != nil {
		return det, "", false, err
	}
	own, found, err := streams.TurnStored(ctx, s.deps.JS, dets, bus.DetectionSubject(meta.Tenant, meta.Conversation), meta.Turn, time.Time{})
	if err != nil {
		return det, "", false, fmt.Errorf("detector: %w", err)
	}
	if !found || own.Meta.Turn != meta.Turn || own.Event.Type() != schemas.TypeDetection || own.Payload(&det) != nil {
		return det, "", false, nil
	}
	return det, own.Event.ID(), true, nil
}
