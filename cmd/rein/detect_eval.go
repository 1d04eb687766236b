package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"

	"github.com/reinception/rein/inception"
	"github.com/reinception/rein/inception/learned"
	"github.com/reinception/rein/inception/llmmodule"
	"github.com/reinception/rein/inception/offline"
	"github.com/reinception/rein/inception/rules"
)

// moduleCascadeGate is rein detect's name for the cascade's recall gate
// judged alone (offline): an activation is a turn the gate sends to the
// model.
const moduleCascadeGate = "cascade-gate"

// Corpus splits --split accepts: dev and its held-aside extensions dev2 to
// dev9 (all for tuning; dev3 to dev8 each by another author; dev9 was the
// test split until issue 37), and test (reporting only).
var evalSplits = []string{"dev", "dev2", "dev3", "dev4", "dev5", "dev6", "dev7", "dev8", "dev9", "test"}

// evalOptions are rein detect's --eval flags.
type evalOptions struct {
	path       string
	split      string
	json       bool
	showErrors bool
	// trainGate and trainSplits: --train-gate writes a gate classifier
	// trained on --eval's --train-splits.
	trainGate   string
	trainSplits []string
	gateRecall  float64
	// trainTyped writes the typed classifier trained on --train-splits;
	// loao measures leave-one-author-out over author groups of splits,
	// and outOfAuthor measures models trained on all of loao's splits on
	// other splits.
	trainTyped  string
	cleanBudget float64
	loao        []string
	outOfAuthor []string
}

func (e *evalOptions) bind(fs *pflag.FlagSet) {
	fs.StringVar(&e.path, "eval", "", "score the module on a labelled JSONL file, or on a corpus directory's --split file, instead of judging --input")
	fs.StringVar(&e.split, "split", "dev", "with --eval on a directory: the split to read (dev, dev2 … dev9 or test; never tune on test)")
	fs.BoolVar(&e.json, "json", false, "with --eval: print the report as JSON instead of a table")
	fs.BoolVar(&e.showErrors, "show-errors", false, "with --eval: list the misjudged turns (id, gold, predicted, evidence) on stderr")
	fs.StringVar(&e.trainGate, "train-gate", "", "train the cascade gate's classifier on --eval (a labelled file, or a corpus directory's --train-splits) and write its weights to this file")
	fs.Float64Var(&e.gateRecall, "gate-recall", 0.97, "with --train-gate: the share of erroneous turns the classifier alone must pass in cross-validation; its threshold is the highest that does")
	fs.StringVar(&e.trainTyped, "train-typed", "", "train the rules module's typed classifier on --eval's --train-splits (folds by author choose its threshold) and write its weights to this file")
	fs.Float64Var(&e.cleanBudget, "clean-budget", 0.01, "with --train-typed or --loao: the share of clean turns the typed classifier may add as false activations in cross-validation")
	fs.StringSliceVar(&e.loao, "loao", nil, "with --eval DIR: measure leave-one-author-out over these authors, each a split or splits joined by + (dev+dev2,dev3,dev4): rules alone and with the typed classifier, and the gate (never test)")
	fs.StringSliceVar(&e.outOfAuthor, "out-of-author", nil, "with --loao: also train on all of --loao's splits and measure on each of these splits (a new author's, before training on it)")
	fs.StringSliceVar(&e.trainSplits, "train-splits", []string{"dev", "dev2", "dev3", "dev4", "dev5", "dev6"}, "with --train-gate and a corpus directory: the splits to train on (never test)")
}

// file resolves --eval and --split to the JSONL file to read.
func (e *evalOptions) file() (string, error) {
	st, err := os.Stat(e.path)
	if err != nil {
		return "", fmt.Errorf("--eval: %w", err)
	}
	if !st.IsDir() {
		return e.path, nil
	}
	if !slices.Contains(evalSplits, e.split) {
		return "", fmt.Errorf("--split %q: want one of %s", e.split, strings.Join(evalSplits, ", "))
	}
	return filepath.Join(e.path, e.split+".jsonl"), nil
}

// build returns detect's module and taxonomy: the shared module flags, plus
// cascade-gate, the cascade's gate alone.
func (o detectOptions) build() (inception.Module, *inception.Taxonomy, error) {
	if o.modules.module != moduleCascadeGate {
		return o.modules.build(prometheus.NewRegistry())
	}
	rules := o.modules
	rules.module = inception.ModuleRules
	_, tax, err := rules.build(prometheus.NewRegistry())
	if err != nil {
		return nil, nil, err
	}
	gate, err := o.modules.options().Gate(tax)
	return gate, tax, err
}

