package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/reinception/rein/streams"
)

// stageRunner is what every stage package's New returns.
type stageRunner interface {
	Run(ctx context.Context) error
}

// stageFactory builds a stage from the process's shared parts.
type stageFactory func(rt *proc) (stageRunner, error)

// stageOrder lists the pipeline's stages in data-flow order; stageFactories
// holds the ones this binary has (each registered from its own file).
var (
	stageOrder     = []string{"detector", "injector", "agentworker", "escalation"}
	stageFactories = map[string]stageFactory{}
)

func registerStage(name string, f stageFactory) { stageFactories[name] = f }

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
			file, names, err := resolveServe(cmd, &so, stagesFlag)
			if err != nil {
				return err
			}
			prov, err := provisionConfig(file)
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
			defer rt.close()
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
	cmd.Flags().StringSliceVar(stagesFlag, "stages", []string{"all"}, "stages to run: all, none, or a list of "+strings.Join(stageOrder, ", "))
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
	names, err := resolveStages(stagesFlag)
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

func resolveStages(req []string) ([]string, error) {
	var out []string
	for _, s := range req {
		switch s = strings.TrimSpace(s); s {
		case "all":
			for _, n := range stageOrder {
				if _, ok := stageFactories[n]; ok && !slices.Contains(out, n) {
					out = append(out, n)
				}
			}
		case "none", "":
		default:
			if !slices.Contains(stageOrder, s) {
				return nil, fmt.Errorf("--stages: unknown stage %q (known: %s)", s, strings.Join(stageOrder, ", "))
			}
			if _, ok := stageFactories[s]; !ok {
				return nil, fmt.Errorf("--stages: stage %q is not built into this binary", s)
			}
			if !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	return out, nil
}

// runStages builds and runs the named stages until ctx is cancelled; the
// first stage to fail stops the others.
func runStages(ctx context.Context, rt *proc, names []string) error {
	runners := make([]stageRunner, 0, len(names))
	rt.running = names
	var inputs []string
	for _, n := range names {
		if in, ok := stageInput[n]; ok && in != streams.StreamTurns {
			inputs = append(inputs, in)
		}
	}
	rt.requireStreams(inputs...)
	for _, n := range names {
		r, err := stageFactories[n](rt)
		if err != nil {
			return fmt.Errorf("stage %s: %w", n, err)
		}
		runners = append(runners, r)
	}
	rt.log.Info("rein serving", "stages", names, "http", rt.http.Addr())
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg       sync.WaitGroup
		once     sync.Once
		firstErr error
	)
	for i, r := range runners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A stage cut short by shutdown while starting is not a failure.
			if err := r.Run(ctx); err != nil && !(ctx.Err() != nil && errors.Is(err, context.Canceled)) {
				once.Do(func() { firstErr = fmt.Errorf("stage %s: %w", names[i], err) })
				cancel()
			}
		}()
	}
	<-ctx.Done()
	wg.Wait()
	rt.log.Info("rein stopped")
	return firstErr
}
