package main

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/reinception/rein/internal/app/audit"
	"github.com/reinception/rein/internal/experiment"
	"github.com/reinception/rein/streams/natsserver"
)

func init() { register(newExperimentCmd) }

func newExperimentCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "experiment",
		Short: "Measure rein's effect on live traffic: a randomised holdout's report, and its offline simulation",
		Long: `A tenant's holdout experiment (serve --experiments) leaves a fraction of its conversations in a
control arm, judged by the detector but planted nothing. report compares the arms' outcomes with an
always-valid sequential test; simulate proves the statistics offline. See docs/experiments.md.`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newExperimentReportCmd(), newExperimentSimulateCmd())
	return cmd
}

func newExperimentReportCmd() *cobra.Command {
	var nf natsFlags
	var tenant, name string
	var asJSON bool
	var o experiment.Options
	cmd := &cobra.Command{
		Use:   "report",
		Short: "Compare an experiment's arms: rates, differences with intervals, always-valid p-values, sample size still needed",
		Long: `report reads one tenant's detections, outcomes, agent steps and feedback and compares the
treatment and control arms, first among conversations where rein would act (activated), then over
all conversations. Each outcome gets the difference with a 95% interval, an always-valid confidence
sequence and p-value (mSPRT), and the conversations still needed to detect --min-effect. Guard
metrics that move the wrong way are flagged.

  rein experiment report --tenant acme
  rein experiment report --tenant acme --experiment holdout-2026-12 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := applySources(cmd, nil); err != nil {
				return err
			}
			if tenant == "" {
				return errors.New("experiment report needs --tenant")
			}
			nc, js, err := connectJS(&nf, "rein-experiment")
			if err != nil {
				return err
			}
			defer nc.Close()
			name, convs, err := audit.ExperimentConversations(cmd.Context(), js, tenant, name)
			if err != nil {
				if errors.Is(err, audit.ErrBadSelection) {
					return &exitError{code: 3, err: err}
				}
				return err
			}
			return writeExperimentReport(cmd, experiment.Analyze(tenant, name, convs, o), asJSON)
		},
	}
	nf.bind(cmd, natsserver.DefaultURL)
	cmd.Flags().StringVar(&tenant, "tenant", "", "tenant id")
	cmd.Flags().StringVar(&name, "experiment", "", "experiment name (default: the one of the tenant's latest detection)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	cmd.Flags().Float64Var(&o.Alpha, "alpha", 0.05, "level of the sequential test")
	cmd.Flags().Float64Var(&o.MinEffect, "min-effect", 0.05, "smallest effect worth finding, in each outcome's units (a rate difference for rates); also the mSPRT's mixing scale")
	cmd.Flags().Float64Var(&o.Holdout, "holdout", 0, "the experiment's control fraction, for the sample size (default: the observed one)")
	return cmd
}

func newExperimentSimulateCmd() *cobra.Command {
	var cfg experiment.SimConfig
	var agent string
	var aa int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "simulate",
		Short: "Simulate holdout experiments offline: the effect with an agent that follows plans, none with one that ignores them, and the A/A false-positive rate",
		Long: `simulate draws conversations with the real keyed assignment and fixed outcome rates (a statistical
stand-in for traffic, not a model of an agent: an activated conversation in treatment is resolved
more often and uses the recovery tool when the agent follows plans, exactly as control when it
ignores them) and prints the experiment's report; with --aa N it also runs N A/A experiments,
peeking after every conversation, and prints how often the sequential test rejected.

  rein experiment simulate --agent follows
  rein experiment simulate --agent ignores --aa 200`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch agent {
			case "follows":
				cfg.FollowsPlans = true
			case "ignores":
			default:
				return fmt.Errorf("--agent %q: follows or ignores", agent)
			}
			if cfg.Conversations < 1 || cfg.Holdout <= 0 || cfg.Holdout > experiment.MaxHoldout || cfg.Activation <= 0 || cfg.Activation > 1 {
				return fmt.Errorf("--conversations must be positive, --holdout in (0, %v], --activation in (0, 1]", experiment.MaxHoldout)
			}
			r := experiment.Analyze("sim", "sim", experiment.Simulate(cfg), experiment.Options{})
			if err := writeExperimentReport(cmd, r, asJSON); err != nil {
				return err
			}
			if aa > 0 {
				fpr := experiment.AA(aa, cfg, experiment.Options{})
				_, err := fmt.Fprintf(cmd.OutOrStdout(), "\nA/A: the sequential test rejected in %.1f%% of %d experiments of %d conversations (alpha %.0f%%), peeking after every conversation\n",
					100*fpr, aa, cfg.Conversations, 100*r.Alpha)
				return err
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&agent, "agent", "follows", "the simulated agent: follows (acts on planted plans) or ignores")
	cmd.Flags().IntVar(&cfg.Conversations, "conversations", 4000, "conversations per experiment")
	cmd.Flags().Float64Var(&cfg.Holdout, "holdout", 0.2, "control fraction")
	cmd.Flags().Float64Var(&cfg.Activation, "activation", 0.3, "share of conversations where rein would act")
	cmd.Flags().Uint64Var(&cfg.Seed, "seed", 1, "random seed (the A/A runs use the following seeds)")
	cmd.Flags().IntVar(&aa, "aa", 0, "also run this many A/A experiments")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}

func writeExperimentReport(cmd *cobra.Command, r experiment.Report, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(cmd.OutOrStdout())
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	return r.WriteText(cmd.OutOrStdout())
}