// trainingExamples loads the labelled turns to train on: --eval's file,
// or a corpus directory's splits (each turn's Author from its split). The
// test split is refused: it is for reporting only.
func trainingExamples(o detectOptions, splits []string) ([]inception.Example, []string, *inception.Taxonomy, error) {
	_, tax, src, err := o.setup()
	if err != nil {
		return nil, nil, nil, err
	}
	paths := []string{o.eval.path}
	if st, err := os.Stat(o.eval.path); err == nil && st.IsDir() {
		paths = nil
		for _, split := range splits {
			if split == "test" {
				return nil, nil, nil, errors.New("the test split is never trained on nor measured against while training (--train-splits, --loao, --out-of-author)")
			}
			e := o.eval
			e.split = split
			path, err := e.file()
			if err != nil {
				return nil, nil, nil, err
			}
			paths = append(paths, path)
		}
	}
	var examples []inception.Example
	var sources []string
	for _, path := range paths {
		ex, err := loadLabelled(path, o.domain, src)
		if err != nil {
			return nil, nil, nil, err
		}
		author := inception.CorpusAuthor(strings.TrimSuffix(filepath.Base(path), ".jsonl"))
		for i := range ex {
			ex[i].Author = author
		}
		examples = append(examples, ex...)
		sources = append(sources, filepath.Base(path))
	}
	return examples, sources, tax, nil
}

// runTrainGate trains the cascade gate's classifier (--train-gate) or the
// rules module's typed classifier (--train-typed) on the labelled files
// of --train-splits and writes it.
func runTrainGate(o detectOptions, stderr io.Writer) error {
	flag, out := "--train-gate", o.eval.trainGate
	if o.eval.trainTyped != "" {
		flag, out = "--train-typed", o.eval.trainTyped
	}
	if o.eval.path == "" {
		return fmt.Errorf("%s needs --eval (a corpus directory or labelled file)", flag)
	}
	examples, sources, tax, err := trainingExamples(o, o.eval.trainSplits)
	if err != nil {
		return err
	}
	var model *learned.GateModel
	if o.eval.trainTyped != "" {
		products, perr := o.modules.options().Products()
		if perr != nil {
			return perr
		}
		model, err = trainTyped(examples, tax, products, learned.TypedTrainConfig{Taxonomy: tax, Sources: sources, CleanBudget: o.eval.cleanBudget, GateRecall: o.eval.gateRecall})
	} else {
		model, err = trainGate(examples, tax, learned.GateTrainConfig{Taxonomy: tax, Sources: sources, TargetRecall: o.eval.gateRecall})
	}
	if err != nil {
		return err
	}
	data, err := model.Encode()
	if err != nil {
		return err
	}
	if err := os.WriteFile(out, data, 0o644); err != nil {
		return fmt.Errorf("%s: %w", flag, err)
	}
	t := model.Training
	if o.eval.trainTyped != "" {
		fmt.Fprintf(stderr, "typed model: %d turns of %s, %d features, threshold %.4f (cross-validated by %s: %.1f%% of clean turns added); gate threshold %.4f passes %.1f%% erroneous, %.1f%% clean\n",
			t.Examples, strings.Join(sources, ", "), len(model.Weights), model.Threshold, t.FoldsBy, 100*t.CVAddedClean, model.GateThreshold, 100*t.CVErroneous, 100*t.CVClean)
		return nil
	}
	fmt.Fprintf(stderr, "gate model: %d turns of %s, %d features, threshold %.4f; cross-validated pass %.1f%% erroneous, %.1f%% clean\n",
		t.Examples, strings.Join(sources, ", "), len(model.Weights), model.Threshold, 100*t.CVErroneous, 100*t.CVClean)
	return nil
}

