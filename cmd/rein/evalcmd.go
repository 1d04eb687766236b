package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/reinception/rein/inception"
	"github.com/reinception/rein/inception/planted"
	"github.com/reinception/rein/internal/app/eval"
	"github.com/reinception/rein/internal/app/eval/run"
	"github.com/reinception/rein/internal/llm"
	"github.com/reinception/rein/internal/telemetry"
)

func init() { register(newEvalCmd) }

func newEvalCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "eval",
		Short: "Measure whether rein makes an agent recover from user errors: play scenarios, report Pass@1 and more",
		Long: `eval measures Reasoning Inception the way its paper does, on your models: τ-bench tasks whose
user commits an error, played through rein's real pipeline under four conditions (none, rein, npi,
self-refine), scored by task success, with intervals, activation and false-activation rates, McNemar
tests, κ between trials, tokens and latency.

  rein eval scenarios generate --provider openai --model M --domain retail --tasks 10 --out s.jsonl
                                                write and validate error openings with a model
  rein eval run --bundled --out runs/first      play the bundled scenarios offline (scripted simulators)
  rein eval report runs/first                   write report.json, report.md and the charts
  rein eval report --compare runs/a runs/b      put two runs side by side`,
	}
	cmd.AddCommand(newEvalRunCmd(), newEvalReportCmd(), newEvalScenariosCmd())
	return cmd
}

// evalModel is one model of the run: the agent's or the user simulator's.
type evalModel struct {
	who                              string
	provider, model, baseURL, script string
}

func (m *evalModel) bind(cmd *cobra.Command, who, what string) {
	m.who = who
	fs := cmd.Flags()
	fs.StringVar(&m.provider, who+"-provider", llm.ProviderScripted, what+": openai (any OpenAI-compatible server), anthropic, replay or scripted (offline: rein's simulator, not a model)")
	fs.StringVar(&m.model, who+"-model", "", what+": model name")
	fs.StringVar(&m.baseURL, who+"-base-url", "", what+": provider base URL, e.g. http://127.0.0.1:8000/v1")
	fs.StringVar(&m.script, who+"-script", "", what+": with --"+who+"-provider scripted, a simulator script (see internal/llm) instead of rein's built-in simulator")
}

// flag is the name of one of the model's flags: --agent-provider, or
// --provider for a model without a prefix (the scenario generator's).
func (m *evalModel) flag(name string) string {
	if m.who == "" {
		return "--" + name
	}
	return "--" + m.who + "-" + name
}

// client builds the model, recording to record or answering from
// cassette when set. A nil client (scripted without a script) means the
// runner's built-in simulator.
func (m *evalModel) client(purpose, record, cassette string, builtin func() (llm.Client, error)) (llm.Client, string, error) {
	var c llm.Client
	var err error
	switch {
	case cassette != "":
		c, err = llm.New(llm.Config{Provider: llm.ProviderReplay, Cassette: cassette, Endpoint: purpose}, nil)
	case m.provider == llm.ProviderScripted && m.script == "":
		if builtin == nil {
			return nil, "scripted " + run.SimAgentModel, nil
		}
		c, err = builtin()
	default:
		cfg := llm.ConfigFromEnv()
		cfg.Provider, cfg.Model, cfg.BaseURL, cfg.Script, cfg.Endpoint = m.provider, m.model, m.baseURL, m.script, purpose
		c, err = llm.New(cfg, nil)
	}
	if err != nil {
		return nil, "", fmt.Errorf("%s %s: %w", m.flag("provider"), m.provider, err)
	}
	label := c.Provider() + " " + c.Model()
	if record != "" {
		if c, err = llm.NewRecorder(c, record); err != nil {
			return nil, "", err
		}
	}
	return c, label, nil
}

type evalRunFlags struct {
	scenarios, out, tauBench, trigger, plantAt, logLevel, replayFrom string
	userPrompt                                                       string
	agentTemperature, userTemperature                                float64
	bundled, quick, record                                           bool
	conditions, heldOut                                              []string
	trials, maxTurns, concurrency, maxSteps                          int
	turnTimeout, detectorTimeout                                     time.Duration
	agent, user                                                      evalModel
	modules                                                          moduleFlags
}

