package agentworker

import (
	"strings"
	"testing"

	"github.com/reinception/rein/internal/llm"
	"github.com/reinception/rein/schemas"
)

// memBytes sums only the messages added since it last measured; a turn
// that starts after an unfinished one cuts the context and appends in the
// same array, and the estimate still equals a count from scratch.
func TestMemBytesFollowsTheContext(t *testing.T) {
	fromScratch := func(s *State) int {
		c := *s
		c.sized, c.sizedBytes = 0, 0
		return c.memBytes()
	}
	s := &State{}
	s.begin(1, schemas.Task{Turn: 1, UserText: "show reservation Q7RM2K"})
	s.Messages = append(s.Messages,
		llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "get_reservation_details", Arguments: []byte(`{"reservation_id":"Q7RM2K"}`)}}},
		llm.Message{Role: llm.RoleTool, ToolCallID: "c1", Name: "get_reservation_details", Content: strings.Repeat("x", 5000)})
	if got, want := s.memBytes(), fromScratch(s); got != want {
		t.Fatalf("turn 1 in progress: %d, want %d", got, want)
	}
	// Turn 1 never finished: turn 2 keeps its user message only and
	// writes over the slots its steps held.
	s.begin(2, schemas.Task{Turn: 2, UserText: "hi", Inception: &schemas.Inception{Thought: "think"}})
	if got, want := s.memBytes(), fromScratch(s); got != want {
		t.Fatalf("turn 2 begun over turn 1's steps: %d, want %d", got, want)
	}
	s.Messages = append(s.Messages, llm.Message{Role: llm.RoleAssistant, Content: "done"})
	if got, want := s.memBytes(), fromScratch(s); got != want {
		t.Fatalf("turn 2 answered: %d, want %d", got, want)
	}
	s.assemble([]record{{progress: progress{Turn: 3, Status: StatusActive}, Messages: []llm.Message{{Role: llm.RoleUser, Content: "a"}}}})
	if got, want := s.memBytes(), fromScratch(s); got != want {
		t.Fatalf("rebuilt from a record: %d, want %d", got, want)
	}
}
