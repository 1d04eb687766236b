// Command rein is the one binary of rein: serve, demo, publish, detect,
// replay, audit, shadow, eval, bench, streams, tau, config and version.
//
// Every flag is also REIN_<FLAG> in the environment or a key of --config
// rein.yaml (config.go): flag > environment > file, for every setting; the
// model settings also read REIN_LLM_PROVIDER, REIN_LLM_MODEL and
// REIN_LLM_BASE_URL. Unknown keys fail with their line. serve logs the
// effective configuration at start-up and rein config show prints it
// (effective.go); env.go lists every variable for rein --help.
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
model or prompt. Turns arrive as CloudEvents on NATS JetStream.

` + envHelp(),
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