func newEvalRunCmd() *cobra.Command {
	var f evalRunFlags
	cmd := &cobra.Command{
		Use:   "run (--bundled | --scenarios FILE) --out DIR",
		Short: "Play scenarios through rein's pipeline under each condition and record every play in a run directory",
		Long: `run plays every scenario, under every condition, --trials times, through rein's real pipeline: for
each condition and domain it starts an embedded JetStream server with the detector, injector,
agent-worker and escalation stages as "rein serve" runs them, publishes each user turn to
REIN_TURNS and reads the detection, the planted thought, the agent's tool calls and its reply back
from the streams.

A play: the scenario's opening is published as recorded turns — the error turn (user turn 1; the
agent's reply to it is the opening's recorded mishandling, the same in every condition), then the
follow-up — and the user simulator continues from the τ-bench task's instruction until it writes
###STOP###, the conversation goes to a human, or --max-turns. A clean scenario starts with the
simulator. The final database is scored with the task's τ-bench reward.

Conditions:
  none         no inception (the module never activates)
  rein         the inception module (--module rules, llm or cascade) plants recovery reasoning
  npi          naive prompt injection: the taxonomy and its recovery plans appended to the agent's system prompt
  self-refine  the agent's drafted reply is checked once per user turn against the listed errors
Trigger (--trigger): fixed judges only the error turn (a clean scenario's first turn), dynamic
judges every user turn, as rein does in production.

Models: --agent-* and --user-* choose the agent's and the user simulator's models, the
--inception-* flags the module's (for --module llm or cascade); keys come from OPENAI_API_KEY,
ANTHROPIC_API_KEY or REIN_LLM_API_KEY. The default, scripted, runs rein's simulators: a scripted
agent that follows a planted plan (and then the task's ground truth) and mishandles otherwise, and
a scripted user. Their figures measure the harness, not a model; the report says so.

The run directory holds run.json, scenarios.jsonl, results.jsonl (one line per finished play) and
plays/<condition>/<scenario>.t<trial>.json (the whole conversation). Rerunning the same command
resumes: finished plays are skipped. --record writes every model call to cassettes/; --replay-from
answers them from another run's cassettes, offline. When every play is finished, run writes the
report (see rein eval report).`,
		Example: `  rein eval run --bundled --conditions none,rein,npi,self-refine --trials 2 --out runs/offline
  rein eval run --scenarios my-scenarios.jsonl --trials 3 --out runs/gpt \
      --agent-provider openai --agent-model gpt-4o --user-provider openai --user-model gpt-4o \
      --module llm --inception-provider anthropic --inception-model claude-sonnet-4-5 --record`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runEval(cmd, &f) },
	}
	fs := cmd.Flags()
	fs.BoolVar(&f.bundled, "bundled", false, "play the bundled scenario set: the set near the paper's size (scenarios/paper.jsonl) when the binary has it, else the quick set")
	fs.BoolVar(&f.quick, "quick", false, "play the quick bundled set: 30 hand-written scenarios (24 error scenarios, 6 clean)")
	fs.StringVar(&f.scenarios, "scenarios", "", "JSONL scenario file (format: internal/app/eval/README.md)")
	fs.StringVar(&f.out, "out", "", "run directory (created; an existing one is resumed)")
	fs.StringSliceVar(&f.conditions, "conditions", eval.Conditions, "conditions to play: none, rein, npi, self-refine; and the ablation rein-no-tool (rein with the recovery tools withheld from the agent)")
	fs.IntVar(&f.trials, "trials", 3, "k: plays of each scenario per condition (pass^k needs k ≥ 2; the report takes one outcome per scenario, the majority over trials)")
	fs.StringVar(&f.trigger, "trigger", run.TriggerFixed, "when the inception module judges: fixed (one planting point, see --plant-at) or dynamic (every user turn)")
	fs.StringVar(&f.plantAt, "plant-at", run.PlantOpening, "planting point of the fixed trigger: opening (after the recorded error turn, mishandling and follow-up, the module judging all three: the paper's protocol) or error-turn (the bare error turn, before the mishandling: an ablation)")
	fs.StringVar(&f.userPrompt, "user-prompt", run.UserPromptTauBench, "user simulator prompt: taubench (never invents what the task's instruction does not give, as τ-bench's) or rein (rein's earlier prompt: answers what the instruction does not settle)")
	fs.Float64Var(&f.agentTemperature, "agent-temperature", run.DefaultAgentTemperature, "sampling temperature of every agent call (recorded in run.json)")
	fs.Float64Var(&f.userTemperature, "user-temperature", run.DefaultUserTemperature, "sampling temperature of every user simulator call (recorded in run.json)")
	fs.IntVar(&f.maxTurns, "max-turns", 12, "user turns per conversation before it is cut")
	fs.IntVar(&f.concurrency, "concurrency", 4, "scenarios played at once on a pipeline")
	fs.DurationVar(&f.turnTimeout, "turn-timeout", 2*time.Minute, "how long one turn may take before its play fails")
	fs.StringVar(&f.tauBench, "taubench", eval.DefaultTauBenchDir, "τ-bench data directory: tasks, domain data and policies")
	fs.BoolVar(&f.record, "record", false, "record every model call (agent, inception, user) to DIR/cassettes/<purpose>.jsonl")
	fs.StringVar(&f.replayFrom, "replay-from", "", "answer model calls from RUN_DIR/cassettes of a recorded run (offline; a purpose without a cassette uses its flags)")
	fs.StringVar(&f.logLevel, "log-level", "error", "log level of the pipelines' stages")
	fs.IntVar(&f.maxSteps, "max-steps", 30, "agent model calls per turn before the turn escalates")
	fs.DurationVar(&f.detectorTimeout, "detector-timeout", 30*time.Second, "deadline of one inception call")
	fs.StringVar(&f.modules.module, "module", inception.ModuleRules, "rein's inception module: rules (offline), llm or cascade")
	fs.StringVar(&f.modules.taxonomy, "taxonomy", "", "taxonomy YAML (default: the embedded one); its held_out flags decide seen/unseen, and npi and self-refine are told about it")
	fs.StringSliceVar(&f.heldOut, "held-out", eval.PaperHeldOutTypes, "error types held out of the taxonomy (default the paper's pair; none for no held-out type): the module, npi and self-refine are not shown them, and their scenarios are reported as unseen")
	fs.StringVar(&f.modules.plan, "plan", planted.PlanTemplate, "planted reasoning: template or generated")
	fs.StringVar(&f.modules.provider, "inception-provider", "", "inception model provider for --module llm/cascade (default $REIN_LLM_PROVIDER)")
	fs.StringVar(&f.modules.model, "inception-model", "", "inception model name (default $REIN_LLM_MODEL)")
	fs.StringVar(&f.modules.baseURL, "inception-base-url", "", "inception provider base URL (default $REIN_LLM_BASE_URL)")
	f.agent.bind(cmd, "agent", "the task agent's model")
	f.user.bind(cmd, "user", "the user simulator's model")
	return cmd
}

