package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/reinception/rein/agentworker/taubench"
	"github.com/reinception/rein/inception"
	"github.com/reinception/rein/inception/learned"
	"github.com/reinception/rein/internal/app/audit"
	"github.com/reinception/rein/internal/labels"
	"github.com/reinception/rein/streams/natsserver"
)

func init() { register(newTrainCmd) }

// trainOptions are rein train's flags.
type trainOptions struct {
	detect    detectOptions
	useLabels bool
	labels    labelsEval
	// tenants whose labels are trained on, and the domain of those whose
	// agent is not --domain's.
	tenants       []string
	tenantDomains map[string]string
	typedOut      string
	gateOut       string
}

func newTrainCmd() *cobra.Command {
	var o trainOptions
	cmd := &cobra.Command{
		Use:   "train",
		Short: "Fit the typed classifier and the cascade gate on the corpus plus a tenant's labels, and write versioned model files",
		Long: `train fits the rules module's typed classifier (--typed-out) and the cascade gate's classifier and
threshold (--gate-out) on the labelled corpus's --train-splits and, with --labels, on one tenant's
labelled turns from REIN_LABELS: a missed error or a wrong type is an example of the right type, a
false activation a clean one, a correct label what rein decided. Each labelled turn's text and the
dialogue before it are read from REIN_TURNS, as the detector saw them. The tenant's turns are one
author of their own, so the cross-validation that picks the thresholds judges them on wording the
fold's model never saw. The test split is never read.

A model file is named by its content (its version, sha256:…, is what every detection made with it
records). Compare it with the live module on recorded traffic (rein shadow --candidate), then
promote it by writing it where serve's --typed-model or --gate-model points, or by pointing them
at it in rein.yaml: serve reloads it without a restart (docs/labels.md).`,
		Example: `  rein train --corpus inception/testdata/corpus --labels --tenant acme --typed-out typed-acme.json
  rein train --corpus inception/testdata/corpus --labels --tenant acme --since 30d --typed-out t.json --gate-out g.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := applySources(cmd, nil); err != nil {
				return err
			}
			return runTrain(cmd.Context(), &o, cmd.OutOrStdout())
		},
	}
	fs := cmd.Flags()
	o.detect.modules.module = inception.ModuleRules
	fs.StringVar(&o.detect.modules.taxonomy, "taxonomy", "", "taxonomy YAML file replacing the six embedded default error types (train with the taxonomy the model will be served with)")
	fs.StringVar(&o.detect.eval.path, "corpus", "", "the labelled corpus directory (inception/testdata/corpus) whose --train-splits are trained on")
	fs.StringSliceVar(&o.detect.eval.trainSplits, "train-splits", []string{"dev", "dev2", "dev3", "dev4", "dev5", "dev6"}, "the corpus splits to train on (never test)")
	fs.StringVar(&o.detect.domain, "domain", "airline", "the agent's domain (airline or retail): of corpus lines without one, and of the tenant's turns")
	fs.StringVar(&o.detect.modules.tauBench, "taubench", "", "τ-bench data directory: the rules read the store's product options while training, as serve will with it (train with the catalogue the model will be served with)")
	fs.Float64Var(&o.detect.eval.cleanBudget, "clean-budget", 0.0075, "the share of clean turns the typed classifier may add as false activations in cross-validation (the shipped model's)")
	fs.Float64Var(&o.detect.eval.gateRecall, "gate-recall", 0.97, "the share of erroneous turns the gate's classifier (and the typed model's gate score) must pass in cross-validation")
	fs.BoolVar(&o.useLabels, "labels", false, "also train on --tenant's labelled turns in REIN_LABELS")
	fs.StringSliceVar(&o.tenants, "tenant", nil, "with --labels: the tenant whose labels and turns are trained on (repeatable: each is an author of its own)")
	fs.StringToStringVar(&o.tenantDomains, "tenant-domain", nil, "with --labels: TENANT=DOMAIN for a tenant whose agent is not --domain's (repeatable)")
	fs.StringVar(&o.labels.since, "since", "", "with --labels: labels of traffic from this day on (YYYY-MM-DD, RFC3339, or a duration before now such as 30d)")
	o.labels.nats.bind(cmd, natsserver.DefaultURL)
	fs.StringVar(&o.typedOut, "typed-out", "", "write the typed classifier here (serve's --typed-model)")
	fs.StringVar(&o.gateOut, "gate-out", "", "write the cascade gate's classifier here (serve's --gate-model)")
	return cmd
}

func runTrain(ctx context.Context, o *trainOptions, out io.Writer) error {
	switch {
	case o.detect.eval.path == "":
		return errors.New("rein train needs --corpus (the labelled corpus directory)")
	case o.typedOut == "" && o.gateOut == "":
		return errors.New("rein train needs --typed-out, --gate-out or both")
	case o.useLabels && len(o.tenants) == 0:
		return errors.New("--labels needs --tenant: a model learns its tenants' language")
	case !o.useLabels && len(o.tenants) > 0:
		return errors.New("--tenant is for --labels")
	}
	examples, sources, tax, err := trainingExamples(o.detect, o.detect.eval.trainSplits)
	if err != nil {
		return err
	}
	corpus := len(examples)
	if o.useLabels {
		nc, js, err := connectJS(&o.labels.nats, "rein-train")
		if err != nil {
			return err
		}
		defer nc.Close()
		for _, tenant := range o.tenants {
			ex, missing, err := tenantExamples(ctx, js, o, tenant)
			if err != nil {
				return err
			}
			examples = append(examples, ex...)
			sources = append(sources, "labels:"+tenant)
			fmt.Fprintf(out, "%d labelled turns of tenant %s (%d erroneous)", len(ex), tenant, countErroneous(ex))
			if missing > 0 {
				fmt.Fprintf(out, ", %d labels left out: their turns are no longer in REIN_TURNS", missing)
			}
			fmt.Fprintln(out)
		}
	}
	fmt.Fprintf(out, "%d corpus turns of %s\n", corpus, strings.Join(o.detect.eval.trainSplits, ", "))
	products, err := o.detect.modules.options().Products()
	if err != nil {
		return err
	}
	ev := o.detect.eval
	if o.typedOut != "" {
		m, err := trainTyped(examples, tax, products, learned.TypedTrainConfig{Taxonomy: tax, Sources: sources, CleanBudget: ev.cleanBudget, GateRecall: ev.gateRecall})
		if err != nil {
			return err
		}
		if err := writeModel(o.typedOut, m); err != nil {
			return err
		}
		t := m.Training
		fmt.Fprintf(out, "typed model %s → %s: %d turns, %d features, threshold %.4f (cross-validated by %s: %.1f%% of clean turns added)\n",
			m.Version(), o.typedOut, t.Examples, len(m.Weights), m.Threshold, t.FoldsBy, 100*t.CVAddedClean)
	}
	if o.gateOut != "" {
		m, err := trainGate(examples, tax, learned.GateTrainConfig{Taxonomy: tax, Sources: sources, TargetRecall: ev.gateRecall})
		if err != nil {
			return err
		}
		if err := writeModel(o.gateOut, m); err != nil {
			return err
		}
		t := m.Training
		fmt.Fprintf(out, "gate model %s → %s: %d turns, %d features, threshold %.4f; cross-validated pass %.1f%% erroneous, %.1f%% clean\n",
			m.Version(), o.gateOut, t.Examples, len(m.Weights), m.Threshold, 100*t.CVErroneous, 100*t.CVClean)
	}
	return nil
}

// tenantExamples reads a tenant's labels and rebuilds their turns.
func tenantExamples(ctx context.Context, js jetstream.JetStream, o *trainOptions, tenant string) ([]inception.Example, int, error) {
	since, err := o.labels.sinceTime(time.Now())
	if err != nil {
		return nil, 0, err
	}
	ls, err := labels.Read(ctx, js, labels.Filter{Tenant: tenant, Since: since})
	if err != nil {
		return nil, 0, err
	}
	if len(ls) == 0 {
		return nil, 0, fmt.Errorf("--labels: tenant %s has no labels in REIN_LABELS (rein label)", tenant)
	}
	sel := audit.TurnSelection{Tenant: tenant, Domain: o.detect.domain, TenantDomains: o.tenantDomains, Tools: taubench.ToolCatalogue}
	return audit.LabelledExamples(ctx, js, sel, ls)
}

func countErroneous(ex []inception.Example) int {
	n := 0
	for _, e := range ex {
		if e.Rein {
			n++
		}
	}
	return n
}

// writeModel writes a model file whole or not at all: serve may be
// watching the path, and must never read half a file.
func writeModel(path string, m *learned.GateModel) error {
	data, err := m.Encode()
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("write model: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write model: %w", err)
	}
	return nil
}
