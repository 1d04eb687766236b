package dashboard

import (
	"fmt"
	"time"

	reinlabels "github.com/reinception/rein/internal/labels"
)

// Config tunes the dashboard. The zero value is completed with defaults.
type Config struct {
	// Title is shown in the page header (default "rein").
	Title string `yaml:"title"`
	// RecentOutcomes is how many of the last REIN_OUTCOMES events the
	// overview lists (default 20).
	RecentOutcomes int `yaml:"recent_outcomes"`
	// PollInterval is how often the overview's script refreshes
	// (default 5s).
	PollInterval time.Duration `yaml:"poll_interval"`
	// ReadTimeout bounds each request's reads from JetStream (default 5s).
	ReadTimeout time.Duration `yaml:"read_timeout"`
	// CacheTTL is how long one computed overview is reused, so many open
	// pages cost one set of reads (default 1s; negative disables).
	CacheTTL time.Duration `yaml:"cache_ttl"`
	// MaxConversationEvents bounds the events read per stream for one
	// conversation view (default 2000).
	MaxConversationEvents int `yaml:"max_conversation_events"`
	// SampleInterval is how often Run samples the counters for the time
	// windows and sparklines (default 10s); page loads sample too.
	SampleInterval time.Duration `yaml:"sample_interval"`
	// AlarmWindow is how far back a growing dead-letter queue raises the
	// banner (default 1h).
	AlarmWindow time.Duration `yaml:"alarm_window"`
	// LabelQueue is how the review queue is drawn (labels.QueueConfig's
	// defaults when zero): a label given on the conversation page records
	// its turn's draw, as rein label does.
	LabelQueue reinlabels.QueueConfig `yaml:"-"`
}

// WithDefaults returns c with every unset field at its default.
func (c Config) WithDefaults() Config {
	if c.Title == "" {
		c.Title = "rein"
	}
	if c.RecentOutcomes == 0 {
		c.RecentOutcomes = 20
	}
	if c.PollInterval == 0 {
		c.PollInterval = 5 * time.Second
	}
	if c.ReadTimeout == 0 {
		c.ReadTimeout = 5 * time.Second
	}
	if c.CacheTTL == 0 {
		c.CacheTTL = time.Second
	}
	if c.MaxConversationEvents == 0 {
		c.MaxConversationEvents = 2000
	}
	if c.SampleInterval == 0 {
		c.SampleInterval = 10 * time.Second
	}
	if c.AlarmWindow == 0 {
		c.AlarmWindow = time.Hour
	}
	return c
}

// Validate checks a config (after WithDefaults).
func (c Config) Validate() error {
	switch {
	case c.RecentOutcomes < 0 || c.RecentOutcomes > 1000:
		return fmt.Errorf("%w: recent_outcomes %d is outside 0..1000", ErrInvalidConfig, c.RecentOutcomes)
	case c.PollInterval < 100*time.Millisecond:
		return fmt.Errorf("%w: poll_interval %s is below 100ms", ErrInvalidConfig, c.PollInterval)
	case c.ReadTimeout <= 0:
		return fmt.Errorf("%w: read_timeout %s must be positive", ErrInvalidConfig, c.ReadTimeout)
	case c.MaxConversationEvents < 1:
		return fmt.Errorf("%w: max_conversation_events %d must be positive", ErrInvalidConfig, c.MaxConversationEvents)
	case c.SampleInterval < time.Second:
		return fmt.Errorf("%w: sample_interval %s is below 1s", ErrInvalidConfig, c.SampleInterval)
	case c.AlarmWindow < time.Minute:
		return fmt.Errorf("%w: alarm_window %s is below 1m", ErrInvalidConfig, c.AlarmWindow)
	}
	return nil
}