func runEval(cmd *cobra.Command, f *evalRunFlags) error {
	switch {
	case f.out == "":
		return errors.New("--out DIR is required: the run directory")
	case countTrue(f.bundled, f.quick, f.scenarios != "") != 1:
		return errors.New("give exactly one of --bundled, --quick or --scenarios FILE")
	}
	tax := inception.DefaultTaxonomy()
	if f.modules.taxonomy != "" {
		var err error
		if tax, err = inception.LoadTaxonomy(f.modules.taxonomy); err != nil {
			return err
		}
	}
	f.heldOut = heldOutTypes(f.heldOut)
	if len(f.heldOut) > 0 {
		var err error
		if tax, err = tax.WithHeldOut(f.heldOut...); err != nil {
			return fmt.Errorf("--held-out: %w", err)
		}
		f.modules.heldOut = f.heldOut
	}
	opts := eval.LoadOptions{HeldOut: func(t string) bool {
		et, ok := tax.Type(t)
		return !ok || et.HeldOut
	}}
	var set []eval.Scenario
	switch {
	case f.bundled:
		set = eval.Bundled(opts)
	case f.quick:
		set = eval.BundledQuick(opts)
	default:
		raw, err := os.ReadFile(f.scenarios)
		if err != nil {
			return err
		}
		if set, err = eval.LoadScenarios(bytes.NewReader(raw), opts); err != nil {
			return fmt.Errorf("%s: %w", f.scenarios, err)
		}
	}
	cassette := func(purpose string) (record, replay string, err error) {
		if f.record {
			dir := filepath.Join(f.out, run.CassettesDir)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return "", "", err
			}
			record = filepath.Join(dir, purpose+".jsonl")
		}
		if f.replayFrom != "" {
			p := filepath.Join(f.replayFrom, run.CassettesDir, purpose+".jsonl")
			if _, err := os.Stat(p); err == nil {
				replay = p
			} else if !errors.Is(err, fs.ErrNotExist) {
				return "", "", err
			}
		}
		return record, replay, nil
	}
	rec, rep, err := cassette(llm.PurposeAgent)
	if err != nil {
		return err
	}
	agent, agentLabel, err := f.agent.client(llm.PurposeAgent, rec, rep, nil)
	if err != nil {
		return err
	}
	if rec, rep, err = cassette(llm.PurposeUser); err != nil {
		return err
	}
	user, userLabel, err := f.user.client(llm.PurposeUser, rec, rep, run.SimUser)
	if err != nil {
		return err
	}
	deps := run.Deps{Agent: agent, User: user}
	// The label names the module whether or not rein is played now, so
	// that a later run adding the rein condition resumes this directory.
	inceptionLabel := f.modules.module
	if f.modules.module != inception.ModuleRules {
		lc := f.modules.llmConfig()
		inceptionLabel += " " + lc.Provider + " " + lc.Model
	}
	if containsString(f.conditions, eval.ConditionRein) {
		if f.modules.record, f.modules.cassette, err = cassette(llm.PurposeInception); err != nil {
			return err
		}
		if f.modules.cassette != "" {
			f.modules.provider = llm.ProviderReplay
		}
		f.modules.wrapClient = run.Estimating
		f.modules.tauBench = storeCatalogue(f.tauBench)
		m, mtax, err := f.modules.build(telemetry.NewRegistry())
		if err != nil {
			return err
		}
		deps.Module, tax = m, mtax
	}
	note := ""
	if strings.HasPrefix(agentLabel, llm.ProviderScripted) || strings.HasPrefix(userLabel, llm.ProviderScripted) {
		note = fmt.Sprintf("Scripted simulators played this run (agent: %s; user: %s): these figures measure the harness, not a model; their token counts are estimates (one token per four characters).", agentLabel, userLabel)
	}
	stderr := cmd.ErrOrStderr()
	tty := false
	if fl, ok := stderr.(*os.File); ok {
		tty = term.IsTerminal(int(fl.Fd()))
	}
	deps.Progress = run.NewProgress(stderr, tty)
	deps.Start = evalRuntime{logLevel: f.logLevel, detectorTimeout: f.detectorTimeout, maxSteps: f.maxSteps}.starter()
	if note != "" {
		fmt.Fprintln(stderr, "note:", note)
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	sum, err := run.Run(ctx, run.Config{
		Scenarios: set, Conditions: f.conditions, Trials: f.trials, Trigger: f.trigger, PlantAt: f.plantAt, MaxTurns: f.maxTurns,
		Concurrency: f.concurrency, TurnTimeout: f.turnTimeout, TauBench: f.tauBench, Dir: f.out, Taxonomy: tax,
		AgentLabel: agentLabel, InceptionLabel: inceptionLabel, UserLabel: userLabel, Note: note,
		UserPrompt: f.userPrompt, AgentTemperature: &f.agentTemperature, UserTemperature: &f.userTemperature,
	}, deps)
	out := cmd.OutOrStdout()
	if err != nil && sum.Played+sum.Failed+sum.Resumed == 0 {
		return err // nothing was played: a configuration or run directory problem
	}
	fmt.Fprintf(out, "played %d, resumed %d, failed %d; run directory %s\n", sum.Played, sum.Resumed, sum.Failed, f.out)
	if err != nil {
		return fmt.Errorf("%w\n(rerun the same command to retry the plays that did not finish)", err)
	}
	r, err := run.WriteRunReport(f.out)
	if err != nil {
		return err
	}
	printReportSummary(out, f.out, r)
	return nil
}

