package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams/bus"
)

func writeLines(t *testing.T, lines []string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "turns.jsonl")
	if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// A file with a bad line publishes nothing and names the line; a good file
// run twice stores each turn once.
func TestPublishFileIsAllOrNothingAndRepeatable(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	var lines []string
	for i := 1; i <= 10; i++ {
		lines = append(lines, fmt.Sprintf(`{"tenant":"acme","conversation":"c%d","text":"hello %d"}`, i%3, i))
	}
	bad := append([]string(nil), lines...)
	bad[6] = `{"tenant":"acme","conversation":"c1","txt":"typo"}`
	_, err := runCLI(t, context.Background(), "publish", "--nats-url", h.URL(), "--data-dir", h.Dir, "--file", writeLines(t, bad))
	if err == nil || !strings.Contains(err.Error(), "nothing published") {
		t.Fatalf("a file with a bad line: err %v, want nothing published", err)
	}
	if n := h.StreamMsgs(t, bus.StreamTurns); n != 0 {
		t.Fatalf("%d turns stored from a file with a bad line, want 0", n)
	}
	if _, bl, err := readPublishFile(writeLines(t, bad)); err != nil || len(bl) != 1 || bl[0].line != 7 || bl[0].field != "txt" {
		t.Fatalf("bad lines %+v (%v): want line 7, field txt", bl, err)
	}

	good := writeLines(t, lines)
	for run := 1; run <= 2; run++ {
		out, err := runCLI(t, context.Background(), "publish", "--nats-url", h.URL(), "--data-dir", h.Dir, "--file", good)
		if err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		if dups := strings.Count(out, "duplicate"); (run == 1 && dups != 0) || (run == 2 && dups != 10) {
			t.Fatalf("run %d reported %d duplicates:\n%s", run, dups, out)
		}
		if n := h.StreamMsgs(t, bus.StreamTurns); n != 10 {
			t.Fatalf("after run %d: %d turns stored, want 10", run, n)
		}
	}

	// --continue-on-error publishes the good lines and still fails.
	mixed := writeLines(t, []string{`{"tenant":"acme","conversation":"m1","text":"fine"}`, `{"tenant":"ac me","conversation":"m1","text":"x"}`})
	if _, err := runCLI(t, context.Background(), "publish", "--nats-url", h.URL(), "--data-dir", h.Dir, "--file", mixed, "--continue-on-error"); err == nil {
		t.Fatal("--continue-on-error with a bad line exited 0")
	}
	if n := h.StreamMsgs(t, bus.StreamTurns); n != 11 {
		t.Fatalf("--continue-on-error stored %d turns in all, want 11", n)
	}
}

func TestPublishFileErrorsInPlainWords(t *testing.T) {
	cases := map[string]string{
		`{"tenant":"acme","conversation":"c1","text":"x","turn":"two"}`:   `field "turn": must be a whole number`,
		`{"tenant":"acme","conversation":"c1","text":""}`:                 `field "text": must not be empty`,
		`{"tenant":"acme","conversation":"c1","text":"x","role":"bot"}`:   `field "role"`,
		`{"tenant":"acme", "conversation"`:                                `cut short`,
		`not json`:                                                        `not valid JSON`,
		"{\"tenant\":\"acme\",\"conversation\":\"c1\",\"text\":\"\xff\"}": `not valid UTF-8`,
	}
	for line, want := range cases {
		_, bad, err := readPublishFile(writeLines(t, []string{line}))
		if err != nil || len(bad) != 1 || !strings.Contains(bad[0].Error(), want) || !strings.HasPrefix(bad[0].Error(), "line 1:") {
			t.Errorf("%s: %v (%v), want %q", line, bad, err, want)
		}
	}
}

// --turn 0 is refused rather than silently taken for "the next turn".
func TestPublishTurnZeroIsRefused(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	_, err := runCLI(t, context.Background(), "publish", "--nats-url", h.URL(), "--data-dir", h.Dir, "--tenant", "acme", "--conversation", "z", "--text", "hi", "--turn", "0")
	if err == nil || !strings.Contains(err.Error(), "start at 1") {
		t.Fatalf("--turn 0: %v", err)
	}
	if n := h.StreamMsgs(t, bus.StreamTurns); n != 0 {
		t.Fatalf("%d turns stored", n)
	}
}

// A single turn whose --text is not valid UTF-8 is refused, naming the
// flag, and nothing is stored (never a U+FFFD rewrite).
func TestPublishTextInvalidUTF8IsRefused(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	_, err := runCLI(t, context.Background(), "publish", "--nats-url", h.URL(), "--tenant", "acme", "--conversation", "u", "--next-turn", "--text", "caf\xe9")
	if err == nil || !strings.Contains(err.Error(), "--text: is not valid UTF-8") {
		t.Fatalf("invalid UTF-8: %v", err)
	}
	if n := h.StreamMsgs(t, bus.StreamTurns); n != 0 {
		t.Fatalf("%d turns stored", n)
	}
}

// The documented text size limit is enforced before anything is sent.
func TestPublishTextSizeLimit(t *testing.T) {
	long := publishLine{Tenant: "acme", Conversation: "c1", Role: schemas.RoleUser, Text: strings.Repeat("é", schemas.MaxTextChars+1)}
	if err := long.check(); err == nil || !strings.Contains(err.Error(), "at most 65536") {
		t.Errorf("over the limit: %v", err)
	}
	long.Text = strings.Repeat("é", schemas.MaxTextChars)
	if err := long.check(); err != nil {
		t.Errorf("at the limit: %v", err)
	}
}

// One turn from flags needs its number or an explicit --next-turn: the
// same command run twice then stores the turn once (a retry), and only
// --next-turn makes a new turn every run.
func TestPublishOneTurnIsIdempotentByDefault(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	base := []string{"publish", "--nats-url", h.URL(), "--data-dir", h.Dir, "--tenant", "acme", "--conversation", "idem", "--text", "cancel that one"}
	if _, err := runCLI(t, context.Background(), base...); err == nil || !strings.Contains(err.Error(), "--next-turn") {
		t.Fatalf("without --turn or --next-turn: %v, want an error naming both", err)
	}
	if _, err := runCLI(t, context.Background(), append(base, "--turn", "1", "--next-turn")...); err == nil {
		t.Fatal("--turn with --next-turn was accepted")
	}
	for range 2 {
		if _, err := runCLI(t, context.Background(), append(base, "--turn", "1")...); err != nil {
			t.Fatal(err)
		}
	}
	if n := h.StreamMsgs(t, bus.StreamTurns); n != 1 {
		t.Fatalf("the same --turn 1 published twice stored %d turns, want 1", n)
	}
	for range 2 {
		if _, err := runCLI(t, context.Background(), append(base, "--next-turn")...); err != nil {
			t.Fatal(err)
		}
	}
	if n := h.StreamMsgs(t, bus.StreamTurns); n != 3 {
		t.Fatalf("--next-turn twice after turn 1: %d turns stored, want 3", n)
	}
}
