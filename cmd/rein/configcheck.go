package main

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml/ast"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"github.com/reinception/rein/agentworker"
	"github.com/reinception/rein/internal/experiment"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/natsserver"
)

// preflight checks, before anything starts, what serve would otherwise
// refuse only after its NATS server, streams and earlier stages were up:
// the streams section, the sinks section, the inception module (its model
// settings, taxonomy and learned models), the experiments file and the
// agent's model. Each error
// names its place in rein.yaml when the file set it. serve runs it first;
// rein config check runs nothing else.
func preflight(cmd *cobra.Command, file *fileConfig, so *stageOptions, names []string, prov natsserver.ProvisionConfig) error {
	if err := prov.Validate(); err != nil {
		return file.locate("streams", err)
	}
	if slices.Contains(names, streams.StageEscalation) {
		sinks, err := sinksConfig(file)
		if err != nil {
			return file.locate("sinks", err)
		}
		if err := sinks.Validate(); err != nil {
			return file.locate("sinks", err)
		}
	}
	modules := so.modules.options()
	if slices.Contains(names, streams.StageDetector) {
		// Built and dropped: a model client dials nothing until called.
		if _, _, err := modules.Build(prometheus.NewRegistry()); err != nil {
			return fmt.Errorf("stage detector: %w%s", err, modelSources(cmd))
		}
		if so.experiments != "" {
			if _, err := experiment.LoadFile(so.experiments); err != nil {
				return fmt.Errorf("--experiments: %w", err)
			}
		}
	}
	if slices.Contains(names, streams.StageAgentWorker) && so.AgentWorker.Backend != agentworker.BackendNone && so.Given.AgentModel == nil && so.AgentScript == "" {
		if lc := modules.LLMConfig(); lc.Provider != "" {
			if err := lc.Validate(); err != nil {
				return fmt.Errorf("agent model: %w%s", err, modelSources(cmd))
			}
		}
	}
	return nil
}

// checkedServe resolves serve's configuration (flags, environment,
// rein.yaml) and runs the preflight on it: what serve and config check
// both do before anything starts.
func checkedServe(cmd *cobra.Command, so *stageOptions, stagesFlag []string) (*fileConfig, []string, natsserver.ProvisionConfig, error) {
	file, names, err := resolveServe(cmd, so, stagesFlag)
	if err != nil {
		return nil, nil, natsserver.ProvisionConfig{}, err
	}
	prov, err := provisionConfig(file)
	if err != nil {
		return nil, nil, natsserver.ProvisionConfig{}, err
	}
	if err := preflight(cmd, file, so, names, prov); err != nil {
		return nil, nil, natsserver.ProvisionConfig{}, err
	}
	return file, names, prov, nil
}

// modelSources says where the model settings came from, so that a
// provider set in rein.yaml is found by its line.
func modelSources(cmd *cobra.Command) string {
	var parts []string
	for _, name := range []string{"provider", "model", "base-url", "module"} {
		if f := cmd.Flags().Lookup(name); f != nil && f.Value.String() != "" {
			if src := flagSource(f); src != sourceDefault {
				parts = append(parts, name+": "+src)
			}
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// sectionPath finds the place an error names inside a section:
// "streams.REIN_TURN" or "sinks[1]".
var sectionPath = regexp.MustCompile(`\b(?:streams\.([A-Za-z_]+)|sinks\[(\d+)\])`)

// locate prefixes err with the file and line of what it names in section:
// the stream's or the sink's own line when the message names one, else the
// section's line. An error not from the file is returned as it is.
func (c *fileConfig) locate(section string, err error) error {
	if !c.hasSection(section) || strings.HasPrefix(err.Error(), "config ") {
		return err
	}
	line := c.lines[section]
	if m := sectionPath.FindStringSubmatch(err.Error()); m != nil {
		var at ast.Node
		if m[1] != "" {
			at = c.find(section, "streams", m[1])
		} else if i, convErr := strconv.Atoi(m[2]); convErr == nil {
			at = c.find(section, "["+strconv.Itoa(i)+"]")
		}
		if at != nil {
			line = at.GetToken().Position.Line
		}
	}
	return fmt.Errorf("config %s:%d: %w", c.path, line, err)
}

// find walks a section's YAML by map keys and "[i]" sequence indexes and
// returns the node found, or nil.
func (c *fileConfig) find(section string, path ...string) ast.Node {
	n := c.sections[section]
	for _, step := range path {
		switch v := n.(type) {
		case *ast.MappingNode:
			n = nil
			for _, mv := range v.Values {
				if strings.TrimSpace(mv.Key.String()) == step {
					n = mv.Value
					if len(path) > 0 && step == path[len(path)-1] {
						n = mv.Key
					}
					break
				}
			}
		case *ast.MappingValueNode:
			if strings.TrimSpace(v.Key.String()) != step {
				return nil
			}
			n = v.Value
			if step == path[len(path)-1] {
				n = v.Key
			}
		case *ast.SequenceNode:
			i, err := strconv.Atoi(strings.Trim(step, "[]"))
			if err != nil || i < 0 || i >= len(v.Values) {
				return nil
			}
			n = v.Values[i]
		default:
			return nil
		}
		if n == nil {
			return nil
		}
	}
	return n
}

func newConfigCheckCmd() *cobra.Command {
	var sf serverFlags
	var so stageOptions
	var stagesFlag []string
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Check the configuration rein serve would run with, and exit 0 when serve would accept it",
		Long: `config check takes the same flags, environment and --config rein.yaml as rein serve and checks,
without starting anything, everything serve refuses: an unknown key or field (with its line and a
"did you mean"), a stream name rein does not have, a sink of an unknown type or with a missing
setting, an inception module or agent whose model settings are incomplete (a provider without a
model), a taxonomy or learned model that does not load. Each error names its file and line when
rein.yaml set the value. Exit 0: serve would start with it; 1: it would refuse (the reason on
stderr). serve runs the same checks first, before its NATS server starts.`,
		Example: `  rein config check --config rein.yaml
  REIN_LLM_PROVIDER=openai rein config check     # fails: provider openai needs a model`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			file, names, _, err := checkedServe(cmd, &so, stagesFlag)
			if err != nil {
				return err
			}
			where := "flags, environment and defaults"
			if file != nil && file.path != "" {
				where = file.path
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "ok: rein serve accepts this configuration (%s; stages %s)\n", where, strings.Join(names, ","))
			return err
		},
	}
	bindServe(cmd, &sf, &so, &stagesFlag)
	return cmd
}
