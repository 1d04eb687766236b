package agentworker

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/reinception/rein/internal/llm"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams/bus"
)

// Conversation statuses.
const (
	StatusActive = "active" // the task agent answers
	StatusHuman  = "human"  // escalated: later user turns go to the human path
)

// Turn outcomes (the outcome label of rein_agentworker_turns_total).
const (
	OutcomeReply     = "reply"      // the agent answered
	OutcomeEscalated = "escalated"  // the agent transferred to a human and answered
	OutcomeMaxSteps  = "max_steps"  // the step limit ended the turn
	OutcomeHuman     = "human_path" // the conversation belongs to a human: no agent run
	// OutcomeUnavailable: the turn failed past every retry; the
	// conversation is handed to a human (escalation agent_unavailable).
	OutcomeUnavailable = "agent_unavailable"
	// OutcomeFailed: the task itself is unusable (dead-lettered); the turn
	// ends with dev.rein.unanswered.v1 reason failed.
	OutcomeFailed = "failed"
	// OutcomeSuperseded: a later turn ran first; the turn ends with
	// dev.rein.unanswered.v1 reason superseded.
	OutcomeSuperseded = "superseded"
)

// recentTurns is how many finished turn numbers a state remembers, to tell
// a finished turn delivered again from one a later turn overtook.
const recentTurns = 16

// State is one conversation's agent state. It is persisted turn by turn:
// each write appends the current turn's part as a record under the
// conversation's key in the KV bucket REIN_CONVERSATIONS (see persist.go),
// so a write costs one turn's size, not the conversation's.
type State struct {
	progress
	// Messages is the agent's internal context: every user message, tool
	// call, tool result, think step and reply. TurnStart indexes the
	// current turn's user message.
	Messages  []llm.Message
	TurnStart int
	// Overlay is the backend's conversation state (the domain overlay).
	Overlay []byte

	seq       uint64       // stream sequence of the conversation's newest stored record
	base      uint64       // the record the current turn's records continue (record.Prev)
	records   int          // records stored since the newest snapshot (see record)
	wholeAt   time.Time    // when the newest record holding the whole context was stored
	conv      Conversation // open backend conversation
	published int          // events of the current turn already published
	// unsaved: the context holds a tool result not yet written, of a call
	// that changed nothing (runCalls); the next write holds it, and it is
	// written before any of the turn's events is published.
	unsaved bool
	spec    *specCall // the turn's speculative first model answer, when usable
	// sized counts the first messages whose estimate memBytes has summed
	// in sizedBytes: messages are only appended, so a save measures the
	// new ones, not the whole context (reset where the context is cut).
	sized, sizedBytes int
}

// progress is where a conversation stands: part of its State, and the
// head of every turn record stored for it.
type progress struct {
	Status string `json:"status"`
	// Turn is the turn in progress or the last one handled; TurnDone says
	// whether it is finished.
	Turn     int  `json:"turn"`
	TurnDone bool `json:"turn_done"`
	// ModelCalls counts the current turn's model calls (against MaxSteps).
	ModelCalls int `json:"model_calls"`
	// The current turn's task.
	UserText    string             `json:"user_text"`
	Inception   *schemas.Inception `json:"inception"`
	DetectionID string             `json:"detection_id,omitempty"`
	// Outcome and Reply once the turn is done.
	Outcome string `json:"outcome,omitempty"`
	Reply   string `json:"reply,omitempty"`
	// LiveSteps: the current turn's steps went out one by one
	// (Config.StepEvents "turn": stored before the first of them is
	// published, so a resumed turn never sends them again as one batch).
	LiveSteps bool `json:"live_steps,omitempty"`
	// EscalatedTurn is the turn that handed the conversation to a human,
	// HandoffReason that escalation's reason and HandoffAt when it was
	// decided; HumanTurns counts later user turns that did not reach the
	// model.
	EscalatedTurn int       `json:"escalated_turn,omitempty"`
	HandoffReason string    `json:"handoff_reason,omitempty"`
	HandoffAt     time.Time `json:"handoff_at,omitzero"`
	HumanTurns    int       `json:"human_turns,omitempty"`
	// Recent are the last finished turns (at most recentTurns), newest
	// last.
	Recent []int `json:"recent,omitempty"`
}

// remember records that turn has its outcome.
func (p *progress) remember(turn int) {
	for _, t := range p.Recent {
		if t == turn {
			return
		}
	}
	p.Recent = append(p.Recent, turn)
	if len(p.Recent) > recentTurns {
		p.Recent = append(p.Recent[:0], p.Recent[len(p.Recent)-recentTurns:]...)
	}
}

// handOff gives the conversation to a human at its current turn, for
// reason (an escalation reason).
func (p *progress) handOff(reason string, at time.Time) {
	p.Status, p.EscalatedTurn, p.HandoffReason, p.HandoffAt = StatusHuman, p.Turn, reason, at
}

// giveBack returns the conversation to the agent.
func (p *progress) giveBack() {
	p.Status, p.HandoffReason, p.HandoffAt = StatusActive, "", time.Time{}
}

// finished tells whether turn is known to have its outcome.
func (p *progress) finished(turn int) bool {
	for _, t := range p.Recent {
		if t == turn {
			return true
		}
	}
	return false
}

