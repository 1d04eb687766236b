package main

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/reinception/rein/internal/app/audit"
	"github.com/reinception/rein/streams/natsserver"
)

func init() { register(newAuditCmd) }

func newAuditCmd() *cobra.Command {
	var nf natsFlags
	var tenant, conv string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Print one conversation's full timeline across every stream, in time order",
		Long: `audit merges everything rein stored about one conversation — user and agent turns, detections,
work items with their planted thoughts, the agent's steps, escalations, ambiguity reports and dead
letters — in event-time order (then pipeline order, then stream sequence). Every task, step,
escalation and report names the detection of its turn that came before it.

  rein audit --tenant acme --conversation c1
  rein audit --tenant acme --conversation c1 --json   (a JSON array of entries)`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := applySources(cmd, nil); err != nil {
				return err
			}
			if tenant == "" || conv == "" {
				return errors.New("audit needs --tenant and --conversation")
			}
			nc, js, err := connectJS(&nf, "rein-audit")
			if err != nil {
				return err
			}
			defer nc.Close()
			es, err := audit.Timeline(cmd.Context(), js, tenant, conv)
			if err != nil {
				return err
			}
			if len(es) == 0 {
				// Nothing stored: a typo in an id must not read as a quiet,
				// empty conversation (exit 3, like a lookup that found nothing).
				return &exitError{code: 3, err: fmt.Errorf("no events of conversation %s of tenant %s in any stream (check the ids; retention may have removed them)", conv, tenant)}
			}
			if asJSON {
				if es == nil {
					es = []audit.Entry{}
				}
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(es)
			}
			return audit.WriteTimeline(cmd.OutOrStdout(), tenant, conv, es)
		},
	}
	nf.bind(cmd, natsserver.DefaultURL)
	cmd.Flags().StringVar(&tenant, "tenant", "", "tenant id")
	cmd.Flags().StringVar(&conv, "conversation", "", "conversation id")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the timeline as a JSON array")
	return cmd
}
