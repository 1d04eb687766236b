package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/reinception/rein/agentworker/taubench"
	"github.com/reinception/rein/inception"
	"github.com/reinception/rein/inception/learned"
	"github.com/reinception/rein/internal/app/audit"
	"github.com/reinception/rein/internal/labels"
	"github.com/reinception/rein/internal/telemetry"
	"github.com/reinception/rein/streams/natsserver"
)

func init() { register(newShadowCmd) }

func newShadowCmd() *cobra.Command {
	var nf natsFlags
	var mf moduleFlags
	var tenant, since, until, domain, candidate string
	var convs []string
	var asJSON bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "shadow",
		Short: "Counterfactual detection: re-run a detector over recorded user turns and compare with what was recorded",
		Long: `shadow re-runs an inception module (another taxonomy, module or model) over the user turns stored
in REIN_TURNS, rebuilding each turn's surface context exactly as the detector stage does, and compares
its decisions with the detections recorded in REIN_DETECTIONS. It publishes nothing.

It prints a table per label (an error type, "none" or "failed"): how often it was recorded, how often
the shadow module chose it, agreements, turns lost (recorded it, shadow chose something else) and
gained, then the list of flipped turns.

  rein shadow --taxonomy without-anaphora.yaml --since 168h
  rein shadow --conversation acme/c1 --conversation acme/c2 --json
  rein shadow --module llm --provider replay   (model settings from REIN_LLM_*)

With --candidate FILE (a model file rein train wrote), shadow runs the live module (the module flags
as serve has them) and the same module with the candidate model side by side on each turn, lists
the turns where they differ, and measures both, and what was recorded, on the tenant's labels
(rein label) with the review queue's weights and 95 % Wilson intervals (docs/labels.md).

  rein shadow --tenant acme --since 7d --typed-model live.json --candidate candidate.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := applySources(cmd, nil); err != nil {
				return err
			}
			now := time.Now()
			s, err := audit.ParseTime(since, now)
			if err != nil {
				return fmt.Errorf("--since: %w", err)
			}
			u, err := audit.ParseTime(until, now)
			if err != nil {
				return fmt.Errorf("--until: %w", err)
			}
			refs, err := parseConvRefs(tenant, convs)
			if err != nil {
				return err
			}
			m, _, err := mf.build(telemetry.NewRegistry())
			if err != nil {
				return err
			}
			cfg := audit.ShadowConfig{Module: m, Timeout: timeout,
				TurnSelection: audit.TurnSelection{Tenant: tenant, Conversations: refs, Since: s, Until: u, Domain: domain, Tools: taubench.ToolCatalogue}}
			if candidate != "" {
				if cfg.Module, err = candidateModule(mf, candidate); err != nil {
					return err
				}
				cfg.Baseline = m
			}
			nc, js, err := connectJS(&nf, "rein-shadow")
			if err != nil {
				return err
			}
			defer nc.Close()
			if candidate != "" {
				if cfg.Labels, err = labels.Read(cmd.Context(), js, labels.Filter{Tenant: tenant, Since: s}); err != nil {
					return err
				}
			}
			rep, err := audit.Shadow(cmd.Context(), js, cfg)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(rep)
			}
			was, is := "RECORDED", "SHADOW"
			if candidate != "" {
				was, is = "LIVE", "CANDIDATE"
				fmt.Fprintf(out, "candidate %s (%s) against the live %s (taxonomy %s): %d turns judged by both, %d agree, %d flipped\n\n",
					candidate, modelVersionOf(candidate), rep.Baseline, rep.TaxonomyVersion, rep.Turns, rep.Agreements, rep.Flips)
			} else {
				fmt.Fprintf(out, "shadow %s (taxonomy %s): %d turns compared, %d agree, %d flipped, %d without a recorded detection\n\n",
					rep.Module, rep.TaxonomyVersion, rep.Turns, rep.Agreements, rep.Flips, rep.Unrecorded)
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintf(tw, "LABEL\t%s\t%s\tAGREE\tLOST\tGAINED\n", was, is)
			for _, r := range rep.Types {
				fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\n", r.Label, r.Recorded, r.Shadow, r.Agree, r.Lost, r.Gained)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if rep.Quality != nil {
				if err := writeShadowQuality(out, rep); err != nil {
					return err
				}
			}
			if len(rep.Flipped) > 0 {
				fmt.Fprintln(out, "\nflipped turns:")
				tw = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
				fmt.Fprintf(tw, "TENANT\tCONVERSATION\tTURN\t%s\t%s\tUSER TEXT\n", was, is)
				for _, f := range rep.Flipped {
					fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", f.Tenant, f.Conversation, f.Turn, f.Recorded, f.Shadow, clipText(f.UserText, 80))
				}
				return tw.Flush()
			}
			return nil
		},
	}
	nf.bind(cmd, natsserver.DefaultURL)
	mf.bind(cmd.Flags(), "rules")
	fs := cmd.Flags()
	fs.StringVar(&tenant, "tenant", "", "only this tenant (also the tenant of --conversation ids given without one)")
	fs.StringSliceVar(&convs, "conversation", nil, "conversations to judge, TENANT/CONV or CONV with --tenant (repeatable; default all)")
	fs.StringVar(&since, "since", "", "first stored time of the user turns judged: RFC3339 or a duration before now")
	fs.StringVar(&until, "until", "", "last stored time of the user turns judged")
	fs.StringVar(&domain, "domain", "airline", "the agent's domain (airline or retail): its tools are shown to the module")
	fs.DurationVar(&timeout, "timeout", 30*time.Second, "bound on one module call")
	fs.BoolVar(&asJSON, "json", false, "print the report as JSON")
	fs.StringVar(&candidate, "candidate", "", "a model file (rein train, rein detect --train-typed or --train-gate) to compare with the live module on the same turns, and to measure on the labels")
	return cmd
}

// candidateModule is the live module with the candidate model file in
// place of its typed classifier or its gate's, as the file's features say.
func candidateModule(live moduleFlags, path string) (inception.Module, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--candidate: %w", err)
	}
	g, err := learned.ParseGateModel(data)
	if err != nil {
		return nil, fmt.Errorf("--candidate %s: %w", path, err)
	}
	if g.Features == learned.TypedFeatures {
		live.typed = path
	} else {
		live.gate = path
	}
	m, _, err := live.build(telemetry.NewRegistry())
	if err != nil {
		return nil, fmt.Errorf("--candidate: %w", err)
	}
	return m, nil
}

// modelVersionOf names a model file by its content, as detections do.
func modelVersionOf(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return "unreadable"
	}
	g, err := learned.ParseGateModel(data)
	if err != nil {
		return "invalid"
	}
	return g.Version()
}

// writeShadowQuality prints the labelled overall and per-type figures of
// what was recorded, the live module and the candidate.
func writeShadowQuality(w io.Writer, rep *audit.ShadowReport) error {
	q := rep.Quality[audit.QualityRecorded]
	fmt.Fprintf(w, "\non the labels: %d labelled turns of the review queue (each weighted 1/π), %d outside it (not counted)\n", q.Turns, q.AdHoc)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TYPE\tDECIDED BY\tPRECISION\t95% CI\tLABELS\tRECALL\t95% CI\tLABELS")
	names := []struct{ key, name string }{{audit.QualityRecorded, "recorded"}, {audit.QualityBaseline, "live"}, {audit.QualityShadow, "candidate"}}
	if _, ok := rep.Quality[audit.QualityBaseline]; !ok {
		names = []struct{ key, name string }{{audit.QualityRecorded, "recorded"}, {audit.QualityShadow, "shadow"}}
	}
	// Every row any of them has: a candidate may activate with a type
	// nothing recorded.
	var types []string
	for _, n := range names {
		for _, row := range rep.Quality[n.key].Rows {
			if row.Name != labels.RowOverall && row.Name != labels.RowAnyError && !slices.Contains(types, row.Name) {
				types = append(types, row.Name)
			}
		}
	}
	slices.Sort(types)
	for _, t := range append(types, labels.RowOverall, labels.RowAnyError) {
		for _, n := range names {
			r, _ := rep.Quality[n.key].Row(t)
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t, n.name, estimateCells(r.Precision), estimateCells(r.Recall))
		}
	}
	return tw.Flush()
}

func parseConvRefs(tenant string, convs []string) ([]audit.ConvRef, error) {
	var refs []audit.ConvRef
	for _, c := range convs {
		t, id, ok := strings.Cut(c, "/")
		if !ok {
			t, id = tenant, c
		}
		if t == "" {
			return nil, fmt.Errorf("--conversation %q: give TENANT/CONV or --tenant", c)
		}
		refs = append(refs, audit.ConvRef{Tenant: t, Conversation: id})
	}
	return refs, nil
}

func clipText(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