// plantedID is the tool-call id of the planted think step of a turn.
func plantedID(turn int) string { return fmt.Sprintf("rein_think_%d", turn) }

// begin starts a new turn from its task: the user message, then the
// planted think call and its empty result when the task has an inception.
func (s *State) begin(turn int, task schemas.Task) {
	if !s.TurnDone && s.Turn != 0 && len(s.Messages) > s.TurnStart {
		// The previous turn never finished (its task was dead-lettered):
		// keep its user message, drop its unfinished steps, so the context
		// holds no call without a result.
		s.Messages = s.Messages[:s.TurnStart+1]
		s.sized, s.sizedBytes = 0, 0
	}
	if s.Status == "" {
		s.Status = StatusActive
	}
	s.Turn, s.TurnDone, s.TurnStart, s.ModelCalls = turn, false, len(s.Messages), 0
	s.base = s.seq // the turn continues the newest record, the last of the turn before
	s.UserText, s.Inception, s.DetectionID = task.UserText, task.Inception, task.DetectionID
	s.Outcome, s.Reply, s.published, s.LiveSteps = "", "", 0, false
	s.Messages = append(s.Messages, llm.Message{Role: llm.RoleUser, Content: task.UserText})
	if task.Inception != nil {
		args, _ := json.Marshal(map[string]string{"thought": task.Inception.Thought})
		id := plantedID(turn)
		s.Messages = append(s.Messages,
			llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: id, Name: schemas.ToolThink, Arguments: args}}},
			llm.Message{Role: llm.RoleTool, ToolCallID: id, Name: schemas.ToolThink, Content: ""})
	}
}

// pending returns the calls of the last assistant message that have no
// result yet.
func (s *State) pending() []llm.ToolCall {
	last := -1
	for i := len(s.Messages) - 1; i > s.TurnStart; i-- {
		if s.Messages[i].Role == llm.RoleAssistant {
			last = i
			break
		}
	}
	if last < 0 {
		return nil
	}
	done := map[string]bool{}
	for _, m := range s.Messages[last+1:] {
		if m.Role == llm.RoleTool {
			done[m.ToolCallID] = true
		}
	}
	var out []llm.ToolCall
	for _, c := range s.Messages[last].ToolCalls {
		if !done[c.ID] {
			out = append(out, c)
		}
	}
	return out
}

// load returns the conversation's state: from memory, else from
// REIN_CONVERSATIONS, else a new one.
func (st *Stage) load(ctx context.Context, m schemas.Meta) (*State, error) {
	key := bus.ConversationKey(m.Tenant, m.Conversation)
	if s, ok := st.cache.Get(key); ok {
		return s, nil
	}
	s, _, err := st.store.load(ctx, m.Tenant, m.Conversation, m.Turn)
	if err != nil {
		return nil, err
	}
	if s.conv, err = st.backend.Open(s.Overlay); err != nil {
		return nil, err
	}
	st.cache.Put(key, s)
	return s, nil
}

// save persists the current turn; on any failure the in-memory copy is
// dropped, so the retry starts from what is stored. The state grew: the
// cache measures it again.
func (st *Stage) save(ctx context.Context, m schemas.Meta, s *State) error {
	key := bus.ConversationKey(m.Tenant, m.Conversation)
	if err := st.store.save(ctx, m.Tenant, m.Conversation, s, st.fresh); err != nil {
		st.cache.Drop(key)
		return err
	}
	st.cache.Resize(key)
	return nil
}

// DefaultCacheBytes is the agent worker's default budget of cached
// conversation states (Config.MaxCacheBytes): twice what 6,000 active
// ten-turn conversations hold (≈ 66 MB), the bench's steady 1,000 turns/s.
// Past the budget a steady round of conversations misses on every turn
// (the least recently used is always the next one due), so the default
// leaves room. It binds before the count bound (convcache.DefaultMax) for
// conversations of any length.
const DefaultCacheBytes = 128 << 20

// Fixed costs of a cached state and of each message and tool call in it:
// their headers and the runtime's bookkeeping, measured roughly.
const (
	stateOverhead    = 1024
	messageOverhead  = 96
	toolCallOverhead = 64
)

// memBytes estimates what s holds in memory: its messages' strings and
// arguments, the turn's texts and the domain overlay (once encoded and
// once open), plus fixed costs. Only the writer of the conversation calls
// it (the cache measures on Put and Resize).
func (s *State) memBytes() int {
	n := stateOverhead + 2*len(s.Overlay) + len(s.UserText) + len(s.Reply) + len(s.HandoffReason) + len(s.DetectionID)
	if s.Inception != nil {
		n += len(s.Inception.Thought)
	}
	if s.sized > len(s.Messages) {
		s.sized, s.sizedBytes = 0, 0
	}
	for _, m := range s.Messages[s.sized:] {
		s.sizedBytes += messageBytes(m)
	}
	s.sized = len(s.Messages)
	return n + s.sizedBytes
}

// messageBytes estimates what one message holds.
func messageBytes(m llm.Message) int {
	n := messageOverhead + len(m.Role) + len(m.Content) + len(m.ToolCallID) + len(m.Name)
	for _, tc := range m.ToolCalls {
		n += toolCallOverhead + len(tc.ID) + len(tc.Name) + len(tc.Arguments)
	}
	return n
}
