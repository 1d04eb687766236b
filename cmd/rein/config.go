package main

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// fileConfig is rein.yaml: top-level keys named like flags (data-dir,
// nats-url, http, stages, …) plus sections for what flags cannot express.
type fileConfig struct {
	raw map[string]any
	// Sections, decoded by the parts that own them.
	Sections map[string][]byte
}

// section returns a section's YAML (nil when absent).
func (c *fileConfig) section(name string) []byte {
	if c == nil {
		return nil
	}
	return c.Sections[name]
}

// sectionNames are the keys of rein.yaml that are not flags. Only
// sections something reads are accepted: detector:, agent: and tenants:
// were accepted and silently ignored, so a user believed a setting was in
// force that was not; they are now unknown keys, refused with the key.
var sectionNames = map[string]bool{"streams": true, "sinks": true}

func loadFileConfig(path string) (*fileConfig, error) {
	c := &fileConfig{raw: map[string]any{}, Sections: map[string][]byte{}}
	if path == "" {
		return c, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if err := yaml.Unmarshal(b, &c.raw); err != nil {
		return nil, fmt.Errorf("config %s: %s", path, yaml.FormatError(err, false, true))
	}
	for k, v := range c.raw {
		if sectionNames[k] {
			sb, err := yaml.Marshal(v)
			if err != nil {
				return nil, fmt.Errorf("config %s: section %s: %w", path, k, err)
			}
			c.Sections[k] = sb
			delete(c.raw, k)
		}
	}
	return c, nil
}

// envName is the environment variable that sets a flag: REIN_<FLAG>.
func envName(flag string) string {
	return "REIN_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// applySources fills every flag the user did not set on the command line,
// first from the environment (REIN_<FLAG>), then from the config file.
// Unknown config keys are an error naming the key.
func applySources(cmd *cobra.Command, cfg *fileConfig) error {
	var err error
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if err != nil || f.Changed {
			return
		}
		if v, ok := os.LookupEnv(envName(f.Name)); ok {
			if e := f.Value.Set(v); e != nil {
				err = fmt.Errorf("%s=%q: %w", envName(f.Name), v, e)
			}
			return
		}
		if cfg == nil {
			return
		}
		if v, ok := cfg.raw[f.Name]; ok {
			if e := setFromYAML(f, v); e != nil {
				err = fmt.Errorf("config key %s: %w", f.Name, e)
			}
		}
	})
	if err != nil {
		return err
	}
	if cfg != nil {
		for k := range cfg.raw {
			if cmd.Flags().Lookup(k) == nil {
				return fmt.Errorf("config key %q is not a flag of %q nor a section (%s)", k, cmd.Name(), strings.Join(slices.Sorted(maps.Keys(sectionNames)), ", "))
			}
		}
	}
	return nil
}

func setFromYAML(f *pflag.Flag, v any) error {
	switch x := v.(type) {
	case []any:
		parts := make([]string, len(x))
		for i, p := range x {
			parts[i] = fmt.Sprint(p)
		}
		return f.Value.Set(strings.Join(parts, ","))
	default:
		return f.Value.Set(fmt.Sprint(x))
	}
}
