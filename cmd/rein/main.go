// Command rein is the one binary of rein: serve, demo, publish, detect,
// replay, audit, shadow, eval, bench, streams, tau and version.
package main

import (
	"fmt"
	"os"
	"sort"

	"github.com/spf13/cobra"
)

// commands is filled by each command's file through register, so that
// commands live in files named for them and main stays small.
var commands []func() *cobra.Command

func register(f func() *cobra.Command) { commands = append(commands, f) }

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "rein",
		Short: "Reasoning Inception for fixed LLM customer-service agents",
		Long: `rein watches every user turn of a customer-service conversation, decides whether the
user caused a known error (an ambiguous or an unsupported request) and, when so, plants a short
recovery reasoning as the agent's first think step of that turn — without changing the agent's
model or prompt. Turns arrive as CloudEvents on NATS JetStream.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	cmds := make([]*cobra.Command, 0, len(commands))
	for _, f := range commands {
		cmds = append(cmds, f())
	}
	sort.Slice(cmds, func(i, j int) bool { return cmds[i].Name() < cmds[j].Name() })
	root.AddCommand(cmds...)
	return root
}

func main() {
	if err := newRootCmd().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "rein:", err)
		os.Exit(exitCode(err))
	}
}
