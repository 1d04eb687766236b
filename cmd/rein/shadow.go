package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/reinception/rein/agentworker/taubench"
	"github.com/reinception/rein/internal/app/audit"
	"github.com/reinception/rein/internal/telemetry"
	"github.com/reinception/rein/streams/natsserver"
)

func init() { register(newShadowCmd) }

func newShadowCmd() *cobra.Command {
	var nf natsFlags
	var mf moduleFlags
	var tenant, since, until, domain string
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
  rein shadow --module llm --provider replay   (model settings from REIN_LLM_*)`,
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
			nc, js, err := connectJS(&nf, "rein-shadow")
			if err != nil {
				return err
			}
			defer nc.Close()
			rep, err := audit.Shadow(cmd.Context(), js, audit.ShadowConfig{Module: m, Tenant: tenant, Conversations: refs,
				Since: s, Until: u, Domain: domain, Tools: taubench.ToolCatalogue, Timeout: timeout})
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(rep)
			}
			fmt.Fprintf(out, "shadow %s (taxonomy %s): %d turns compared, %d agree, %d flipped, %d without a recorded detection\n\n",
				rep.Module, rep.TaxonomyVersion, rep.Turns, rep.Agreements, rep.Flips, rep.Unrecorded)
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "LABEL\tRECORDED\tSHADOW\tAGREE\tLOST\tGAINED")
			for _, r := range rep.Types {
				fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\n", r.Label, r.Recorded, r.Shadow, r.Agree, r.Lost, r.Gained)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if len(rep.Flipped) > 0 {
				fmt.Fprintln(out, "\nflipped turns:")
				tw = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "TENANT\tCONVERSATION\tTURN\tRECORDED\tSHADOW\tUSER TEXT")
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
	return cmd
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