func countTrue(bs ...bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

// heldOutTypes trims the --held-out names; "none" (or nothing) holds out
// no type.
func heldOutTypes(names []string) []string {
	var out []string
	for _, n := range names {
		if n = strings.TrimSpace(n); n != "" && n != "none" {
			out = append(out, n)
		}
	}
	return out
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if strings.TrimSpace(x) == s {
			return true
		}
	}
	return false
}

// printReportSummary prints the headline of a report: error scenarios
// only, Δ against none first; clean scenarios apart.
func printReportSummary(w io.Writer, dir string, r *eval.RunReport) {
	if r.Note != "" {
		fmt.Fprintln(w, "note:", r.Note)
	}
	fmt.Fprintf(w, "%d scenarios × %d trials; headline over error scenarios only\n", r.Scenarios, r.Trials)
	fmt.Fprintf(w, "%-12s %-28s %-22s %-12s %-11s %s\n", "condition", "Δ pass@1 vs none [95% CI]", "pass@1 [95% CI]", "mcnemar p", "activation", "clean: broke, false act./judged turn")
	for _, c := range r.ConditionNames() {
		cr := r.Conditions[c]
		m := cr.Metrics
		delta := "—"
		if m.DeltaVsNone != nil {
			delta = fmt.Sprintf("%+.3f [%+.3f, %+.3f]", m.DeltaVsNone.Value, m.DeltaVsNone.Low, m.DeltaVsNone.High)
		}
		clean := "—"
		if cr.Clean != nil {
			clean = fmt.Sprintf("%d, %s", cr.Clean.Broke, rate(cr.Clean.FalseActivationRate))
		}
		fmt.Fprintf(w, "%-12s %-28s %-22s %-12s %-11s %s\n", c, delta,
			fmt.Sprintf("%.3f [%.3f, %.3f]", m.PassAt1.Value, m.PassAt1.Low, m.PassAt1.High),
			pValue(m.McNemarP), rate(m.ActivationRate), clean)
	}
	if r.MultipleTests != "" {
		fmt.Fprintln(w, "note:", r.MultipleTests)
	}
	for _, c := range r.ConditionNames() {
		cr := r.Conditions[c]
		n := cr.Fallbacks
		if cr.Clean != nil {
			n += cr.Clean.Fallbacks
		}
		if n > 0 {
			fmt.Fprintf(w, "note: %s: %d decisions were the cascade's rules fallback (the inception model could not judge); see fallback_decisions\n", c, n)
		}
	}
	fmt.Fprintf(w, "report: %s, %s, %s, %s\n", filepath.Join(dir, eval.ReportJSON), filepath.Join(dir, eval.ReportMarkdown),
		filepath.Join(dir, eval.ChartPassAt1), filepath.Join(dir, eval.ChartActivationType))
}

