package demo

import (
	"cmp"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/reinception/rein/internal/app/eval"
	"github.com/reinception/rein/internal/llm"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
	"github.com/reinception/rein/streams/natsserver"
)

//go:embed demodata/conversations.yaml
var conversationsYAML []byte

//go:embed demodata/agent.yaml
var agentScript []byte

// Tenant is the tenant every demo conversation belongs to.
const Tenant = "demo"

// Conversation is one bundled sample conversation.
type Conversation struct {
	ID    string   `yaml:"id"`
	About string   `yaml:"about"`
	Turns []string `yaml:"turns"`
	// Expect is the error type each turn is written to show ("" none).
	Expect []string `yaml:"expect"`
}

// Summary is what a demo did (`rein demo --json` prints it).
type Summary struct {
	Conversations int            `json:"conversations"`
	Turns         int            `json:"turns"`
	Decisions     int            `json:"decisions"`
	Activations   map[string]int `json:"activations"`
	Failed        int            `json:"failed"`
	Injections    int            `json:"injections"`
	Escalations   int            `json:"escalations"`
	Reports       int            `json:"reports"`
	DeadLetters   int            `json:"dead_letters"`
	P50Ms         float64        `json:"p50_ms"`
	P99Ms         float64        `json:"p99_ms"`
	Module        string         `json:"module"`
	Agent         string         `json:"agent"`
	// Labels is, per conversation, the error type detected at each user
	// turn ("" none); Mismatches the turns labelled otherwise than their
	// conversation is written to show.
	Labels     map[string][]string `json:"labels"`
	Mismatches []string            `json:"mismatches,omitempty"`
}

// Conversations are the bundled sample conversations, each turn with the
// error type it is written to show.
func Conversations() ([]Conversation, error) {
	var convs struct {
		Conversations []Conversation `yaml:"conversations"`
	}
	if err := yaml.UnmarshalWithOptions(conversationsYAML, &convs, yaml.Strict()); err != nil {
		return nil, fmt.Errorf("demo conversations: %s", yaml.FormatError(err, false, true))
	}
	for _, c := range convs.Conversations {
		if len(c.Expect) != len(c.Turns) {
			return nil, fmt.Errorf("demo conversation %s: %d turns but %d expected labels", c.ID, len(c.Turns), len(c.Expect))
		}
	}
	return convs.Conversations, nil
}

// ScriptedAgent is the demo's offline task agent: the scripted simulator
// (demodata/agent.yaml), not a model.
func ScriptedAgent() (llm.Client, error) {
	script, err := llm.ParseScript(agentScript)
	if err != nil {
		return nil, fmt.Errorf("demo agent script: %w", err)
	}
	return llm.NewScripted(script), nil
}

// Options are one demo's: the labels of the inception module and the agent
// in use, how long one turn may take, and what to write.
type Options struct {
	Module, Agent string
	TurnTimeout   time.Duration
	// JSON writes the summary as one JSON object instead of the
	// transcript and the summary, in Style.
	JSON  bool
	Style Style
}

// Play plays convs through the running pipeline (the stages consume what
// pub publishes; nc hears what they produce), then writes the transcript
// and summary, or the JSON summary, to w. It returns the summary and the
// first turn that failed (dead-lettered, or no reply within TurnTimeout).
func Play(ctx context.Context, nc *nats.Conn, pub *streams.Publisher, convs []Conversation, o Options, w io.Writer) (Summary, error) {
	col, err := NewCollector(nc, Tenant)
	if err != nil {
		return Summary{}, err
	}
	defer col.Close()
	js, err := natsserver.NewJetStream(nc)
	if err != nil {
		return Summary{}, err
	}
	err = play(ctx, pub, js, col, convs, o.TurnTimeout)
	sum := summarize(col, convs, o.Module, o.Agent)
	if o.JSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(sum)
	} else {
		printDemo(w, o.Style, col, convs)
		printSummary(w, o.Style, sum)
	}
	return sum, err
}

