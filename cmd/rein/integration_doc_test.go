package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/reinception/rein/escalation"
	"github.com/reinception/rein/injector"
	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
	"github.com/reinception/rein/streams/ingress"
	"github.com/reinception/rein/streams/natsserver"
)

// docs/integration.md marks each checked example with <!-- check:NAME -->;
// docExample returns what follows the marker: the next fenced block's body,
// or the table right after it.
func docExample(t *testing.T, doc, name string) string {
	t.Helper()
	marker := "<!-- check:" + name + " -->"
	i := strings.Index(doc, marker)
	if i < 0 {
		t.Fatalf("docs/integration.md has no %s", marker)
	}
	rest := strings.TrimLeft(doc[i+len(marker):], " \n")
	lines := strings.Split(rest, "\n")
	if first := strings.TrimSpace(lines[0]); strings.HasPrefix(first, "```") {
		var body []string
		for _, l := range lines[1:] {
			if strings.TrimSpace(l) == "```" {
				return dedent(strings.Join(body, "\n"))
			}
			body = append(body, l)
		}
		t.Fatalf("%s: unterminated code block", name)
	}
	var table []string
	for _, l := range lines {
		if !strings.HasPrefix(l, "|") {
			break
		}
		table = append(table, l)
	}
	if len(table) == 0 {
		t.Fatalf("%s: neither a code block nor a table follows the marker", name)
	}
	return strings.Join(table, "\n")
}

// dedent removes the indentation common to every non-empty line (blocks
// inside list items are indented).
func dedent(s string) string {
	lines := strings.Split(s, "\n")
	indent := -1
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		n := len(l) - len(strings.TrimLeft(l, " "))
		if indent < 0 || n < indent {
			indent = n
		}
	}
	for i, l := range lines {
		if len(l) >= indent && indent > 0 {
			lines[i] = l[indent:]
		}
	}
	return strings.Join(lines, "\n")
}

