package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/reinception/rein/inception"
	"github.com/reinception/rein/internal/app/eval"
	"github.com/reinception/rein/internal/app/eval/generate"
	"github.com/reinception/rein/internal/app/eval/run"
	"github.com/reinception/rein/internal/llm"
)

func newEvalScenariosCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "scenarios",
		Short: "Work with evaluation scenario sets: generate one with a model",
	}
	cmd.AddCommand(newEvalGenerateCmd())
	return cmd
}

type evalGenerateFlags struct {
	model                                  evalModel
	domain, split, out, tauBench, taxonomy string
	record, replayFrom                     string
	types, styles                          []string
	seed                                   int64
	tasks, concurrency, attempts           int
	clean, allTasks                        bool
}

func newEvalGenerateCmd() *cobra.Command {
	var f evalGenerateFlags
	cmd := &cobra.Command{
		Use:   "generate --provider P --model M --domain airline|retail --out FILE",
		Short: "Write error openings for τ-bench tasks with a model, validate them, and keep the good ones as scenarios",
		Long: `generate asks a model, for every τ-bench task of the domain, every error type and both follow-up
styles, for an error opening: the user's turn that carries the error, an agent reply that mishandles
it, and the user's follow-up (lazy_feedback: a vague complaint; double_check: asks to check again).
The prompt is rein's own (internal/app/eval/generate/prompt.md).

Each opening is validated: the evidence the model gives must be quoted from the error turn, name no
tool and give the agent no orders; an anaphora must use a referring word, name no id and have at
least two candidates in the user's records; a multiple interpretation needs two readings, a
contradiction two quoted statements; the mishandling reply must not already recover (no recovery
tool, no hand-over, no refusal, no clarifying question); the follow-up must have its style. The
accepted openings are written to --out in the scenario format (rein eval run --scenarios reads it);
the rejected ones, each with its reason, to the sibling FILE.rejected.jsonl. With --clean (the
default) the file also holds one clean scenario per task, to measure false activations. A rejected opening is
asked for again, the model shown the reason, up to --attempts answers.

Only the tasks that change the database and need no outputs are used (27 of the 50 airline test tasks,
73 of the 115 retail ones): a reconstruction of the paper's filter, whose criteria are not published;
--all-tasks uses every task. --tasks N keeps N of them drawn with --seed (a cheap first run); --record DIR writes every model call
to DIR/cassettes/scenario_generator.jsonl and --replay-from DIR answers from it offline, writing the
same files byte for byte. --provider scripted runs a built-in simulator (generic openings, no model)
so the whole path can be seen offline.`,
		Example: `  rein eval scenarios generate --provider scripted --domain airline --tasks 3 --out gen.jsonl
  rein eval scenarios generate --provider openai --model gpt-4o --domain retail --tasks 10 --seed 7 \
      --out retail.jsonl --record runs/gen-retail
  rein eval scenarios generate --provider openai --base-url http://127.0.0.1:8000/v1 --model qwen2.5-7b-instruct \
      --domain airline --out airline.jsonl
  rein eval scenarios generate --domain retail --seed 7 --tasks 10 --out again.jsonl --replay-from runs/gen-retail`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runEvalGenerate(cmd, &f) },
	}
	fl := cmd.Flags()
	f.model.who = ""
	fl.StringVar(&f.model.provider, "provider", llm.ProviderScripted, "the generator's model: openai (any OpenAI-compatible server), anthropic, or scripted (offline: rein's simulator, not a model)")
	fl.StringVar(&f.model.model, "model", "", "model name")
	fl.StringVar(&f.model.baseURL, "base-url", "", "provider base URL, e.g. http://127.0.0.1:8000/v1")
	fl.StringVar(&f.model.script, "script", "", "with --provider scripted, a simulator script instead of the built-in one")
	fl.StringVar(&f.domain, "domain", "", "τ-bench domain: airline or retail (required)")
	fl.StringVar(&f.split, "split", "test", "τ-bench task file: test, dev or train")
	fl.StringVar(&f.out, "out", "", "scenario file to write (required); the rejected openings go to its .rejected.jsonl sibling")
	fl.Int64Var(&f.seed, "seed", 1, "draws the --tasks subset and is the variation number of every request")
	fl.IntVar(&f.tasks, "tasks", 0, "keep this many of the filtered tasks, drawn with --seed (0: every one)")
	fl.BoolVar(&f.allTasks, "all-tasks", false, "use every task of the split; by default only tasks that change the database and need no outputs (a reconstruction of the paper's filter)")
	fl.StringSliceVar(&f.types, "types", nil, "error types to write (default all six)")
	fl.StringSliceVar(&f.styles, "styles", nil, "follow-up styles: lazy_feedback, double_check (default both)")
	fl.BoolVar(&f.clean, "clean", true, "also write one clean scenario per task (the unmodified task, no model call), for false activations and over-deferral")
	fl.IntVar(&f.attempts, "attempts", 2, "answers asked for per opening: after a rejection the model sees the reason and tries again")
	fl.IntVar(&f.concurrency, "concurrency", 4, "model calls at once (the output order does not depend on it)")
	fl.StringVar(&f.tauBench, "taubench", eval.DefaultTauBenchDir, "τ-bench data directory")
	fl.StringVar(&f.taxonomy, "taxonomy", "", "taxonomy YAML whose definitions and examples the prompt quotes (default: the embedded one)")
	fl.StringVar(&f.record, "record", "", "record every model call to DIR/cassettes/scenario_generator.jsonl (DIR is created; a cassette already there is refused)")
	fl.StringVar(&f.replayFrom, "replay-from", "", "answer every model call from DIR/cassettes/scenario_generator.jsonl, offline")
	return cmd
}

