package main

import (
	"strings"

	"github.com/spf13/cobra"
)

func init() { register(newConfigCmd) }

func newConfigCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Show or check the configuration rein serve would run with",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newConfigShowCmd(), newConfigCheckCmd())
	return cmd
}

func newConfigShowCmd() *cobra.Command {
	var sf serverFlags
	var so stageOptions
	var stagesFlag []string
	cmd := &cobra.Command{
		Use:   "show",
		Short: "Print the effective configuration of rein serve as YAML, each value with its source",
		Long: `config show takes the same flags, environment and --config rein.yaml as rein serve, resolves them
the same way and prints the result as YAML without starting anything: the inception module, model
provider, model, taxonomy, domain, stages, NATS, HTTP and each stream's retention, then every flag.
A comment after each value names its source: flag, env REIN_…, file rein.yaml:<line> or default.
Secrets (API key, NATS password and token) are shown as *** when set.

` + sourcesHelp,
		Example: `  rein config show --config rein.yaml
  REIN_LLM_PROVIDER=openai REIN_LLM_MODEL=gpt-4o-mini rein config show`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			file, names, err := resolveServe(cmd, &so, stagesFlag)
			if err != nil {
				return err
			}
			prov, err := provisionConfig(file)
			if err != nil {
				return err
			}
			var b strings.Builder
			b.WriteString("# rein serve: effective configuration (flag > environment > rein.yaml > default)\n")
			writeYAML(&b, effectiveSettings(cmd, &sf, &so, names, file, prov), cmd)
			_, err = cmd.OutOrStdout().Write([]byte(b.String()))
			return err
		},
	}
	bindServe(cmd, &sf, &so, &stagesFlag)
	return cmd
}
