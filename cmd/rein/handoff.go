package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/reinception/rein/agentworker"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/natsserver"
)

func init() { register(newHandoffCmd) }

func newHandoffCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "handoff",
		Short: "Act on conversations handed to a human",
		Long: `A conversation handed to a human (an escalation: the agent transferred it, reached its step
limit, or could not answer at all, agent_unavailable) stays on the human path: each later user
turn ends with a dev.rein.unanswered.v1 record, reason human_path, and never reaches the agent.

  rein handoff release --tenant T --conversation C [--by NAME]

gives it back to the agent: a dev.rein.release.v1 record on rein.releases.<tenant>.<conv> (one per
handoff; the sinks and rein audit show it), and the agent answers the conversation's next user
turn. An agent_unavailable handoff is also given back by the agent worker itself once its quiet
period has passed (--agent-quiet-period of rein serve).`,
	}
	cmd.AddCommand(newHandoffReleaseCmd())
	return cmd
}

func newHandoffReleaseCmd() *cobra.Command {
	var nf natsFlags
	var tenant, conv, by string
	cmd := &cobra.Command{
		Use:   "release",
		Short: "Give a conversation handed to a human back to the agent (recorded as dev.rein.release.v1)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := applySources(cmd, nil); err != nil {
				return err
			}
			nc, js, err := connectJS(&nf, "rein-handoff")
			if err != nil {
				return err
			}
			defer nc.Close()
			rel, err := agentworker.Release(cmd.Context(), js, streams.NewPublisher(js, nil, streams.PublisherConfig{}), tenant, conv, by)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "released %s/%s (handed over at turn %d, %s): the agent answers its next user turn\n",
				tenant, conv, rel.Turn, rel.HandoffReason)
			return nil
		},
	}
	nf.bind(cmd, natsserver.DefaultURL)
	fs := cmd.Flags()
	fs.StringVar(&tenant, "tenant", "", "the conversation's tenant (required)")
	fs.StringVar(&conv, "conversation", "", "the conversation id (required)")
	fs.StringVar(&by, "by", "operator", "who releases it, recorded in the release event")
	_ = cmd.MarkFlagRequired("tenant")
	_ = cmd.MarkFlagRequired("conversation")
	return cmd
}
