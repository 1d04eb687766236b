package injector

import (
	"fmt"
	"time"

	"github.com/reinception/rein/inception"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
)

// DefaultRecoveryTools maps the default taxonomy's error types to their
// recovery tools (inception.Taxonomy.ToolsByType: derived, never copied).
// A detection that names its recovery tool overrides it.
var DefaultRecoveryTools = inception.DefaultTaxonomy().ToolsByType()

// Config configures the injector stage.
type Config struct {
	// Workers bounds the detections handled at once, the stage's in-flight
	// limit (default: the consumer's, 4096).
	Workers int
	// AckWait is how long a delivered turn stays owned without a heartbeat
	// before the server redelivers it — after a crash, how soon another
	// holder gets it (0: the stage's default).
	AckWait time.Duration
	// PinTTL is how soon a standby replica of the stage takes over from
	// one that crashed (0: streams.DefaultPinTTL).
	PinTTL time.Duration
	// Sidecar starts the request/reply responder on
	// rein.inception.get.<tenant>.<conv>.<turn> beside the consumer.
	Sidecar bool
	// Fused: a detector in this process publishes each task together with
	// its detection (it calls Stage.Task), so the stage runs no consumer of
	// its own, only the sidecar responder when Sidecar is set.
	Fused bool
	// SidecarWait is how long a sidecar request waits for a detection that
	// has not arrived yet before answering status "timeout" (default 2s).
	SidecarWait time.Duration
	// QueueGroup is the NATS queue group of the responder, so that several
	// replicas share the requests (default "rein-injector").
	QueueGroup string
	// SidecarMaxInflight bounds requests waiting at once; past it a request
	// is answered status "busy" at once (default 4096).
	SidecarMaxInflight int
	// RecheckAfter: a detection stored longer ago than this is
	// checked against REIN_TASKS before its task is published, because the
	// task stream's duplicate window may no longer hold that task's id: a
	// durable created after the stages ran fused, or one recreated, reads
	// REIN_DETECTIONS from its start. The conversation's last stored task
	// answers it: a task of this turn or a later one means this turn's task
	// exists. It must be shorter than REIN_TASKS' duplicate window (default:
	// half that window, read from the stream when the stage starts).
	RecheckAfter time.Duration
	// RecoveryTools maps an error type to its recovery tool when a detection
	// does not name one (default DefaultRecoveryTools; entries given here
	// are added to the defaults).
	RecoveryTools map[string]string
}

func (c *Config) defaults() {
	if c.SidecarWait == 0 {
		c.SidecarWait = 2 * time.Second
	}
	if c.QueueGroup == "" {
		c.QueueGroup = "rein-injector"
	}
	if c.SidecarMaxInflight == 0 {
		c.SidecarMaxInflight = 4096
	}
	tools := make(map[string]string, len(DefaultRecoveryTools)+len(c.RecoveryTools))
	for k, v := range DefaultRecoveryTools {
		tools[k] = v
	}
	for k, v := range c.RecoveryTools {
		tools[k] = v
	}
	c.RecoveryTools = tools
}

// Validate checks the configuration after defaults are applied.
func (c Config) Validate() error {
	c.defaults()
	switch {
	case c.Workers < 0 || c.Workers > 4096:
		return fmt.Errorf("%w: workers %d must be 0 (the default) to 4096", ErrInvalidConfig, c.Workers)
	case c.SidecarWait < 0 || c.SidecarWait > time.Minute:
		return fmt.Errorf("%w: sidecar wait %s must be 0..1m", ErrInvalidConfig, c.SidecarWait)
	case c.RecheckAfter < 0:
		return fmt.Errorf("%w: recheck-after %s must not be negative", ErrInvalidConfig, c.RecheckAfter)
	case c.SidecarMaxInflight < 1:
		return fmt.Errorf("%w: sidecar max inflight must be at least 1", ErrInvalidConfig)
	}
	for et, tool := range c.RecoveryTools {
		if et == "" || tool == "" {
			return fmt.Errorf("%w: recovery tool map has an empty error type or tool (%q: %q)", ErrInvalidConfig, et, tool)
		}
	}
	return nil
}

// Deps are the injector's collaborators. The sidecar responder uses the
// JetStream context's NATS connection.
type Deps struct {
	streams.StageDeps
	// TaskKey signs every task (schemas.TaskKey), so that the agent worker
	// can tell rein's tasks from forged ones; nil publishes them unsigned.
	TaskKey *schemas.TaskKey
}