// docMessage is a NATS message written out as the guide shows it: the
// subject, header lines, a blank line, the body.
func docMessage(t *testing.T, text string) *nats.Msg {
	t.Helper()
	head, body, ok := strings.Cut(text, "\n\n")
	if !ok {
		t.Fatalf("message without a blank line before the body:\n%s", text)
	}
	lines := strings.Split(head, "\n")
	m := &nats.Msg{Subject: strings.TrimSpace(lines[0]), Header: nats.Header{}, Data: []byte(strings.TrimSpace(body))}
	for _, l := range lines[1:] {
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			t.Fatalf("header line %q is not key: value", l)
		}
		m.Header.Set(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	return m
}

func readIntegrationDoc(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "integration.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The messages, answers, subjects and snippets of the guide agree with
// rein's codec, names and types.
func TestIntegrationDocStatic(t *testing.T) {
	doc := readIntegrationDoc(t)

	// NATS messages: what every consumer's decoder accepts, on the turn's
	// ingest subject, with no Nats-Msg-Id (rein derives the id it stores under).
	for _, tc := range []struct{ name, role string }{{"nats-user-turn", schemas.RoleUser}, {"nats-agent-reply", schemas.RoleAgent}} {
		m := docMessage(t, docExample(t, doc, tc.name))
		d, err := streams.Decode(m.Subject, m.Header, m.Data, 0)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var turn schemas.Turn
		if err := d.Payload(&turn); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if turn.Role != tc.role || turn.Turn != d.Meta.Turn {
			t.Errorf("%s: role %q turn %d (extension %d)", tc.name, turn.Role, turn.Turn, d.Meta.Turn)
		}
		if want := bus.IngestSubject(d.Meta.Tenant, d.Meta.Conversation, tc.role); m.Subject != want {
			t.Errorf("%s: subject %s, want %s", tc.name, m.Subject, want)
		}
		if id := m.Header.Get(bus.HeaderMsgID); id != "" {
			t.Errorf("%s: Nats-Msg-Id %q: the ingest ignores it, the guide must not ask for it", tc.name, id)
		}
	}

	// The Python and CLI snippets send that very message.
	user := docMessage(t, docExample(t, doc, "nats-user-turn"))
	py, cli := docExample(t, doc, "python-publish"), docExample(t, doc, "nats-cli")
	pyVals := map[string]string{"acme": "tenant", "c2": "conv", "1": "turn"}
	for k, vs := range user.Header {
		v := vs[0]
		if !strings.Contains(cli, "'"+k+":"+v+"'") {
			t.Errorf("nats CLI snippet lacks header %s:%s", k, v)
		}
		if !strings.Contains(py, `"`+k+`": `) {
			t.Errorf("Python snippet lacks header %s", k)
		}
		if !strings.Contains(py, `"`+k+`": "`+v+`"`) && !strings.Contains(py, `"`+k+`": `+pyVals[v]) && !strings.Contains(py, `"`+k+`": str(`+pyVals[v]+`)`) {
			t.Errorf("Python snippet sets %s to something else than %s", k, v)
		}
	}
	inbox := bus.TenantInbox("acme")
	if !strings.Contains(py, `f"rein.ingest.{tenant}.{conv}.user"`) || !strings.Contains(cli, "nats req --nkey data/nats-keys/ingress-acme.nk --inbox-prefix "+inbox+" "+user.Subject+" ") {
		t.Error("a snippet publishes on another subject")
	}
	// A tenant's key reads replies on its own inboxes only.
	if !strings.Contains(py, `inbox_prefix="`+inbox+`"`) {
		t.Errorf("the Python snippet does not connect with the tenant's inbox prefix %s", inbox)
	}
	for _, body := range []string{py, cli} {
		if !strings.Contains(body, `I would like to choose my seat by the window on reservation Z3PLW8.`) {
			t.Error("a snippet sends another text")
		}
	}

	// The schema files the guide links exist, and one per plain document.
	for _, name := range schemas.AllDocuments {
		link := "](../schemas/jsonschema/" + name + ".json)"
		if !strings.Contains(doc, link) {
			t.Errorf("the guide does not link the schema of %s", name)
		}
		if _, err := schemas.SchemaJSON(name); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}

	// The sidecar answer is injector.Answer, field for field, and valid
	// under its JSON Schema.
	if err := schemas.Validate(schemas.DocSidecarAnswer, []byte(docExample(t, doc, "sidecar-answer"))); err != nil {
		t.Errorf("sidecar answer: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(docExample(t, doc, "sidecar-answer")))
	dec.DisallowUnknownFields()
	var a injector.Answer
	if err := dec.Decode(&a); err != nil {
		t.Fatalf("sidecar answer: %v", err)
	}
	if a.Status != injector.StatusReady || a.Inception == nil || a.Inception.RecoveryTool != schemas.ToolTransfer ||
		a.DetectionID != schemas.EventID("detection", "acme", "c2", 1) || a.Turn != 1 {
		t.Errorf("sidecar answer %+v", a)
	}
	for _, s := range []string{injector.StatusReady, injector.StatusNone, injector.StatusTimeout, injector.StatusBusy, injector.StatusInvalid} {
		if !strings.Contains(doc, "| `"+s+"` |") {
			t.Errorf("status %s is not explained", s)
		}
	}

	// Every subject of the table is rein's, on the stream named.
	table := docExample(t, doc, "subjects")
	subjects := map[string]string{
		bus.TurnSubject("<tenant>", "<conv>", "user"):       bus.StreamTurns,
		bus.TurnSubject("<tenant>", "<conv>", "agent"):      bus.StreamTurns,
		bus.DetectionSubject("<tenant>", "<conv>"):          bus.StreamDetections,
		bus.TaskSubject("<tenant>", "<conv>"):               bus.StreamTasks,
		bus.StepSubject("<tenant>", "<conv>"):               bus.StreamSteps,
		bus.EscalationSubject("<tenant>", "<conv>"):         bus.StreamOutcomes,
		bus.ReportSubject("<tenant>", "<conv>"):             bus.StreamOutcomes,
		bus.UnansweredSubject("<tenant>", "<conv>"):         bus.StreamOutcomes,
		bus.ReleaseSubject("<tenant>", "<conv>"):            bus.StreamOutcomes,
		bus.HandoffSubject("<tenant>", "<conv>"):            bus.StreamHandoff,
		bus.HandoffTimeoutSubject("<tenant>", "<conv>"):     bus.StreamHandoff,
		bus.DLQSubject("<stage>"):                           bus.StreamDLQ,
		bus.FeedbackSubject("<tenant>", "<conv>", "<kind>"): bus.StreamFeedback,
		"rein.labels.<tenant>.<conv>.<turn>.<labeller>":     bus.StreamLabels,
	}
	rows := strings.Split(table, "\n")[2:]
	if len(rows) != len(subjects) {
		t.Errorf("the table has %d rows, rein %d subjects", len(rows), len(subjects))
	}
	for subj, stream := range subjects {
		if !strings.Contains(table, "| `"+subj+"` | `"+stream+"` |") {
			t.Errorf("the table lacks %s in %s", subj, stream)
		}
	}
	for _, name := range []string{bus.DurableDetector, bus.DurableAgentWorker, bus.DurableEscalation, bus.DurableHandoffDesktops} {
		if !strings.Contains(doc, "`"+name+"`") {
			t.Errorf("rein's durable %s is not named", name)
		}
	}
	if !strings.Contains(doc, "`"+bus.InceptionSubject("<tenant>", "<conv>", "<turn>")+"`") {
		t.Error("the sidecar request subject is not rein's")
	}
	for _, reason := range []string{schemas.ReasonTransfer, schemas.ReasonMaxSteps, schemas.ReasonAgentUnavailable, schemas.UnansweredSuperseded, schemas.UnansweredFailed} {
		if !strings.Contains(doc, "`"+reason+"`") {
			t.Errorf("reason %s is not explained", reason)
		}
	}
	if !strings.Contains(doc, fmt.Sprintf("%d", schemas.MaxTextChars/1024)) && !strings.Contains(doc, "65,536") {
		t.Error("the text size limit is not documented")
	}

	// The handoff item's fields are the ones listed; the protocol names
	// rein's stream and consumer.
	proto := docExample(t, doc, "handoff-protocol")
	for _, s := range []string{handoffNext, handoffDelete} {
		if !strings.Contains(proto, "`"+s) {
			t.Errorf("the handoff protocol lacks %s", s)
		}
	}
	item, _ := json.Marshal(escalation.HandoffItem{})
	var fields map[string]any
	_ = json.Unmarshal(item, &fields)
	for f := range fields {
		if f == "traceparent" {
			continue // omitted when empty, not for desktops
		}
		if !strings.Contains(doc, "`"+f+"`") {
			t.Errorf("handoff item field %s is not listed", f)
		}
	}
	claim := docExample(t, doc, "python-claim")
	for _, s := range []string{`"` + bus.DurableHandoffDesktops + `"`, `"` + bus.StreamHandoff + `"`, "delete_msg", "ack()"} {
		if !strings.Contains(claim, s) {
			t.Errorf("the Python claim lacks %s", s)
		}
	}
}

// The JetStream API subjects of the handoff claim.
var (
	handoffNext   = "$JS.API.CONSUMER.MSG.NEXT." + bus.StreamHandoff + "." + bus.DurableHandoffDesktops
	handoffDelete = "$JS.API.STREAM.MSG.DELETE." + bus.StreamHandoff
)

// A new user's path through the guide, against a real rein serve (managed
// agent: the demo's scripted simulator; a handoff sink): the curl examples
// are run as written, the NATS message is published as shown, the sidecar
// question is asked, the conversation is read back, and a handoff item is
// claimed with the three documented API calls.
func TestIntegrationDocLive(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl is not installed: the guide's curl examples cannot be run")
	}
	t.Setenv("REIN_LLM_PROVIDER", "")
	doc := readIntegrationDoc(t)
	dir := t.TempDir()
	// The guide's way to start: its first line writes rein.yaml, its
	// second runs serve (paths as from the repository's root).
	start := strings.Split(docExample(t, doc, "serve"), "\n")
	if len(start) < 2 {
		t.Fatalf("the serve example has %d lines", len(start))
	}
	write := exec.Command("sh", "-c", start[0])
	write.Dir = dir
	if out, err := write.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", start[0], err, out)
	}
	fields := strings.Fields(start[1])
	at := slices.Index(fields, "serve")
	if at < 0 {
		t.Fatalf("%q does not run serve", start[1])
	}
	args := fields[at+1:]
	for i, a := range args {
		switch {
		case a == "rein.yaml":
			args[i] = filepath.Join(dir, a)
		case strings.HasPrefix(a, "cmd/"), strings.HasPrefix(a, "internal/"):
			args[i] = filepath.Join("..", "..", a)
		}
	}
	natsAddr, httpAddr := freePort(t), freePort(t)
	data := filepath.Join(dir, "data")
	// The guide's first NATS step: the tenant's ingress identity, made
	// before serve starts (serve loads it then).
	if out, err := runCLI(t, context.Background(), "keys", "add-tenant", "acme", "--data-dir", data); err != nil {
		t.Fatalf("keys add-tenant: %v\n%s", err, out)
	}
	stop := startServe(t, data, natsAddr, httpAddr, args...)
	defer stop()
	token, err := os.ReadFile(filepath.Join(data, "http-token"))
	if err != nil {
		t.Fatal(err)
	}
	sh := func(name string) string {
		t.Helper()
		cmd := exec.Command("sh", "-c", docExample(t, doc, name))
		cmd.Env = append(os.Environ(), "REIN=http://"+httpAddr, "TOKEN="+strings.TrimSpace(string(token)), "PATH="+filepath.Dir(curl)+":"+os.Getenv("PATH"))
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s: %v\n%s%s", name, err, out.String(), errb.String())
		}
		return out.String()
	}

	// 1. Both curl examples are stored.
	for _, name := range []string{"curl-binary", "curl-structured"} {
		var res ingress.IngressAccepted
		if out := sh(name); json.Unmarshal([]byte(out), &res) != nil || res.Sequence == 0 || res.Stream != bus.StreamTurns {
			t.Fatalf("%s answered %s", name, out)
		}
	}

	// 2. The NATS message, published as shown, is stored once.
	// Each step with the key the guide names for it.
	connectAs := func(identity string, opts ...nats.Option) *nats.Conn {
		t.Helper()
		key, err := nats.NkeyOptionFromSeed(natsserver.SeedFile(data, identity))
		if err != nil {
			t.Fatal(err)
		}
		c, err := nats.Connect("nats://"+natsAddr, append(opts, key)...)
		if err != nil {
			t.Fatalf("connect as %s: %v", identity, err)
		}
		t.Cleanup(c.Close)
		return c
	}
	nc := connectAs("ingress-acme", nats.CustomInboxPrefix(bus.TenantInbox("acme")))
	desk := connectAs(natsserver.IdentityHandoffDesktop)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var stored uint64
	for i, dup := range []bool{false, true} {
		ack, err := js.PublishMsg(ctx, docMessage(t, docExample(t, doc, "nats-user-turn")))
		if err != nil || ack.Duplicate != dup {
			t.Fatalf("publish %d: %+v, %v", i+1, ack, err)
		}
		stored = ack.Sequence
	}

	// 2b. The nats CLI snippet, run as written with the tenant's key: it
	// sends that very message, so JetStream answers "stored already".
	if cli := natsCLI(t); cli != "" {
		cmd := exec.Command("sh", "-c", docExample(t, doc, "nats-cli"))
		cmd.Dir = dir // the snippet's key path is data/nats-keys/…
		cmd.Env = append(os.Environ(), "NATS_URL=nats://"+natsAddr, "NATS_CONTEXT=", "PATH="+filepath.Dir(cli)+":"+os.Getenv("PATH"))
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("nats CLI snippet: %v\n%s%s", err, out.String(), errb.String())
		}
		var ack struct {
			Stream    string `json:"stream"`
			Seq       uint64 `json:"seq"`
			Duplicate bool   `json:"duplicate"`
		}
		if err := json.Unmarshal(lastJSONLine(out.String()), &ack); err != nil || ack.Stream != bus.StreamTurns || ack.Seq != stored || !ack.Duplicate {
			t.Errorf("nats CLI snippet answered %q (%v), want the duplicate ack of %s seq %d\n%s", out.String(), err, bus.StreamTurns, stored, errb.String())
		}
		t.Logf("nats CLI snippet: %s", lastJSONLine(out.String()))
	}

	// 3. The sidecar question about that turn: the documented answer shape,
	// and the seat request is an unsupported action to transfer.
	var a injector.Answer
	rtest.CheckFor(t, 30*time.Second, "a ready sidecar answer", func() bool {
		m, err := nc.Request(bus.InceptionSubject("acme", "c2", "1"), nil, 5*time.Second)
		if err != nil {
			return false
		}
		dec := json.NewDecoder(bytes.NewReader(m.Data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&a); err != nil {
			t.Fatalf("answer %s: %v", m.Data, err)
		}
		if err := schemas.Validate(schemas.DocSidecarAnswer, m.Data); err != nil {
			t.Fatalf("answer %s: %v", m.Data, err)
		}
		return a.Status == injector.StatusReady
	})
	if a.Inception == nil || a.Inception.ErrorType != "unsupported_action" || a.Inception.RecoveryTool != schemas.ToolTransfer || a.DetectionID != schemas.EventID("detection", "acme", "c2", 1) {
		t.Errorf("sidecar answer %+v", a)
	}

	// 4. Reading c1 back: its detection, the planted thought, the reply
	// and the escalation.
	var kinds []string
	rtest.CheckFor(t, 60*time.Second, "c1's detection, reply and escalation", func() bool {
		var c struct {
			Events []struct {
				Kind string `json:"kind"`
				Turn int    `json:"turn"`
			} `json:"events"`
		}
		if json.Unmarshal([]byte(sh("curl-read")), &c) != nil {
			return false
		}
		kinds = kinds[:0]
		for _, e := range c.Events {
			kinds = append(kinds, e.Kind)
		}
		return slices.Contains(kinds, "detection") && slices.Contains(kinds, "planted-thought") &&
			slices.Contains(kinds, "agent-turn") && slices.Contains(kinds, "escalation")
	})

	// 5. Claiming the handoff with the three documented calls.
	var msg *nats.Msg
	rtest.CheckFor(t, 60*time.Second, "a handoff item to fetch", func() bool {
		req := fmt.Sprintf(`{"batch":1,"expires":%d}`, int64(time.Second))
		m, err := desk.Request(handoffNext, []byte(req), 5*time.Second)
		if err != nil || m.Header.Get("Status") != "" || len(m.Data) == 0 {
			return false // 404 No Messages, 408 Request Timeout: none yet
		}
		msg = m
		return true
	})
	if err := schemas.Validate(schemas.DocHandoffItem, msg.Data); err != nil {
		t.Errorf("handoff item %s: %v", msg.Data, err)
	}
	var item map[string]any
	// c1 (a hotel) and c2 (a seat) are both handed over; either may come first.
	if err := json.Unmarshal(msg.Data, &item); err != nil || item["tenant"] != "acme" || (item["conversation"] != "c1" && item["conversation"] != "c2") ||
		item["reason"] != schemas.ReasonTransfer || item["transcript"] == nil {
		t.Fatalf("handoff item %s: %v", msg.Data, err)
	}
	// The transcript is read from REIN_TURNS under the escalation
	// stage's identity: the user's turn is in it.
	if lines, _ := item["transcript"].([]any); len(lines) == 0 || lines[0].(map[string]any)["role"] != schemas.RoleUser {
		t.Errorf("handoff item's transcript = %v, want the conversation's turns from its user turn", item["transcript"])
	}
	md, err := msg.Metadata()
	if err != nil {
		t.Fatal(err)
	}
	del := func() map[string]any {
		r, err := desk.Request(handoffDelete, []byte(`{"seq":`+strconv.FormatUint(md.Sequence.Stream, 10)+`}`), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var v map[string]any
		_ = json.Unmarshal(r.Data, &v)
		return v
	}
	if v := del(); v["success"] != true {
		t.Fatalf("take: %v", v)
	}
	if v := del(); v["success"] == true || v["error"] == nil {
		t.Errorf("a second take succeeded: %v", v)
	}
	if err := msg.Respond([]byte("+ACK")); err != nil {
		t.Fatal(err)
	}
}

// natsCLI returns the path of the nats CLI, or "" when it is not installed
// (the guide's CLI snippet is then only checked statically). With
// REIN_REQUIRE_NATS_CLI=1 (CI builds the CLI) a missing CLI fails the test.
func natsCLI(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("nats")
	if err != nil {
		if os.Getenv("REIN_REQUIRE_NATS_CLI") == "1" {
			t.Fatal("the nats CLI is not on PATH and REIN_REQUIRE_NATS_CLI=1 says the guide's CLI snippet must run (go install github.com/nats-io/natscli/nats@v0.5.0)")
		}
		t.Log("the nats CLI is not on PATH: its snippet is checked, not run")
		return ""
	}
	return p
}

// lastJSONLine returns the last line of out that holds a JSON object.
func lastJSONLine(out string) []byte {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); strings.HasPrefix(l, "{") {
			return []byte(l)
		}
	}
	return nil
}

