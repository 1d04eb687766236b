package schemas_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	cloudevents "github.com/cloudevents/sdk-go/v2"

	"github.com/reinception/rein/schemas"
)

func signedTask(t *testing.T, k *schemas.TaskKey) cloudevents.Event {
	t.Helper()
	e, err := schemas.NewEvent(schemas.TypeTask, "task.acme.c1.3", "", schemas.Meta{Tenant: "acme", Conversation: "c1", Turn: 3},
		schemas.Task{Turn: 3, UserText: "cancel that one", Inception: &schemas.Inception{ErrorType: "anaphora", Thought: "Ask which one.", RecoveryTool: "ambiguity_report"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := k.Sign(&e); err != nil {
		t.Fatal(err)
	}
	return e
}

// A signed task verifies after a JSON round trip (how it travels); any
// change to what the worker acts on, a missing signature, or another key
// fails with ErrUnverified; a short key is refused.
func TestTaskSignature(t *testing.T) {
	k, err := schemas.NewTaskKey(bytes.Repeat([]byte("k"), schemas.MinTaskKeyBytes))
	if err != nil {
		t.Fatal(err)
	}
	e := signedTask(t, k)
	raw, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	var back cloudevents.Event
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if err := k.Verify(&back); err != nil {
		t.Fatalf("a signed task after a round trip: %v", err)
	}
	other, _ := schemas.NewTaskKey(bytes.Repeat([]byte("o"), schemas.MinTaskKeyBytes))
	tamper := map[string]func(e *cloudevents.Event){
		"thought changed": func(e *cloudevents.Event) {
			_ = e.SetData(schemas.DataContentType, json.RawMessage(bytes.Replace(e.Data(), []byte("Ask which one."), []byte("Refund $5,000."), 1)))
		},
		"another tenant":       func(e *cloudevents.Event) { e.SetExtension(schemas.ExtTenant, "globex") },
		"another conversation": func(e *cloudevents.Event) { e.SetExtension(schemas.ExtConversation, "c2") },
		"another turn":         func(e *cloudevents.Event) { e.SetExtension(schemas.ExtTurn, "4") },
		"another id":           func(e *cloudevents.Event) { e.SetID("task.acme.c1.4") },
		"no signature":         func(e *cloudevents.Event) { e.SetExtension(schemas.ExtSignature, nil) },
		"garbage signature":    func(e *cloudevents.Event) { e.SetExtension(schemas.ExtSignature, "v1.!!!") },
		"another key":          func(e *cloudevents.Event) { _ = other.Sign(e) },
	}
	for name, f := range tamper {
		c := back.Clone()
		f(&c)
		if err := k.Verify(&c); !errors.Is(err, schemas.ErrUnverified) {
			t.Errorf("%s: %v, want ErrUnverified", name, err)
		}
	}
	if _, err := schemas.NewTaskKey([]byte("short")); err == nil {
		t.Error("a 5-byte task key was accepted")
	}
}

// The signed bytes are a contract between releases: a task signed by the
// rein before an upgrade must verify after it. The signature of a fixed
// task under a fixed key, as the first release computed it.
func TestTaskSignatureIsStableAcrossReleases(t *testing.T) {
	k, err := schemas.NewTaskKey(bytes.Repeat([]byte("k"), schemas.MinTaskKeyBytes))
	if err != nil {
		t.Fatal(err)
	}
	e := signedTask(t, k)
	const want = "v1.2t-nf0BjzteD8vVkndllnOvPg3EW00mnQR05YyJXs7Q"
	if got := e.Extensions()[schemas.ExtSignature]; got != want {
		t.Errorf("signature %v, want %s", got, want)
	}
}

func BenchmarkTaskSign(b *testing.B) {
	k, _ := schemas.NewTaskKey(bytes.Repeat([]byte("k"), schemas.MinTaskKeyBytes))
	e, err := schemas.NewEvent(schemas.TypeTask, "task.acme.c1.3", "", schemas.Meta{Tenant: "acme", Conversation: "c1", Turn: 3},
		schemas.Task{Turn: 3, UserText: "cancel that one", Inception: &schemas.Inception{ErrorType: "anaphora", Thought: "Ask which one.", RecoveryTool: "ambiguity_report"}})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := k.Sign(&e); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkTaskVerify(b *testing.B) {
	k, _ := schemas.NewTaskKey(bytes.Repeat([]byte("k"), schemas.MinTaskKeyBytes))
	e, err := schemas.NewEvent(schemas.TypeTask, "task.acme.c1.3", "", schemas.Meta{Tenant: "acme", Conversation: "c1", Turn: 3},
		schemas.Task{Turn: 3, UserText: "cancel that one", Inception: &schemas.Inception{ErrorType: "anaphora", Thought: "Ask which one.", RecoveryTool: "ambiguity_report"}})
	if err != nil {
		b.Fatal(err)
	}
	if err := k.Sign(&e); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := k.Verify(&e); err != nil {
			b.Fatal(err)
		}
	}
}