func pValue(p *float64) string {
	if p == nil {
		return "—"
	}
	return fmt.Sprintf("%.3g", *p)
}

func rate(p *float64) string {
	if p == nil {
		return "—"
	}
	return fmt.Sprintf("%.3f", *p)
}

func newEvalReportCmd() *cobra.Command {
	var compare bool
	var out string
	cmd := &cobra.Command{
		Use:   "report RUN_DIR | report --compare RUN_A RUN_B",
		Short: "Write report.json, report.md and the SVG charts of a run directory, or compare two runs",
		Long: `report reads a run directory's results.jsonl (written by rein eval run) and writes, into it,
report.json (per condition: pass_at_1 with ci_low/ci_high, pass_hat_k, activation_rate,
false_activation_rate, over_deferral_rate, tokens_per_turn, latency_ms_p50, mcnemar_p against rein,
kappa; the same by error type, domain and seen/unseen), report.md (the tables, with what each
number means) and two charts: pass_at_1.svg and activation_by_type.svg. The format is documented
in internal/app/eval/README.md.

With --compare it puts two runs side by side (a taxonomy or model change): per condition, overall
and per error type, with the Pass@1 difference (B − A), printed as Markdown (and written to --out).`,
		Example: `  rein eval report runs/offline
  rein eval report --compare runs/taxonomy-v1 runs/taxonomy-v2 --out compare.md`,
		RunE: func(cmd *cobra.Command, args []string) error {
			w := cmd.OutOrStdout()
			if !compare {
				if len(args) != 1 {
					return errors.New("give one run directory (or --compare RUN_A RUN_B)")
				}
				r, err := run.WriteRunReport(args[0])
				if err != nil {
					return err
				}
				printReportSummary(w, args[0], r)
				return nil
			}
			if len(args) != 2 {
				return errors.New("--compare needs two run directories")
			}
			a, err := run.BuildReport(args[0])
			if err != nil {
				return err
			}
			b, err := run.BuildReport(args[1])
			if err != nil {
				return err
			}
			md := eval.Compare(a, b, args[0], args[1]).Markdown()
			if out != "" {
				if err := os.WriteFile(out, []byte(md), 0o644); err != nil {
					return err
				}
			}
			_, err = io.WriteString(w, md)
			return err
		},
	}
	cmd.Flags().BoolVar(&compare, "compare", false, "compare two run directories")
	cmd.Flags().StringVar(&out, "out", "", "with --compare, also write the comparison to this file")
	return cmd
}

// storeCatalogue is the directory whose product catalogue the played
// module reads: the τ-bench directory when it has a store, as the detector
// stage of a retail deployment reads the agent's data ("" for none; the
// options apply to retail dialogues only).
func storeCatalogue(tauBench string) string {
	if _, err := os.Stat(filepath.Join(tauBench, "retail", "products.json")); err != nil {
		return ""
	}
	return tauBench
}
