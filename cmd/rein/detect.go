package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/reinception/rein/agentworker/taubench"
	"github.com/reinception/rein/inception"
	"github.com/reinception/rein/inception/llmmodule"
	"github.com/reinception/rein/internal/llm"
	"github.com/reinception/rein/streams/natsserver"
)

func init() { register(newDetectCmd) }

// detectInput is one line of the rein detect input file.
type detectInput struct {
	ID       string `json:"id"`
	Domain   string `json:"domain"`
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
	// A labelled corpus's gold answer and notes (inception/testdata/corpus)
	// are accepted and not used, so the corpus can be judged as it is.
	Label json.RawMessage `json:"label,omitempty"`
	Notes string          `json:"notes,omitempty"`
}

// detectOutput is one line of rein detect's output.
type detectOutput struct {
	ID        string  `json:"id"`
	Rein      bool    `json:"rein"`
	ErrorType *string `json:"error_type"`
	Evidence  string  `json:"evidence"`
	Reasoning string  `json:"reasoning"`
	Module    string  `json:"module"`
	LatencyMS float64 `json:"latency_ms"`
	Failed    bool    `json:"failed"`
}

type detectOptions struct {
	modules moduleFlags
	domain  string
	tools   string
	input   string
	summary bool
	timeout time.Duration
	eval    evalOptions
	labels  labelsEval
}

