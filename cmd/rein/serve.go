package main

import (
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/reinception/rein/internal/app/pipeline"
	"github.com/spf13/cobra"
)

func init() { register(newServeCmd) }

func newServeCmd() *cobra.Command {
	var sf serverFlags
	var so stageOptions
	var stagesFlag []string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run rein: NATS JetStream (embedded by default), the pipeline stages and the HTTP port",
		Long: `serve runs rein. With no flags it starts an embedded NATS server with JetStream file storage
under ./data listening on 127.0.0.1:4222, provisions every rein stream, and runs all pipeline stages
in this process, with /metrics, /healthz, /readyz, POST /v1/turns and the dashboard on 127.0.0.1:8080.

With --nats-url it connects to an external NATS server or cluster instead; with --stages it runs only
some stages, which is how rein scales out (more replicas per stage on more machines).

` + sourcesHelp + `

The first log line after start-up, "effective configuration", says which module, provider, model,
taxonomy, domain, stages, NATS and retention are in force (secrets redacted); rein config show prints
the same without starting anything.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			file, names, prov, err := checkedServe(cmd, &so, stagesFlag)
			if err != nil {
				return err
			}
			sf.announce = effectiveSettings(cmd, &sf, &so, names, file, prov)
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			rt, err := startRuntime(ctx, &sf, file, "rein-serve")
			if err != nil {
				return err
			}
			defer rt.Close()
			rt.stages = &so
			return runStages(ctx, rt, names)
		},
	}
	bindServe(cmd, &sf, &so, &stagesFlag)
	return cmd
}

// bindServe binds serve's flags (config show binds the same).
func bindServe(cmd *cobra.Command, sf *serverFlags, so *stageOptions, stagesFlag *[]string) {
	sf.bind(cmd, "./data")
	so.bind(cmd.Flags(), "rules")
	cmd.Flags().StringSliceVar(stagesFlag, "stages", []string{"all"}, "stages to run: all, none, or a list of "+strings.Join(pipeline.StageOrder(), ", "))
}

// resolveServe applies rein.yaml and the environment to serve's flags and
// returns the file and the stages to run.
func resolveServe(cmd *cobra.Command, so *stageOptions, stagesFlag []string) (*fileConfig, []string, error) {
	file, err := loadFileConfig(configFlag(cmd))
	if err != nil {
		return nil, nil, err
	}
	if err := applySources(cmd, file); err != nil {
		return nil, nil, err
	}
	inferModule(cmd, &so.modules)
	so.ModelPaths = modelPathsOf(cmd, file)
	names, err := pipeline.ResolveStages(stagesFlag)
	if err != nil {
		return nil, nil, err
	}
	return file, names, nil
}

// configFlag reads --config, or REIN_CONFIG, before the other sources are
// applied (the file is one of them).
func configFlag(cmd *cobra.Command) string {
	f := cmd.Flags().Lookup("config")
	if f == nil {
		return ""
	}
	if v, ok := os.LookupEnv(envName(f.Name)); ok && !f.Changed {
		return v
	}
	return f.Value.String()
}
