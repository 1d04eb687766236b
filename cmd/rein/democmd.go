package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/reinception/rein/inception"
	"github.com/reinception/rein/internal/app/demo"
	"github.com/reinception/rein/internal/app/pipeline"
)

func init() { register(newDemoCmd) }

func newDemoCmd() *cobra.Command {
	var sf serverFlags
	var so stageOptions
	var keep, asJSON bool
	var turnTimeout time.Duration
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Play sample conversations through the whole pipeline and show what rein detected, planted and did",
		Long: `demo starts an embedded NATS server and every stage in this process, plays the bundled sample
conversations over the shipped airline sample data — each user-induced error type of the default
taxonomy at least once, plus clean conversations — and prints, for every turn, the detection, the
planted thought, the agent's tool calls, escalations and reports, then a summary.

Offline it uses the rules inception module and the scripted agent (a deterministic simulator, not a
model). With REIN_LLM_PROVIDER (openai or anthropic), REIN_LLM_MODEL, REIN_LLM_BASE_URL and a key
set, the inception module (--module llm by default then) and the agent use that model.

--keep leaves the server, /metrics and the dashboard running after the summary (Ctrl-C to stop).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			file, err := loadFileConfig(configFlag(cmd))
			if err != nil {
				return err
			}
			if err := applySources(cmd, file); err != nil {
				return err
			}
			// The demo's conversations are made up: its dashboard shows
			// their text unless told otherwise.
			if !cmd.Flags().Changed("dashboard-reveal") && os.Getenv(envName("dashboard-reveal")) == "" {
				sf.dashboardReveal = true
			}
			convs, err := demo.Conversations()
			if err != nil {
				return err
			}
			if sf.dataDir == "" {
				dir, err := os.MkdirTemp("", "rein-demo-")
				if err != nil {
					return err
				}
				if !keep {
					defer os.RemoveAll(dir)
				}
				sf.dataDir = dir
			}
			inferModule(cmd, &so.modules)
			lc := so.modules.llmConfig()
			live := lc.Provider != ""
			if live && flagSource(cmd.Flags().Lookup("module")) == sourceDefault {
				// Any model configured, a script or a cassette included: the
				// demo shows it deciding too.
				so.modules.module = inception.ModuleLLM
			}
			agent := "scripted simulator (demodata/agent.yaml)"
			if !live && so.AgentScript == "" {
				if so.Given.AgentModel, err = demo.ScriptedAgent(); err != nil {
					return err
				}
			} else if live {
				agent = lc.Provider + " model " + lc.Model
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			if flagSource(cmd.Flags().Lookup("log-level")) == sourceDefault {
				sf.logLevel = "warn" // keep the transcript readable; problems still show
			}
			rt, err := startRuntime(ctx, &sf, file, "rein-demo")
			if err != nil {
				return err
			}
			defer rt.Close()
			rt.stages = &so
			names, _ := pipeline.ResolveStages([]string{"all"})
			sctx, cancelStages := context.WithCancel(ctx)
			stagesDone := make(chan error, 1)
			go func() { stagesDone <- runStages(sctx, rt, names) }()

			out := cmd.OutOrStdout()
			style := demo.Plain
			if f, ok := out.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
				style = demo.TTY
			}
			if !asJSON {
				fmt.Fprintf(out, "%s — %d conversations, inception module %q, agent: %s\n",
					style.Bold("rein demo"), len(convs), so.modules.module, agent)
				fmt.Fprintf(out, "data %s · NATS %s · metrics and dashboard http://%s/\n\n", sf.dataDir, sf.listen, rt.HTTP.Addr())
			}
			_, err = demo.Play(ctx, rt.NC, rt.Pub, convs, demo.Options{Module: so.modules.module, Agent: agent, TurnTimeout: turnTimeout, JSON: asJSON, Style: style}, out)
			if err != nil {
				cancelStages()
				<-stagesDone
				return err
			}
			if keep {
				fmt.Fprintf(cmd.ErrOrStderr(), "\nkeeping rein running: NATS %s, http://%s/ (metrics at /metrics). Ctrl-C to stop.\n", sf.listen, rt.HTTP.Addr())
				<-ctx.Done()
			}
			cancelStages()
			return <-stagesDone
		},
	}
	sf.bind(cmd, "")
	cmd.Flags().Lookup("data-dir").Usage = "JetStream storage (default: a fresh temporary directory, removed afterwards unless --keep)"
	so.bind(cmd.Flags(), "rules")
	cmd.Flags().BoolVar(&keep, "keep", false, "leave the server, /metrics and the dashboard running after the summary")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON summary object instead of the transcript")
	cmd.Flags().DurationVar(&turnTimeout, "turn-timeout", 60*time.Second, "how long to wait for the agent's reply to one turn")
	return cmd
}
