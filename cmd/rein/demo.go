package main

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/reinception/rein/internal/app/eval"
	"github.com/reinception/rein/internal/llm"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
)

//go:embed demodata/conversations.yaml
var demoConversationsYAML []byte

//go:embed demodata/agent.yaml
var demoAgentScript []byte

// demoTenant is the tenant every demo conversation belongs to.
const demoTenant = "demo"

type demoConversation struct {
	ID    string   `yaml:"id"`
	About string   `yaml:"about"`
	Turns []string `yaml:"turns"`
	// Expect is the error type each turn is written to show ("" none).
	Expect []string `yaml:"expect"`
}

// demoSummary is what `rein demo --json` prints.
type demoSummary struct {
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

func init() { register(newDemoCmd) }

func newDemoCmd() *cobra.Command {
	var sf serverFlags
	var so stageOptions
	var keep, asJSON bool
	var turnTimeout time.Duration
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Play sample conversations through the whole pipeline and show what rein detected, planted and did",
		Long: `demo starts an embedded NATS server and every stage in this process, plays the bundled sample
conversations over the shipped airline sample data — each user-induced error type of the default
taxonomy at least once, plus clean conversations — and prints, for every turn, the detection, the
planted thought, the agent's tool calls, escalations and reports, then a summary.

Offline it uses the rules inception module and the scripted agent (a deterministic simulator, not a
model). With REIN_LLM_PROVIDER (openai or anthropic), REIN_LLM_MODEL, REIN_LLM_BASE_URL and a key
set, the inception module (--module llm by default then) and the agent use that model.

--keep leaves the server, /metrics and the dashboard running after the summary (Ctrl-C to stop).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			file, err := loadFileConfig(configFlag(cmd))
			if err != nil {
				return err
			}
			if err := applySources(cmd, file); err != nil {
				return err
			}
			// The demo's conversations are made up: its dashboard shows
			// their text unless told otherwise.
			if !cmd.Flags().Changed("dashboard-reveal") && os.Getenv(envName("dashboard-reveal")) == "" {
				sf.dashboardReveal = true
			}
			var convs struct {
				Conversations []demoConversation `yaml:"conversations"`
			}
			if err := yamlStrict(demoConversationsYAML, &convs); err != nil {
				return fmt.Errorf("demo conversations: %w", err)
			}
			for _, c := range convs.Conversations {
				if len(c.Expect) != len(c.Turns) {
					return fmt.Errorf("demo conversation %s: %d turns but %d expected labels", c.ID, len(c.Turns), len(c.Expect))
				}
			}
			if sf.dataDir == "" {
				dir, err := os.MkdirTemp("", "rein-demo-")
				if err != nil {
					return err
				}
				if !keep {
					defer os.RemoveAll(dir)
				}
				sf.dataDir = dir
			}
			inferModule(cmd, &so.modules)
			lc := so.modules.llmConfig()
			live := lc.Provider != ""
			if live && flagSource(cmd.Flags().Lookup("module")) == sourceDefault {
				// Any model configured, a script or a cassette included: the
				// demo shows it deciding too.
				so.modules.module = "llm"
			}
			agent := "scripted simulator (demodata/agent.yaml)"
			if !live && so.agentScript == "" {
				script, err := llm.ParseScript(demoAgentScript)
				if err != nil {
					return fmt.Errorf("demo agent script: %w", err)
				}
				so.agentModel = llm.NewScripted(script)
			} else if live {
				agent = lc.Provider + " model " + lc.Model
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			if flagSource(cmd.Flags().Lookup("log-level")) == sourceDefault {
				sf.logLevel = "warn" // keep the transcript readable; problems still show
			}
			rt, err := startRuntime(ctx, &sf, file, "rein-demo")
			if err != nil {
				return err
			}
			defer rt.close()
			rt.stages = &so
			names, _ := resolveStages([]string{"all"})
			sctx, cancelStages := context.WithCancel(ctx)
			stagesDone := make(chan error, 1)
			go func() { stagesDone <- runStages(sctx, rt, names) }()

			col, err := newDemoCollector(rt.nc, demoTenant)
			if err != nil {
				cancelStages()
				return err
			}
			defer col.close()
			out := cmd.OutOrStdout()
			style := plainStyle
			if f, ok := out.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
				style = ttyStyle
			}
			if !asJSON {
				fmt.Fprintf(out, "%srein demo%s — %d conversations, inception module %q, agent: %s\n",
					style.bold, style.reset, len(convs.Conversations), so.modules.module, agent)
				fmt.Fprintf(out, "data %s · NATS %s · metrics and dashboard http://%s/\n\n", sf.dataDir, sf.listen, rt.http.Addr())
			}
			err = playDemo(ctx, rt, col, convs.Conversations, turnTimeout)
			sum := summarize(col, convs.Conversations, so.modules.module, agent)
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				_ = enc.Encode(sum)
			} else {
				printDemo(out, style, col, convs.Conversations)
				printSummary(out, style, sum)
			}
			if err != nil {
				cancelStages()
				<-stagesDone
				return err
			}
			if keep {
				fmt.Fprintf(cmd.ErrOrStderr(), "\nkeeping rein running: NATS %s, http://%s/ (metrics at /metrics). Ctrl-C to stop.\n", sf.listen, rt.http.Addr())
				<-ctx.Done()
			}
			cancelStages()
			return <-stagesDone
		},
	}
	sf.bind(cmd, "")
	cmd.Flags().Lookup("data-dir").Usage = "JetStream storage (default: a fresh temporary directory, removed afterwards unless --keep)"
	so.bind(cmd.Flags(), "rules")
	cmd.Flags().BoolVar(&keep, "keep", false, "leave the server, /metrics and the dashboard running after the summary")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON summary object instead of the transcript")
	cmd.Flags().DurationVar(&turnTimeout, "turn-timeout", 60*time.Second, "how long to wait for the agent's reply to one turn")
	return cmd
}

// playDemo publishes each conversation's user turns one at a time
// (conversations in parallel) and waits for each turn to finish: the agent
// replied, or the conversation is with a human and the turn's task exists.
func playDemo(ctx context.Context, rt *proc, col *demoCollector, convs []demoConversation, timeout time.Duration) error {
	var wg sync.WaitGroup
	errs := make(chan error, len(convs))
	for _, c := range convs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			escalated := false
			for i, text := range c.Turns {
				turn := i + 1
				col.mu.Lock()
				col.turn(c.ID, turn).User, col.turn(c.ID, turn).Sent = text, time.Now()
				col.mu.Unlock()
				ev, err := schemas.NewEvent(schemas.TypeTurn, schemas.EventID("turn", demoTenant, c.ID, turn)+"-user", "/rein/demo",
					schemas.Meta{Tenant: demoTenant, Conversation: c.ID, Turn: turn}, schemas.Turn{Role: schemas.RoleUser, Text: text, Turn: turn})
				if err == nil {
					_, err = rt.pub.Publish(ctx, streams.StreamTurns, streams.TurnSubject(demoTenant, c.ID, schemas.RoleUser), &ev)
				}
				if err != nil {
					errs <- fmt.Errorf("conversation %s turn %d: %w", c.ID, turn, err)
					return
				}
				wctx, cancel := context.WithTimeout(ctx, timeout)
				err = col.wait(wctx, func() bool {
					t := col.turn(c.ID, turn)
					return t.Reply != nil || (escalated && t.Task != nil) || col.failed[c.ID] != ""
				})
				cancel()
				col.mu.Lock()
				why := col.failed[c.ID]
				col.mu.Unlock()
				switch {
				case why != "":
					errs <- fmt.Errorf("conversation %s turn %d was dead-lettered: %s", c.ID, turn, why)
					return
				case err != nil:
					errs <- fmt.Errorf("conversation %s turn %d: no reply within %s", c.ID, turn, timeout)
					return
				}
				col.mu.Lock()
				escalated = escalated || col.turn(c.ID, turn).Escalated != nil
				col.mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

type demoStyle struct{ bold, dim, warn, ok, reset string }

var (
	plainStyle = demoStyle{}
	ttyStyle   = demoStyle{bold: "\033[1m", dim: "\033[2m", warn: "\033[33m", ok: "\033[32m", reset: "\033[0m"}
)

func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func printDemo(w io.Writer, st demoStyle, col *demoCollector, convs []demoConversation) {
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

func summarize(col *demoCollector, convs []demoConversation, module, agent string) demoSummary {
	col.mu.Lock()
	defer col.mu.Unlock()
	s := demoSummary{Conversations: len(convs), Activations: map[string]int{}, DeadLetters: col.dlq, Module: module, Agent: agent,
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
				s.Mismatches = append(s.Mismatches, fmt.Sprintf("%s turn %d: written to show %s, detected %s", c.ID, i+1, orNone(c.Expect[i]), orNone(label)))
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

func printSummary(w io.Writer, st demoStyle, s demoSummary) {
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