// pythonBlocks returns the body of every ```python block of the guide.
func pythonBlocks(doc string) []string {
	var blocks []string
	for _, part := range strings.Split(doc, "```python\n")[1:] {
		body, _, ok := strings.Cut(part, "```")
		if ok {
			blocks = append(blocks, dedent(body))
		}
	}
	return blocks
}

// The guide's Python snippets cannot run here (nats-py is not installable
// offline); each is at least compiled by python3, so a syntax error (an
// await outside a coroutine, say) fails the build.
func TestIntegrationDocPythonCompiles(t *testing.T) {
	t.Parallel()
	blocks := pythonBlocks(readIntegrationDoc(t))
	if len(blocks) < 3 {
		t.Fatalf("the guide has %d Python blocks, want the publish, subscribe and claim examples", len(blocks))
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed: the Python snippets cannot be compiled")
	}
	dir := t.TempDir()
	for i, b := range blocks {
		f := filepath.Join(dir, fmt.Sprintf("snippet%d.py", i+1))
		if err := os.WriteFile(f, []byte(b), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(py, "-m", "py_compile", f)
		cmd.Env = append(os.Environ(), "PYTHONPYCACHEPREFIX="+filepath.Join(dir, "cache"))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("Python block %d does not compile: %v\n%s\n%s", i+1, err, out, b)
		}
	}
}