// runLOAO prints the leave-one-author-out table (--loao), then, for each
// --out-of-author split, what models trained on all of --loao's splits do
// on it.
func runLOAO(ctx context.Context, o detectOptions, stdout io.Writer) error {
	// Each group is one author, whatever CorpusAuthor says of its splits.
	var examples []inception.Example
	var tax *inception.Taxonomy
	for _, g := range o.eval.loao {
		ex, _, t, err := trainingExamples(o, strings.Split(g, "+"))
		if err != nil {
			return err
		}
		for i := range ex {
			ex[i].Author = g
		}
		examples, tax = append(examples, ex...), t
	}
	products, err := o.modules.options().Products()
	if err != nil {
		return err
	}
	cfg := learned.TypedTrainConfig{Taxonomy: tax, CleanBudget: o.eval.cleanBudget, GateRecall: o.eval.gateRecall}
	scores, err := offline.LeaveOneAuthorOut(ctx, examples, cfg, products)
	if err != nil {
		return err
	}
	for _, split := range o.eval.outOfAuthor {
		held, _, _, err := trainingExamples(o, []string{split})
		if err != nil {
			return err
		}
		for i := range held {
			held[i].Author = split
		}
		s, err := offline.OutOfAuthor(ctx, examples, held, cfg, products)
		if err != nil {
			return err
		}
		scores = append(scores, s)
	}
	if o.eval.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(scores); err != nil {
			return fmt.Errorf("write report: %w", err)
		}
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "held out\tturns\tmodule\tcore recall\tmean recall\tprecision\tclean false act.\tthreshold")
	for _, s := range scores {
		for _, r := range []struct {
			name string
			f    offline.AuthorFigures
		}{{"rules", s.Rules}, {"rules+typed", s.Combined}} {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%.3f\t%.3f\t%.1f%%\t%.1f%%\t%.3f\n", s.Held, s.Turns, r.name, r.f.CoreRecall, r.f.MeanRecall, 100*r.f.Precision, 100*r.f.CleanFalse, s.Threshold)
		}
	}
	fmt.Fprintln(tw, "\nheld out\tgate rules (err/clean)\t+gate model\t+typed 1-P(clean)\tAUC gate model\tAUC typed")
	for _, s := range scores {
		fmt.Fprintf(tw, "%s\t%.1f%% / %.1f%%\t%.1f%% / %.1f%%\t%.1f%% / %.1f%%\t%.3f\t%.3f\n", s.Held,
			100*s.GateRules.Erroneous, 100*s.GateRules.Clean, 100*s.GateModel.Erroneous, 100*s.GateModel.Clean,
			100*s.GateTyped.Erroneous, 100*s.GateTyped.Clean, s.AUCGate, s.AUCTyped)
	}
	return tw.Flush()
}

// runDetectEval scores the module on a labelled file and prints the report.
func runDetectEval(ctx context.Context, o detectOptions, stdout, stderr io.Writer) error {
	path, err := o.eval.file()
	if err != nil {
		return err
	}
	module, tax, src, err := o.setup()
	if err != nil {
		return err
	}
	examples, err := loadLabelled(path, o.domain, src)
	if err != nil {
		return err
	}
	cfg := offline.EvalConfig{Module: module, Timeout: o.timeout}
	for _, et := range tax.ErrorTypes {
		cfg.Types = append(cfg.Types, et.Name)
	}
	switch m := module.(type) {
	case *llmmodule.Cascade:
		cfg.Gate = m.Gate()
	default:
		if o.modules.module == moduleCascadeGate {
			cfg.Gate = module
		}
	}
	rep, err := offline.Evaluate(ctx, cfg, examples)
	if err != nil {
		return err
	}
	name := o.modules.module
	if o.eval.showErrors {
		for _, m := range rep.Mistakes {
			fmt.Fprintf(stderr, "%s\tgold %s\tgot %s\t%q\n", m.ID, m.Gold, m.Got, m.Evidence)
		}
	}
	if o.eval.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		out := evalJSON{File: path, Module: name, TaxonomyVersion: tax.Version, EvalReport: rep}
		if err := enc.Encode(out); err != nil {
			return fmt.Errorf("write report: %w", err)
		}
		return nil
	}
	printEval(stdout, path, name, tax.Version, rep)
	return nil
}

// evalJSON is rein detect --eval --json's output.
type evalJSON struct {
	File            string `json:"file"`
	Module          string `json:"module"`
	TaxonomyVersion string `json:"taxonomy_version"`
	offline.EvalReport
}

// labelledLine is a corpus line's gold answer.
type labelledLine struct {
	Rein      *bool   `json:"rein"`
	ErrorType *string `json:"error_type"`
}

var errBadLabel = errors.New("bad label")

// loadLabelled reads a labelled JSONL file; unlike rein detect --input,
// any bad line stops it, since a score over part of a corpus misleads.
func loadLabelled(path, defaultDomain string, src *toolSource) ([]inception.Example, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--eval: %w", err)
	}
	defer f.Close()
	var out []inception.Example
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	lineNo := 0
	for sc.Scan() {
		lineNo++
		raw := strings.TrimSpace(sc.Text())
		if raw == "" {
			continue
		}
		p, err := parseDetectLine(raw, defaultDomain, src)
		if err != nil {
			return nil, fmt.Errorf("%s line %d: %w", path, lineNo, err)
		}
		var line detectInput
		if err := json.Unmarshal([]byte(raw), &line); err != nil {
			return nil, fmt.Errorf("%s line %d: %w", path, lineNo, err)
		}
		var lab labelledLine
		if len(line.Label) == 0 || json.Unmarshal(line.Label, &lab) != nil || lab.Rein == nil || lab.ErrorType == nil {
			return nil, fmt.Errorf("%s line %d: %w: want \"label\": {\"rein\": bool, \"error_type\": string}", path, lineNo, errBadLabel)
		}
		if *lab.Rein == (*lab.ErrorType == "") {
			return nil, fmt.Errorf("%s line %d: %w: rein %v with error_type %q", path, lineNo, errBadLabel, *lab.Rein, *lab.ErrorType)
		}
		out = append(out, inception.Example{ID: p.id, Input: p.in, Rein: *lab.Rein, ErrorType: *lab.ErrorType})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s after line %d: %w", path, lineNo, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--eval %s: no labelled dialogues", path)
	}
	return out, nil
}

