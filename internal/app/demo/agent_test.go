package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinception/rein/internal/llm"
)

// TestDemoAgentRefusesAnotherUsersReservation: the demo's agent reads a
// reservation out only to the user who owns it. Before, a caller giving
// their own user id and another customer's reservation code heard that
// reservation's route and cabin (issue 35: the showcase leaked data).
func TestDemoAgentRefusesAnotherUsersReservation(t *testing.T) {
	script, err := llm.ParseScript(agentScript)
	if err != nil {
		t.Fatal(err)
	}
	agent := llm.NewScripted(script)
	var reservations map[string]json.RawMessage
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "agentworker", "taubench", "sampledata", "airline", "reservations.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &reservations); err != nil {
		t.Fatal(err)
	}
	ask := func(user, res string) string {
		t.Helper()
		call := llm.ToolCall{ID: "call_1", Name: "get_reservation_details", Arguments: json.RawMessage(`{"reservation_id":"` + res + `"}`)}
		// The tool result as the domain tools print it: the record's own
		// key order, JSON with ", " and ": " separators.
		var compact bytes.Buffer
		if err := json.Compact(&compact, reservations[res]); err != nil {
			t.Fatal(err)
		}
		pretty := strings.NewReplacer(`":`, `": `, `,"`, `, "`).Replace(compact.String())
		resp, err := agent.Chat(context.Background(), llm.Request{Purpose: llm.PurposeAgent, Messages: []llm.Message{
			{Role: llm.RoleUser, Content: "Hi, this is Omar Lindqvist, user id " + user + ". Can you show me reservation " + res + "?"},
			{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{call}},
			{Role: llm.RoleTool, ToolCallID: call.ID, Name: call.Name, Content: pretty},
		}})
		if err != nil {
			t.Fatal(err)
		}
		return resp.Content
	}
	if got := ask("omar_lindqvist_3307", "Q7RM2K"); !strings.Contains(got, "not under user id omar_lindqvist_3307") || strings.Contains(got, " to ") {
		t.Errorf("another user's reservation: the agent answered %q", got)
	}
	if got := ask("omar_lindqvist_3307", "M2VT9Q"); !strings.HasPrefix(got, "Reservation M2VT9Q goes from ") {
		t.Errorf("the caller's own reservation: the agent answered %q", got)
	}
}