func runEvalGenerate(cmd *cobra.Command, f *evalGenerateFlags) error {
	switch {
	case f.out == "":
		return errors.New("--out FILE is required: the scenario file to write")
	case f.domain == "":
		return errors.New("--domain airline|retail is required")
	case f.record != "" && f.replayFrom != "":
		return errors.New("give at most one of --record and --replay-from")
	}
	// Refuse an --out that cannot be written before any model call is paid for.
	if fi, err := os.Stat(filepath.Dir(f.out)); err != nil || !fi.IsDir() {
		return fmt.Errorf("--out %s: its directory %s does not exist; create it first", f.out, filepath.Dir(f.out))
	}
	tax := inception.DefaultTaxonomy()
	if f.taxonomy != "" {
		var err error
		if tax, err = inception.LoadTaxonomy(f.taxonomy); err != nil {
			return err
		}
	}
	var record, replay string
	if f.record != "" {
		dir := filepath.Join(f.record, run.CassettesDir)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		record = filepath.Join(dir, generate.Purpose+".jsonl")
		if fi, err := os.Stat(record); err == nil && fi.Size() > 0 {
			return fmt.Errorf("--record %s: %s already holds a recording; record into a fresh directory", f.record, record)
		}
	}
	if f.replayFrom != "" {
		replay = filepath.Join(f.replayFrom, run.CassettesDir, generate.Purpose+".jsonl")
		if _, err := os.Stat(replay); errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("--replay-from %s: no recording at %s", f.replayFrom, replay)
		}
	}
	client, label, err := f.model.client(generate.Purpose, record, replay, generate.Script)
	if err != nil {
		return err
	}
	stderr := cmd.ErrOrStderr()
	tty := false
	if fl, ok := stderr.(*os.File); ok {
		tty = term.IsTerminal(int(fl.Fd()))
	}
	if strings.HasPrefix(label, llm.ProviderScripted) {
		fmt.Fprintf(stderr, "note: the scripted generator (%s) writes generic openings to show the path working; it is not a model\n", label)
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	cfg := generate.Config{Domain: f.domain, Split: f.split, TauBench: f.tauBench, Tasks: f.tasks, Seed: f.seed,
		Types: trimAll(f.types), Styles: trimAll(f.styles), Concurrency: f.concurrency, Taxonomy: tax, Attempts: f.attempts, Clean: f.clean,
		AllTasks: f.allTasks}
	o, err := generate.Generate(ctx, cfg, client, run.NewProgress(stderr, tty).WithUnit("openings", "rejected"))
	if err != nil {
		return err
	}
	if err := generate.Write(f.out, o, cfg); err != nil {
		return err
	}
	filter := "that change the database and need no outputs"
	if f.allTasks {
		filter = "(--all-tasks)"
	}
	fmt.Fprintf(cmd.OutOrStdout(), "%s %s: kept %d of %d tasks %s\n", f.domain, f.split, o.TasksKept, o.TasksInSplit, filter)
	fmt.Fprintf(cmd.OutOrStdout(), "%d accepted and %d clean → %s; %d rejected → %s\n", len(o.Accepted), len(o.Clean), f.out,
		len(o.Rejected), generate.RejectedPath(f.out))
	if len(o.Accepted)+len(o.Clean) > 0 {
		fmt.Fprintf(cmd.OutOrStdout(), "play them: rein eval run --scenarios %s --out DIR\n", f.out)
	}
	return nil
}

func trimAll(list []string) []string {
	var out []string
	for _, s := range list {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
