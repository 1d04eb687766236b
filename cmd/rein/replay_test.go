package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/reinception/rein/internal/app/audit"
	"github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
)

// seedAudit publishes a small conversation: two user turns (the second
// one an unsupported request), an agent turn and the recorded detections.
func seedAudit(t *testing.T) *testutil.JS {
	t.Helper()
	js := testutil.StartJetStream(t, "")
	p := streams.NewPublisher(js.JS, nil, streams.PublisherConfig{})
	at := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	var outs []streams.Out
	add := func(stream, subject, typ, id string, turn, sec int, data any) {
		e, err := schemas.NewEvent(typ, id, "", schemas.Meta{Tenant: "acme", Conversation: "c1", Turn: turn}, data)
		if err != nil {
			t.Fatal(err)
		}
		e.SetTime(at.Add(time.Duration(sec) * time.Second))
		outs = append(outs, streams.Out{Stream: stream, Subject: subject, Event: &e})
	}
	add(bus.StreamTurns, bus.TurnSubject("acme", "c1", "user"), schemas.TypeTurn, "t1u", 1, 0, schemas.Turn{Role: "user", Text: "Hello, I need help.", Turn: 1})
	add(bus.StreamTurns, bus.TurnSubject("acme", "c1", "agent"), schemas.TypeTurn, "t1a", 1, 2, schemas.Turn{Role: "agent", Text: "How can I help?", Turn: 1})
	add(bus.StreamTurns, bus.TurnSubject("acme", "c1", "user"), schemas.TypeTurn, "t2u", 2, 4, schemas.Turn{Role: "user", Text: "Can you book me a hotel in Paris?", Turn: 2})
	add(bus.StreamDetections, bus.DetectionSubject("acme", "c1"), schemas.TypeDetection, "d1", 1, 1,
		schemas.Detection{Turn: 1, UserText: "Hello, I need help.", Module: "rules", TaxonomyVersion: "v1"})
	add(bus.StreamDetections, bus.DetectionSubject("acme", "c1"), schemas.TypeDetection, "d2", 2, 5,
		schemas.Detection{Turn: 2, UserText: "Can you book me a hotel in Paris?", Module: "rules", TaxonomyVersion: "v1", Rein: true, ErrorType: "unsupported_domain",
			Category: "unsupported", RecoveryTool: "transfer_to_human_agents", Reasoning: "r"})
	if _, err := p.PublishAll(context.Background(), outs...); err != nil {
		t.Fatal(err)
	}
	return js
}