func newDetectCmd() *cobra.Command {
	var o detectOptions
	cmd := &cobra.Command{
		Use:   "detect",
		Short: "Run an inception module over a JSONL file of dialogues",
		Long: `detect judges the last user turn of each dialogue in a JSONL file with the same
inception modules as the detector stage, to try a taxonomy or a model on transcripts.

Each input line is {"id": "...", "domain": "airline", "messages": [{"role": "user"|"assistant",
"content": "..."}]} whose last message is the user turn to judge (system and tool messages, not part of
what user and agent said to each other, are skipped). Each output line on stdout is
{"id", "rein", "error_type", "evidence", "reasoning", "module", "latency_ms", "failed"}.
A bad line is reported on stderr with its line number, the other lines are still judged, and
the exit code is then 1. --domain gives the built-in tool catalogue of the τ-bench-compatible
domains (airline, retail); --tools takes an OpenAI-style tool list instead.

With --eval, detect scores a module on a labelled corpus instead (lines that also carry
"label": {"rein", "error_type"}, see inception/testdata/corpus/README.md): per-type precision,
recall and F1, false activations on clean turns, the confusion matrix, latency and, for the cascade
and its gate alone (--module cascade-gate, offline), the gate's pass rate on erroneous and clean
turns. --eval takes a JSONL file or a corpus directory whose --split (dev, dev2 … dev8, or test) is read.

With --eval --labels, detect measures the deployment's own quality instead: precision and recall per
type and overall from operators' labels in REIN_LABELS (rein label), each label of the review queue
weighted by 1/π, with 95 % Wilson intervals and the number of labels behind each (docs/labels.md).`,
		Example: `  rein detect --module rules --domain airline --input dialogues.jsonl --summary
  rein detect --eval inception/testdata/corpus --split dev --module cascade-gate
  rein detect --eval labelled.jsonl --module rules --json
  rein detect --eval --labels --tenant acme --since 7d
  rein detect --module llm --provider openai --base-url http://127.0.0.1:8000/v1 --model qwen --domain retail --input d.jsonl`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := applySources(cmd, nil); err != nil {
				return err
			}
			if o.eval.path == labelsEvalFlag {
				o.labels.on, o.eval.path = true, ""
			}
			if o.labels.on {
				return runDetectLabels(cmd.Context(), &o.labels, o.eval.json, cmd.OutOrStdout())
			}
			if o.eval.trainGate != "" || o.eval.trainTyped != "" {
				return runTrainGate(o, cmd.ErrOrStderr())
			}
			if len(o.eval.loao) > 0 {
				return runLOAO(cmd.Context(), o, cmd.OutOrStdout())
			}
			if o.eval.path != "" {
				return runDetectEval(cmd.Context(), o, cmd.OutOrStdout(), cmd.ErrOrStderr())
			}
			if o.input == "" {
				return errors.New("rein detect needs --input (dialogues to judge) or --eval (a labelled corpus to score)")
			}
			return runDetect(cmd.Context(), o, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	fs := cmd.Flags()
	o.modules.bind(fs, inception.ModuleRules)
	fs.StringVar(&o.domain, "domain", "", "domain whose built-in tool catalogue the agent has (airline, retail); a line's own \"domain\" wins")
	fs.StringVar(&o.tools, "tools", "", "OpenAI-style tool list (JSON) to use instead of the built-in catalogue")
	fs.StringVar(&o.input, "input", "", "JSONL file of dialogues (- for stdin)")
	fs.BoolVar(&o.summary, "summary", false, "print a per-error-type table on stderr")
	fs.DurationVar(&o.timeout, "timeout", 30*time.Second, "deadline of one inception call")
	fs.StringVar(&o.modules.tauBench, "taubench", "", "τ-bench data directory (the root or its retail directory): the rules module, and the cascade's gate, check the product options a user asks for against its products.json (default: no catalogue, option values unchecked)")
	o.eval.bind(fs)
	o.labels.bind(fs)
	o.labels.nats.bind(cmd, natsserver.DefaultURL)
	cmd.MarkFlagsMutuallyExclusive("input", "eval")
	cmd.MarkFlagsMutuallyExclusive("input", "labels")
	return cmd
}

// toolSource resolves the agent's tool catalogue of a domain, once each.
type toolSource struct {
	fixed []llm.Tool
	cache map[string][]llm.Tool
}

func (s *toolSource) get(domain string) ([]llm.Tool, error) {
	if s.fixed != nil {
		return s.fixed, nil
	}
	if t, ok := s.cache[domain]; ok {
		return t, nil
	}
	t, err := taubench.ToolCatalogue(domain)
	if err != nil {
		return nil, fmt.Errorf("no built-in tool catalogue for domain %q (pass --tools): %w", domain, err)
	}
	s.cache[domain] = t
	return t, nil
}

// setup builds detect's module and taxonomy and the tool catalogue source
// (--tools, else each domain's own).
func (o detectOptions) setup() (inception.Module, *inception.Taxonomy, *toolSource, error) {
	module, tax, err := o.build()
	if err != nil {
		return nil, nil, nil, err
	}
	src := &toolSource{cache: map[string][]llm.Tool{}}
	if o.tools != "" {
		if src.fixed, err = llm.LoadToolList(o.tools); err != nil {
			return nil, nil, nil, err
		}
	}
	return module, tax, src, nil
}

func runDetect(ctx context.Context, o detectOptions, stdin io.Reader, stdout, stderr io.Writer) error {
	module, tax, src, err := o.setup()
	if err != nil {
		return err
	}
	in := stdin
	if o.input != "-" {
		f, err := os.Open(o.input)
		if err != nil {
			return fmt.Errorf("--input: %w", err)
		}
		defer f.Close()
		in = f
	}
	sum := detectSummary{byType: map[string]int{}}
	enc := json.NewEncoder(stdout)
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	lineNo := 0
	for sc.Scan() {
		lineNo++
		raw := strings.TrimSpace(sc.Text())
		if raw == "" {
			continue
		}
		input, err := parseDetectLine(raw, o.domain, src)
		if err != nil {
			fmt.Fprintf(stderr, "rein detect: %s line %d: %v\n", o.input, lineNo, err)
			sum.bad++
			continue
		}
		callCtx, cancel := context.WithTimeout(ctx, o.timeout)
		start := time.Now()
		d, err := module.Detect(callCtx, input.in)
		latency := time.Since(start)
		cancel()
		out := detectOutput{ID: input.id, Module: module.Name(), LatencyMS: float64(latency.Microseconds()) / 1000}
		if err != nil {
			// Fail open like the stage: no activation, failed.
			fmt.Fprintf(stderr, "rein detect: %s line %d (id %q): %v\n", o.input, lineNo, input.id, err)
			sum.errors++
			out.Failed = true
		} else {
			out.Rein, out.Evidence, out.Reasoning, out.Failed = d.Rein, d.Evidence, d.Reasoning, d.Failed
			if d.Rein {
				et := d.ErrorType
				out.ErrorType = &et
			}
			if d.Failed && d.FailReason != "" {
				fmt.Fprintf(stderr, "rein detect: %s line %d (id %q): answer refused: %s\n", o.input, lineNo, input.id, d.FailReason)
			}
		}
		sum.add(out, latency)
		if err := enc.Encode(out); err != nil {
			return fmt.Errorf("write output: %w", err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read %s after line %d: %w", o.input, lineNo, err)
	}
	if o.summary {
		sum.print(stderr, module, tax)
	}
	if sum.bad > 0 || sum.errors > 0 {
		return &exitError{code: 1, err: fmt.Errorf("%d bad input lines, %d failed inception calls", sum.bad, sum.errors)}
	}
	return nil
}

type parsedLine struct {
	id string
	in inception.Input
}

var errBadLine = errors.New("bad input line")

func parseDetectLine(raw, defaultDomain string, src *toolSource) (parsedLine, error) {
	var line detectInput
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&line); err != nil {
		return parsedLine{}, fmt.Errorf("%w: not a JSON dialogue object: %w", errBadLine, err)
	}
	domain := line.Domain
	if domain == "" {
		domain = defaultDomain
	}
	if domain == "" {
		return parsedLine{}, fmt.Errorf("%w: no \"domain\" and no --domain", errBadLine)
	}
	if len(line.Messages) == 0 {
		return parsedLine{}, fmt.Errorf("%w: \"messages\" is empty", errBadLine)
	}
	in := inception.Input{Tenant: "cli", Domain: domain}
	for i, m := range line.Messages {
		switch m.Role {
		case llm.RoleUser:
			in.Dialogue = append(in.Dialogue, inception.Utterance{Role: inception.RoleUser, Text: m.Content})
		case llm.RoleAssistant:
			in.Dialogue = append(in.Dialogue, inception.Utterance{Role: inception.RoleAgent, Text: m.Content})
		case llm.RoleSystem, llm.RoleTool:
			// Not the surface dialogue: the inception module sees what user
			// and agent said to each other (chat logs often carry both).
		default:
			return parsedLine{}, fmt.Errorf("%w: messages[%d].role is %q, want user, assistant, system or tool", errBadLine, i, m.Role)
		}
	}
	if len(in.Dialogue) == 0 {
		return parsedLine{}, fmt.Errorf("%w: no user or assistant message", errBadLine)
	}
	if in.Dialogue[len(in.Dialogue)-1].Role != inception.RoleUser {
		return parsedLine{}, fmt.Errorf("%w: the last message must be the user turn to judge", errBadLine)
	}
	tools, err := src.get(domain)
	if err != nil {
		return parsedLine{}, fmt.Errorf("%w: %w", errBadLine, err)
	}
	in.Tools = tools
	return parsedLine{id: line.ID, in: in}, nil
}

type detectSummary struct {
	judged, activated, failed, bad, errors int
	byType                                 map[string]int
	latency                                time.Duration
}

func (s *detectSummary) add(o detectOutput, latency time.Duration) {
	s.judged++
	s.latency += latency
	switch {
	case o.Rein:
		s.activated++
		s.byType[*o.ErrorType]++
	case o.Failed:
		s.failed++
	}
}

func (s *detectSummary) print(w io.Writer, m inception.Module, tax *inception.Taxonomy) {
	pct := func(n int) string {
		if s.judged == 0 {
			return "-"
		}
		return fmt.Sprintf("%.1f%%", 100*float64(n)/float64(s.judged))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "module %s, taxonomy %s\n", m.Name(), tax.Version)
	fmt.Fprintln(tw, "error type\tturns\tshare")
	names := make([]string, 0, len(tax.ErrorTypes))
	for _, et := range tax.ErrorTypes {
		names = append(names, et.Name)
	}
	for n := range s.byType {
		if _, ok := tax.Type(n); !ok {
			names = append(names, n)
		}
	}
	sort.SliceStable(names, func(i, j int) bool { return s.byType[names[i]] > s.byType[names[j]] })
	for _, n := range names {
		fmt.Fprintf(tw, "%s\t%d\t%s\n", n, s.byType[n], pct(s.byType[n]))
	}
	fmt.Fprintf(tw, "(activated)\t%d\t%s\n", s.activated, pct(s.activated))
	fmt.Fprintf(tw, "(clear)\t%d\t%s\n", s.judged-s.activated-s.failed, pct(s.judged-s.activated-s.failed))
	fmt.Fprintf(tw, "(failed)\t%d\t%s\n", s.failed, pct(s.failed))
	fmt.Fprintf(tw, "(judged)\t%d\t\n", s.judged)
	if s.bad > 0 {
		fmt.Fprintf(tw, "(bad lines)\t%d\t\n", s.bad)
	}
	if s.judged > 0 {
		fmt.Fprintf(tw, "(mean latency)\t%.3f ms\t\n", float64(s.latency.Microseconds())/1000/float64(s.judged))
	}
	if c, ok := m.(*llmmodule.Cascade); ok {
		st := c.Stats()
		fmt.Fprintf(tw, "(sent to model)\t%d\t%.1f%%\n", st.Passed, 100*st.Share)
	}
	_ = tw.Flush()
}
