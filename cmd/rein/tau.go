package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/reinception/rein/agentworker/taubench"
)

func init() { register(newTauCmd) }

func newTauCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tau",
		Short: "τ-bench airline and retail domains: conformance checks",
	}
	cmd.AddCommand(newTauCheckCmd())
	return cmd
}

func newTauCheckCmd() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Replay τ-bench ground truth and recorded conversations against the Go domains",
		Long: `check loads the τ-bench data directory DIR (airline/, retail/, oracle/, trajectories/),
replays every task's ground-truth actions of every split and compares database hashes,
observations and changed records with DIR/oracle when present, then replays the tool
calls of every recorded conversation in DIR/trajectories and compares the reward with
the recorded one. It prints one line per check and a final JSON summary line; the exit
code is 0 only when everything matches.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" {
				return errors.New("--data is required")
			}
			out := cmd.OutOrStdout()
			sum, err := taubench.Check(cmd.Context(), dir, out)
			if err != nil {
				return &exitError{code: 1, err: fmt.Errorf("tau check: %w", err)}
			}
			fmt.Fprintln(out, sum.JSONLine())
			if !sum.OK() {
				return &exitError{code: 1, err: fmt.Errorf("tau check: mismatches (hash %d/%d, observations %d/%d, rewards %d/%d, record mismatches %d, other %d)",
					sum.GTHashMatch, sum.GTTasks, sum.GTObservationMatch, sum.GTObservations,
					sum.TrajectoryRewardMatch, sum.Trajectories, sum.GTRecordMismatch, sum.Problems)}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "data", "", "τ-bench data directory (airline/, retail/, oracle/, trajectories/)")
	return cmd
}