func TestReplayCommand(t *testing.T) {
	js := seedAudit(t)
	ctx := context.Background()
	url := js.URL()

	out, err := runCLI(t, ctx, "replay", "--nats-url", url, "--data-dir", js.Dir, "--tenant", "acme", "--conversation", "c1", "--format", "text")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"== tenant acme, conversation c1", "USER        Hello, I need help.", "AGENT       How can I help?", "turn 2   USER        Can you book me a hotel"} {
		if !strings.Contains(out, want) {
			t.Errorf("transcript lacks %q:\n%s", want, out)
		}
	}

	file := filepath.Join(t.TempDir(), "out.jsonl")
	if _, err := runCLI(t, ctx, "replay", "--nats-url", url, "--data-dir", js.Dir, "--stream", bus.StreamDetections, "--from-seq", "2", "--out", file); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	var ev map[string]any
	if len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &ev) != nil || ev["id"] != "d2" {
		t.Fatalf("jsonl: %s", raw)
	}

	if _, err := runCLI(t, ctx, "replay", "--nats-url", url, "--data-dir", js.Dir, "--to", "rein.replay"); err == nil {
		t.Fatal("a rein. prefix was accepted")
	}
	if _, err := runCLI(t, ctx, "replay", "--nats-url", url, "--data-dir", js.Dir, "--to", "replay"); err != nil {
		t.Fatal(err)
	}
	if n := js.StreamMsgs(t, audit.DefaultReplayStream); n != 3 {
		t.Fatalf("replay stream holds %d, want 3", n)
	}
	for _, bad := range [][]string{{"--since", "yesterday"}, {"--format", "xml"}, {"--from-seq", "5", "--to-seq", "2"}, {"--stream", "NOPE"}} {
		if _, err := runCLI(t, ctx, append([]string{"replay", "--nats-url", url, "--data-dir", js.Dir}, bad...)...); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

func TestAuditAndShadowCommands(t *testing.T) {
	js := seedAudit(t)
	ctx := context.Background()
	url := js.URL()

	out, err := runCLI(t, ctx, "audit", "--nats-url", url, "--data-dir", js.Dir, "--tenant", "acme", "--conversation", "c1", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var es []audit.Entry
	if err := json.Unmarshal([]byte(out), &es); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range es {
		ids = append(ids, e.ID)
	}
	if strings.Join(ids, ",") != "t1u,d1,t1a,t2u,d2" {
		t.Fatalf("timeline %v", ids)
	}
	text, err := runCLI(t, ctx, "audit", "--nats-url", url, "--data-dir", js.Dir, "--tenant", "acme", "--conversation", "c1")
	if err != nil || !strings.Contains(text, "5 events") || !strings.Contains(text, "unsupported_domain (unsupported)") {
		t.Fatalf("%v\n%s", err, text)
	}
	if _, err := runCLI(t, ctx, "audit", "--nats-url", url, "--data-dir", js.Dir, "--tenant", "acme"); err == nil {
		t.Fatal("audit without --conversation accepted")
	}
	// An unknown conversation is an error (exit 3), not an empty timeline.
	if _, err := runCLI(t, ctx, "audit", "--nats-url", url, "--data-dir", js.Dir, "--tenant", "acme", "--conversation", "no-such"); err == nil || exitCode(err) != 3 {
		t.Fatalf("audit of an unknown conversation: %v (exit %d), want exit 3", err, exitCode(err))
	}

	out, err = runCLI(t, ctx, "shadow", "--nats-url", url, "--data-dir", js.Dir, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var rep audit.ShadowReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Turns != 2 || rep.Module != "rules" {
		t.Fatalf("%+v", rep)
	}
	text, err = runCLI(t, ctx, "shadow", "--nats-url", url, "--data-dir", js.Dir, "--conversation", "acme/c1")
	if err != nil || !strings.Contains(text, "LABEL") || !strings.Contains(text, "2 turns compared") {
		t.Fatalf("%v\n%s", err, text)
	}
}

func runSub(t *testing.T, cmd *cobra.Command, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(io.Discard)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}

func TestStreamsBackupRestoreCommands(t *testing.T) {
	js := seedAudit(t)
	dir := t.TempDir()
	out, err := runSub(t, newStreamsBackupCmd(), "--nats-url", js.URL(), "--data-dir", js.Dir, dir)
	if err != nil || !strings.Contains(out, bus.StreamTurns) {
		t.Fatalf("%v\n%s", err, out)
	}
	// A second backup into the same directory is refused unless asked for.
	if _, err := runSub(t, newStreamsBackupCmd(), "--nats-url", js.URL(), "--data-dir", js.Dir, dir); err == nil || !strings.Contains(err.Error(), "--overwrite") {
		t.Fatalf("backup over an earlier one: %v", err)
	}
	if _, err := runSub(t, newStreamsBackupCmd(), "--nats-url", js.URL(), "--data-dir", js.Dir, "--overwrite", dir); err != nil {
		t.Fatalf("backup --overwrite: %v", err)
	}
	if err := js.JS.DeleteStream(context.Background(), bus.StreamTurns); err != nil {
		t.Fatal(err)
	}
	if _, err := runSub(t, newStreamsRestoreCmd(), "--nats-url", js.URL(), "--data-dir", js.Dir, dir); err == nil {
		t.Fatal("restore over existing streams without --replace accepted")
	}
	out, err = runSub(t, newStreamsRestoreCmd(), "--nats-url", js.URL(), "--data-dir", js.Dir, "--stream", bus.StreamTurns, dir)
	if err != nil || !strings.Contains(out, "restored "+bus.StreamTurns) {
		t.Fatalf("%v\n%s", err, out)
	}
	if n := js.StreamMsgs(t, bus.StreamTurns); n != 3 {
		t.Fatalf("restored %d turns, want 3", n)
	}
}

// A stored message that is not a CloudEvent is left out of the JSONL, and
// the command says so on stderr instead of dropping it silently.
func TestReplayReportsSkippedMessages(t *testing.T) {
	js := seedAudit(t)
	ctx := context.Background()
	if _, err := js.JS.Publish(ctx, bus.TurnSubject("acme", "c1", "user"), []byte("not an event")); err != nil {
		t.Fatal(err)
	}
	root := newRootCmd()
	var out, stderr bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&stderr)
	root.SetArgs([]string{"replay", "--nats-url", js.URL(), "--data-dir", js.Dir})
	if err := root.ExecuteContext(ctx); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out.String(), "\n"); n != 3 {
		t.Fatalf("wrote %d lines, want the 3 events:\n%s", n, out.String())
	}
	if !strings.Contains(stderr.String(), "left out 1 stored message(s) that are not CloudEvents") {
		t.Fatalf("stderr: %q", stderr.String())
	}
}
