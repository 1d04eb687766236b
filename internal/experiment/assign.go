package experiment

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/reinception/rein/schemas"
)

// MaxHoldout caps the control fraction: rein is never withheld from most
// of a tenant's conversations.
const MaxHoldout = 0.5

// MinKeyBytes is the shortest assignment key accepted.
const MinKeyBytes = 16

// ErrInvalidConfig wraps every configuration error.
var ErrInvalidConfig = errors.New("experiment: invalid configuration")

// Tenant is one tenant's experiment.
type Tenant struct {
	// Name names the experiment; a new name draws new arms.
	Name string `yaml:"name"`
	// Holdout is the fraction of conversations in control, 0 < h <= 0.5.
	Holdout float64 `yaml:"holdout"`
	// Killed ends the holdout: every conversation is treated.
	Killed bool `yaml:"killed"`
}

// Config is the experiments file.
type Config struct {
	// Key is the assignment key (or KeyFile, a file holding it). It must
	// be the same on every replica; changing it redraws every arm.
	Key     string            `yaml:"key"`
	KeyFile string            `yaml:"key_file"`
	Tenants map[string]Tenant `yaml:"tenants"`
}

// Validate checks the configuration (the key must be resolved).
func (c Config) Validate() error {
	if len(c.Tenants) > 0 && len(c.Key) < MinKeyBytes {
		return fmt.Errorf("%w: the assignment key must have at least %d bytes", ErrInvalidConfig, MinKeyBytes)
	}
	for id, t := range c.Tenants {
		switch {
		case !schemas.ValidID(id):
			return fmt.Errorf("%w: tenant %q is not a valid id", ErrInvalidConfig, id)
		case !schemas.ValidID(t.Name):
			return fmt.Errorf("%w: tenants.%s.name %q is not a valid id", ErrInvalidConfig, id, t.Name)
		case math.IsNaN(t.Holdout) || t.Holdout <= 0 || t.Holdout > MaxHoldout:
			return fmt.Errorf("%w: tenants.%s.holdout %v must be in (0, %v]", ErrInvalidConfig, id, t.Holdout, MaxHoldout)
		}
	}
	return nil
}

// LoadFile reads and validates an experiments file, resolving key_file
// (relative to the file's directory when not absolute).
func LoadFile(path string) (Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("experiment: %w", err)
	}
	var c Config
	if err := yaml.UnmarshalWithOptions(b, &c, yaml.Strict()); err != nil {
		return Config{}, fmt.Errorf("%w: %s: %s", ErrInvalidConfig, path, yaml.FormatError(err, false, true))
	}
	if c.KeyFile != "" {
		kp := c.KeyFile
		if !strings.HasPrefix(kp, "/") {
			kp = dirOf(path) + kp
		}
		k, err := os.ReadFile(kp)
		if err != nil {
			return Config{}, fmt.Errorf("%w: key_file: %v", ErrInvalidConfig, err)
		}
		c.Key = strings.TrimSpace(string(k))
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

func dirOf(path string) string {
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		return path[:i+1]
	}
	return ""
}

// Assignment is a conversation's place in its tenant's experiment; the
// zero value means no experiment (treated as without one).
type Assignment struct {
	Experiment string
	Arm        string
}

// Assign is the keyed draw: control when the hash, read as a uniform
// number in [0,1), falls under the holdout fraction. A killed experiment
// assigns nothing.
func Assign(key []byte, tenant, conv string, t Tenant) Assignment {
	if t.Killed || t.Holdout <= 0 {
		return Assignment{}
	}
	arm := schemas.ArmTreatment
	if unit(key, t.Name, tenant, conv) < min(t.Holdout, MaxHoldout) {
		arm = schemas.ArmControl
	}
	return Assignment{Experiment: t.Name, Arm: arm}
}

// unit maps (experiment, tenant, conversation) to [0,1) under the key.
// Ids hold no NUL, so the joined message is unambiguous.
func unit(key []byte, name, tenant, conv string) float64 {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(name + "\x00" + tenant + "\x00" + conv))
	return float64(binary.BigEndian.Uint64(m.Sum(nil))>>11) / (1 << 53)
}

// Sticky is the arm a conversation keeps: the one recorded on its first
// detection (recorded) when that belongs to the tenant's current
// experiment, else the fresh draw. A killed experiment's draw is empty and
// wins, so the kill switch treats every conversation at once.
func Sticky(recorded, drawn Assignment) Assignment {
	if drawn.Experiment == "" || recorded.Experiment != drawn.Experiment || recorded.Arm == "" {
		return drawn
	}
	return recorded
}

// Assigner holds the current configuration; reloads swap it atomically.
type Assigner struct {
	cur atomic.Pointer[Config]
}

// NewAssigner validates cfg and holds it.
func NewAssigner(cfg Config) (*Assigner, error) {
	a := &Assigner{}
	return a, a.Set(cfg)
}

// Set replaces the configuration; an invalid one is refused and the old
// one kept.
func (a *Assigner) Set(cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	a.cur.Store(&cfg)
	return nil
}

// Tenant returns a tenant's experiment, if it has one.
func (a *Assigner) Tenant(tenant string) (Tenant, bool) {
	if a == nil || a.cur.Load() == nil {
		return Tenant{}, false
	}
	t, ok := a.cur.Load().Tenants[tenant]
	return t, ok
}

// Assign draws a conversation's arm under the current configuration.
func (a *Assigner) Assign(tenant, conv string) Assignment {
	if a == nil {
		return Assignment{}
	}
	c := a.cur.Load()
	if c == nil {
		return Assignment{}
	}
	t, ok := c.Tenants[tenant]
	if !ok {
		return Assignment{}
	}
	return Assign([]byte(c.Key), tenant, conv, t)
}

// Watch re-reads path every interval until ctx ends, and applies it when
// its content changed; a file that does not load is reported to onErr and
// the configuration in force kept. It is how the kill switch takes effect
// without a restart.
func (a *Assigner) Watch(ctx context.Context, path string, every time.Duration, onErr func(error)) {
	// The first tick loads the file again: it may have changed since the
	// caller read it.
	var last []byte
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		b, err := os.ReadFile(path)
		if err != nil || (last != nil && string(b) == string(last)) {
			if err != nil && onErr != nil {
				onErr(fmt.Errorf("experiment: reload: %w", err))
			}
			continue
		}
		last = b
		cfg, err := LoadFile(path)
		if err == nil {
			err = a.Set(cfg)
		}
		if err != nil && onErr != nil {
			onErr(fmt.Errorf("experiment: reload kept the configuration in force: %w", err))
		}
	}
}