// play publishes each conversation's user turns one at a time
// (conversations in parallel) and waits for each turn to finish: the agent
// replied, or the conversation is with a human and the turn's task exists.
func play(ctx context.Context, pub *streams.Publisher, js jetstream.JetStream, col *Collector, convs []Conversation, timeout time.Duration) error {
	var wg sync.WaitGroup
	errs := make(chan error, len(convs))
	for _, c := range convs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			escalated := false
			for i, text := range c.Turns {
				turn := i + 1
				col.Sent(c.ID, turn, text)
				ev, err := schemas.NewEvent(schemas.TypeTurn, schemas.EventID("turn", Tenant, c.ID, turn)+"-user", "/rein/demo",
					schemas.Meta{Tenant: Tenant, Conversation: c.ID, Turn: turn}, schemas.Turn{Role: schemas.RoleUser, Text: text, Turn: turn})
				if err == nil {
					_, err = pub.Publish(ctx, bus.StreamTurns, bus.TurnSubject(Tenant, c.ID, schemas.RoleUser), &ev)
				}
				if err != nil {
					errs <- fmt.Errorf("conversation %s turn %d: %w", c.ID, turn, err)
					return
				}
				wctx, cancel := context.WithTimeout(ctx, timeout)
				t, why, err := col.WaitRead(wctx, js, c.ID, turn, RefillEvery, func(t *Turn) bool {
					return t.Reply != nil || (escalated && t.Task != nil)
				}, nil)
				cancel()
				switch {
				case why != "":
					errs <- fmt.Errorf("conversation %s turn %d was dead-lettered: %s", c.ID, turn, why)
					return
				case err != nil:
					errs <- fmt.Errorf("conversation %s turn %d: no reply within %s", c.ID, turn, timeout)
					return
				}
				escalated = escalated || t.Escalated != nil
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// Style is how the transcript is marked up: Plain, or TTY for a terminal.
type Style struct{ bold, dim, warn, ok, reset string }

// Plain and TTY are the transcript's styles.
var (
	Plain = Style{}
	TTY   = Style{bold: "\033[1m", dim: "\033[2m", warn: "\033[33m", ok: "\033[32m", reset: "\033[0m"}
)

func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func printDemo(w io.Writer, st Style, col *Collector, convs []Conversation) {
	col.mu.Lock()
	defer col.mu.Unlock()
	for _, c := range convs {
		fmt.Fprintf(w, "%s── %s%s  %s(%s)%s\n", st.bold, c.ID, st.reset, st.dim, c.About, st.reset)
		for i := range c.Turns {
			t := col.turn(c.ID, i+1)
			fmt.Fprintf(w, "  user  › %s\n", t.User)
			if d := t.Detection; d != nil {
				switch {
				case d.Failed:
					fmt.Fprintf(w, "          %sdetection: failed (%s) — no injection%s\n", st.warn, d.FailReason, st.reset)
				case d.Rein:
					fmt.Fprintf(w, "          %sdetection: %s (%s), evidence %q%s  %s[%s, %.2f ms]%s\n", st.warn, d.ErrorType, d.Category, d.Evidence, st.reset, st.dim, d.Module, d.LatencyMS, st.reset)
				default:
					fmt.Fprintf(w, "          %sdetection: clear  [%s, %.2f ms]%s\n", st.dim, d.Module, d.LatencyMS, st.reset)
				}
			}
			steps := append([]schemas.Step(nil), t.Steps...)
			sort.Slice(steps, func(a, b int) bool { return steps[a].Step < steps[b].Step })
			for _, s := range steps {
				switch s.Kind {
				case schemas.StepThink:
					label := "think"
					if s.Injected {
						label = "planted think"
					}
					fmt.Fprintf(w, "          %s%s:%s %s\n", st.ok, label, st.reset, clip(thoughtOf(s), 200))
				case schemas.StepToolCall:
					if s.Name != schemas.ToolThink {
						fmt.Fprintf(w, "          tool  %s %s\n", s.Name, clip(string(s.Arguments), 120))
					}
				case schemas.StepToolResult:
					if s.Output != "" {
						fmt.Fprintf(w, "          %s  ↳ %s%s\n", st.dim, clip(s.Output, 110), st.reset)
					}
				}
			}
			for _, r := range t.Reports {
				fmt.Fprintf(w, "          %sreport:%s %s\n", st.warn, st.reset, clip(r.Report, 150))
			}
			if e := t.Escalated; e != nil {
				fmt.Fprintf(w, "          %sescalated to a human (%s):%s %s\n", st.warn, e.Reason, st.reset, clip(e.Summary, 150))
			}
			if t.Reply != nil {
				fmt.Fprintf(w, "  agent ‹ %s\n", clip(t.Reply.Text, 300))
			}
		}
		fmt.Fprintln(w)
	}
}

func thoughtOf(s schemas.Step) string {
	var a struct {
		Thought string `json:"thought"`
	}
	if json.Unmarshal(s.Arguments, &a) == nil && a.Thought != "" {
		return a.Thought
	}
	return string(s.Arguments)
}

func summarize(col *Collector, convs []Conversation, module, agent string) Summary {
	col.mu.Lock()
	defer col.mu.Unlock()
	s := Summary{Conversations: len(convs), Activations: map[string]int{}, DeadLetters: col.dlq, Module: module, Agent: agent,
		Labels: map[string][]string{}}
	var lat []time.Duration
	for _, c := range convs {
		for i := range c.Turns {
			t := col.turn(c.ID, i+1)
			s.Turns++
			label := ""
			if d := t.Detection; d != nil && d.Rein {
				label = d.ErrorType
			}
			s.Labels[c.ID] = append(s.Labels[c.ID], label)
			if i < len(c.Expect) && c.Expect[i] != label {
				s.Mismatches = append(s.Mismatches, fmt.Sprintf("%s turn %d: written to show %s, detected %s", c.ID, i+1, cmp.Or(c.Expect[i], "none"), cmp.Or(label, "none")))
			}
			if d := t.Detection; d != nil {
				s.Decisions++
				if d.Failed {
					s.Failed++
				}
				if d.Rein {
					s.Activations[d.ErrorType]++
				}
			}
			if t.Task != nil && t.Task.Inception != nil {
				s.Injections++
			}
			if t.Escalated != nil {
				s.Escalations++
			}
			s.Reports += len(t.Reports)
			if t.Reply != nil && !t.Sent.IsZero() {
				lat = append(lat, t.RepliedAt.Sub(t.Sent))
			}
		}
	}
	s.P50Ms, s.P99Ms = eval.Ms(eval.Percentile(lat, 50)), eval.Ms(eval.Percentile(lat, 99))
	return s
}

func printSummary(w io.Writer, st Style, s Summary) {
	fmt.Fprintf(w, "%ssummary%s\n", st.bold, st.reset)
	fmt.Fprintf(w, "  conversations %d · user turns %d · decisions %d (failed %d) · injections %d\n", s.Conversations, s.Turns, s.Decisions, s.Failed, s.Injections)
	types := make([]string, 0, len(s.Activations))
	for t := range s.Activations {
		types = append(types, t)
	}
	sort.Strings(types)
	parts := make([]string, 0, len(types))
	for _, t := range types {
		parts = append(parts, fmt.Sprintf("%s %d", t, s.Activations[t]))
	}
	if len(parts) == 0 {
		parts = append(parts, "none")
	}
	fmt.Fprintf(w, "  activations: %s\n", strings.Join(parts, ", "))
	fmt.Fprintf(w, "  escalations %d · reports %d · dead letters %d\n", s.Escalations, s.Reports, s.DeadLetters)
	fmt.Fprintf(w, "  turn latency (user turn published → agent reply stored): p50 %.1f ms, p99 %.1f ms\n", s.P50Ms, s.P99Ms)
	if len(s.Mismatches) == 0 {
		fmt.Fprintf(w, "  every turn labelled with the type it is written to show\n")
		return
	}
	fmt.Fprintf(w, "  %d turn(s) labelled otherwise than written:\n", len(s.Mismatches))
	for _, m := range s.Mismatches {
		fmt.Fprintf(w, "    %s\n", m)
	}
}

// Bold marks s up as the style's bold.
func (st Style) Bold(s string) string { return st.bold + s + st.reset }