func printEval(w io.Writer, path, module, version string, r offline.EvalReport) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	f := func(x float64) string { return fmt.Sprintf("%.2f", x) }
	pct := func(x float64) string { return fmt.Sprintf("%.1f%%", 100*x) }
	fmt.Fprintf(w, "%s: module %s, taxonomy %s, %d turns (%d erroneous, %d clean, %d failed)\n\n",
		path, module, version, r.Turns, r.Erroneous, r.Clean, r.Failed)
	fmt.Fprintln(tw, "error type\tsupport\tpredicted\tcorrect\tprecision\trecall\tF1\t")
	for _, s := range r.Types {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%s\t%s\t\n", s.Type, s.Support, s.Predicted, s.Correct, f(s.Precision), f(s.Recall), f(s.F1))
	}
	_ = tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "core-type recall\t%s\t(%s)\n", f(r.CoreRecall), strings.Join(offline.CoreTypes, ", "))
	fmt.Fprintf(tw, "mean recall\t%s\tmacro F1 %s\n", f(r.MeanRecall), f(r.MacroF1))
	fmt.Fprintf(tw, "erroneous turns detected\t%s\tof which exact type %s\n", pct(r.Detected), pct(r.ExactType))
	fmt.Fprintf(tw, "activation precision\t%s\t\n", pct(r.Precision))
	fmt.Fprintf(tw, "clean false activations\t%s\t\n", pct(r.CleanFalseActivation))
	if g := r.Gate; g != nil {
		fmt.Fprintf(tw, "gate pass, erroneous\t%s\t(%d of %d)\n", pct(g.ErroneousRate), g.PassedErroneous, r.Erroneous)
		fmt.Fprintf(tw, "gate pass, clean\t%s\t(%d of %d)\n", pct(g.CleanRate), g.PassedClean, r.Clean)
		fmt.Fprintf(tw, "model calls saved\t%s\t\n", pct(g.ModelCallsSaved))
	}
	fmt.Fprintf(tw, "latency ms\tmean %.3f\tp50 %.3f  p95 %.3f  max %.3f\n", r.Latency.MeanMS, r.Latency.P50MS, r.Latency.P95MS, r.Latency.MaxMS)
	_ = tw.Flush()
	printConfusion(w, r)
}

// printConfusion prints gold classes as rows, predicted classes as columns.
func printConfusion(w io.Writer, r offline.EvalReport) {
	classes := []string{inception.CleanClass}
	for _, s := range r.Types {
		classes = append(classes, s.Type)
	}
	var extra []string
	for _, row := range r.Confusion {
		for got := range row {
			if !slices.Contains(classes, got) && !slices.Contains(extra, got) {
				extra = append(extra, got)
			}
		}
	}
	sort.Strings(extra)
	classes = append(classes, extra...)
	fmt.Fprintln(w, "\nconfusion (rows gold, columns predicted by number):")
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "\t")
	for i := range classes {
		fmt.Fprintf(tw, "%d\t", i)
	}
	fmt.Fprintln(tw)
	for i, gold := range classes {
		fmt.Fprintf(tw, "%s %d\t", gold, i)
		for _, got := range classes {
			fmt.Fprintf(tw, "%d\t", r.Confusion[gold][got])
		}
		fmt.Fprintln(tw)
	}
	_ = tw.Flush()
}

// trainTyped trains the typed classifier on the precise rules' signals,
// read with the catalogue it will be served with.
func trainTyped(examples []inception.Example, tax *inception.Taxonomy, products *rules.ProductCatalogue, cfg learned.TypedTrainConfig) (*learned.GateModel, error) {
	m, err := rules.New(rules.Config{Taxonomy: tax, Products: products})
	if err != nil {
		return nil, err
	}
	cfg.Catalogue = products != nil
	return learned.TrainTyped(examples, m.TypedFeaturizer(), cfg)
}

// trainGate trains the gate's classifier on the gate's features.
func trainGate(examples []inception.Example, tax *inception.Taxonomy, cfg learned.GateTrainConfig) (*learned.GateModel, error) {
	m, err := rules.New(rules.Config{Taxonomy: tax, Mode: rules.Recall})
	if err != nil {
		return nil, err
	}
	return learned.TrainGate(examples, m.GateFeaturizer(), cfg)
}
