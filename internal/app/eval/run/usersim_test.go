package run

import (
	"context"
	"strings"
	"testing"
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
