package run

import (
	"context"
	"strings"
	"testing"

	"github.com/reinception/rein/internal/llm"
)

// The scripted user states the instruction, restates it when asked a
// question, and stops otherwise.
func TestScriptedUserSimulator(t *testing.T) {
	c, err := SimUser()
	if err != nil {
		t.Fatal(err)
	}
	u := userSim{client: c}
	const instr = "Your user id is ana_1. You want to cancel reservation ABC123."
	ctx := context.Background()
	text, stop, _, err := u.next(ctx, instr, nil)
	if err != nil || stop || text != instr {
		t.Fatalf("first turn: %q stop=%v err=%v", text, stop, err)
	}
	lines := []Line{{"user", text}, {"agent", "Which reservation do you mean?"}}
	if text, stop, _, err = u.next(ctx, instr, lines); err != nil || stop || !strings.Contains(text, instr) {
		t.Errorf("after a question: %q stop=%v err=%v", text, stop, err)
	}
	lines = append(lines, Line{"user", text}, Line{"agent", "All done."})
	if _, stop, _, err = u.next(ctx, instr, lines); err != nil || !stop {
		t.Errorf("after the goal: stop=%v err=%v", stop, err)
	}
}

// The default user simulator is held to τ-bench's rule (nothing invented
// that the instruction does not give); rein's earlier prompt, which lets it
// answer what the instruction does not settle, stays as an option. Every
// call carries the run's temperature.
func TestUserSimulatorPromptAndTemperature(t *testing.T) {
	c := &fakeClient{fn: func(llm.Request) llm.Response { return llm.Response{Content: "hi"} }}
	u := userSim{client: c, temperature: 0.4}
	if _, _, _, err := u.next(context.Background(), "You are ana.", nil); err != nil {
		t.Fatal(err)
	}
	req := c.reqs[0]
	if req.Temperature == nil || *req.Temperature != 0.4 {
		t.Errorf("temperature %v, want 0.4", req.Temperature)
	}
	if !strings.Contains(req.System, "Never make up a detail") || strings.Contains(req.System, "answer as the instruction's customer would") {
		t.Errorf("default prompt does not forbid invented details:\n%s", req.System)
	}
	if p := UserSimPrompt(UserPromptRein, "x"); !strings.Contains(p, "answer as the instruction's customer would") {
		t.Errorf("rein's prompt:\n%s", p)
	}
}
