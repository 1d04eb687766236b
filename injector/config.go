package injector

import (
	"fmt"
	"maps"
	"time"

	"github.com/reinception/rein/inception"
)

// DefaultRecoveryTools maps the default taxonomy's error types to their
// recovery tools (inception.Taxonomy.ToolsByType: derived, never copied).
// A detection that names its recovery tool overrides it.
var DefaultRecoveryTools = inception.DefaultTaxonomy().ToolsByType()

// RecoveryTools is DefaultRecoveryTools with extra's entries added (they
// win), checked: no empty error type or tool.
func RecoveryTools(extra map[string]string) (map[string]string, error) {
	tools := maps.Clone(DefaultRecoveryTools)
	maps.Copy(tools, extra)
	for et, tool := range tools {
		if et == "" || tool == "" {
			return nil, fmt.Errorf("%w: recovery tool map has an empty error type or tool (%q: %q)", ErrInvalidConfig, et, tool)
		}
	}
	return tools, nil
}

// SidecarConfig configures the sidecar responder.
type SidecarConfig struct {
	// Wait is how long a request waits for a detection that has not
	// arrived yet before answering status "timeout" (default 2s).
	Wait time.Duration
	// QueueGroup is the NATS queue group of the responder, so that several
	// replicas share the requests (default "rein-injector").
	QueueGroup string
	// MaxInflight bounds requests waiting at once; past it a request is
	// answered status "busy" at once (default 4096).
	MaxInflight int
	// RecoveryTools maps an error type to its recovery tool when a
	// detection does not name one (added to DefaultRecoveryTools).
	RecoveryTools map[string]string
}

func (c *SidecarConfig) defaults() {
	if c.Wait == 0 {
		c.Wait = 2 * time.Second
	}
	if c.QueueGroup == "" {
		c.QueueGroup = "rein-injector"
	}
	if c.MaxInflight == 0 {
		c.MaxInflight = 4096
	}
}

// Validate checks the configuration after defaults are applied.
func (c SidecarConfig) Validate() error {
	c.defaults()
	switch {
	case c.Wait < 0 || c.Wait > time.Minute:
		return fmt.Errorf("%w: sidecar wait %s must be 0..1m", ErrInvalidConfig, c.Wait)
	case c.MaxInflight < 1:
		return fmt.Errorf("%w: sidecar max inflight must be at least 1", ErrInvalidConfig)
	}
	_, err := RecoveryTools(c.RecoveryTools)
	return err
}
