package streams_test

import (
	"strings"
	"testing"

	"github.com/reinception/rein/streams"
)

// splitIDs is the plain reading of a per-conversation subject that
// SubjectIDs must agree with.
func splitIDs(subject string) (tenant, conv string, ok bool) {
	parts := strings.Split(subject, ".")
	if len(parts) < 4 || parts[0] != "rein" {
		return "", "", false
	}
	switch parts[1] {
	case "turns", "ingest", "detections", "tasks", "steps", "escalations", "reports", "feedback":
		return parts[2], parts[3], true
	}
	return "", "", false
}

func TestSubjectIDsOddSubjects(t *testing.T) {
	subjects := []string{
		"rein.turns.acme.c1",
		"rein.turns.acme.c1.more.tokens",
		"rein.feedback.t.c.x",
		"rein.turns.acme",      // too few tokens
		"rein.turns.acme.",     // empty conversation
		"rein.turns..c1",       // empty tenant
		"rein.turns...",        // all empty
		"rein.turns..",         // three tokens, all empty
		"rein..acme.c1",        // empty kind
		"rein.unknown.acme.c1", // kind without conversations
		"reinx.turns.acme.c1",  // wrong root
		".rein.turns.acme.c1",  // leading empty token
		"rein.turns",           // two tokens
		"rein.",                // root and an empty token
		"rein",                 // root only
		"",                     // nothing
		"rein.tasks.a.b.",      // trailing empty token
		"rein.turnsx.acme.c1",  // kind prefix of a known one
		"rein.steps.a..b",      // empty token after the conversation
	}
	for _, s := range subjects {
		wt, wc, wok := splitIDs(s)
		gt, gc, gok := streams.SubjectIDs(s)
		if gt != wt || gc != wc || gok != wok {
			t.Errorf("SubjectIDs(%q) = %q, %q, %v; want %q, %q, %v", s, gt, gc, gok, wt, wc, wok)
		}
		key, kok := streams.ConversationKey(s)
		if kok != wok || (wok && key != wt+"."+wc) || (!wok && key != "") {
			t.Errorf("ConversationKey(%q) = %q, %v; want %q, %v", s, key, kok, wt+"."+wc, wok)
		}
	}
}

// Both run on every delivery, so they must not allocate.
func TestSubjectIDsDoNotAllocate(t *testing.T) {
	const s = "rein.turns.acme.conv-1.extra"
	n := testing.AllocsPerRun(100, func() {
		if _, _, ok := streams.SubjectIDs(s); !ok {
			t.Fatal("not ok")
		}
		if _, ok := streams.ConversationKey(s); !ok {
			t.Fatal("not ok")
		}
	})
	if n != 0 {
		t.Fatalf("allocations per call = %v, want 0", n)
	}
}

var sinkKey string

// BenchmarkConversationKey compares the consumer's key from the subject
// with the split-and-join reading it replaced.
func BenchmarkConversationKey(b *testing.B) {
	const s = "rein.turns.acme.conv-0001"
	b.Run("split-join", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			t, c, _ := splitIDs(s)
			sinkKey = t + "." + c
		}
	})
	b.Run("span", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sinkKey, _ = streams.ConversationKey(s)
		}
	})
}
