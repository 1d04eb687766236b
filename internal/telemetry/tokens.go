package telemetry

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/goccy/go-yaml"
)

// Role is what a bearer token may do on the HTTP port.
type Role string

// Roles. RoleOperator implies every other role.
const (
	RoleIngress   Role = "ingress"   // POST /v1/turns for its tenants
	RoleDashboard Role = "dashboard" // the dashboard pages and their JSON
	RoleMetrics   Role = "metrics"   // GET /metrics
	RoleOperator  Role = "operator"  // all of the above
)

// AllTenants in a token's tenants list binds it to every tenant.
const AllTenants = "*"

// Principal is the caller a bearer token names.
type Principal struct {
	Name    string
	Tenants []string
	Roles   []Role
}

// Has reports whether the principal holds role (operators hold all).
func (p *Principal) Has(role Role) bool {
	return p != nil && (slices.Contains(p.Roles, role) || slices.Contains(p.Roles, RoleOperator))
}

// AllowsTenant reports whether the principal may act for tenant.
func (p *Principal) AllowsTenant(tenant string) bool {
	return p != nil && (slices.Contains(p.Tenants, AllTenants) || slices.Contains(p.Tenants, tenant))
}

// AllowsAllTenants reports whether the principal is bound to no one tenant.
func (p *Principal) AllowsAllTenants() bool {
	return p != nil && slices.Contains(p.Tenants, AllTenants)
}

type principalKey struct{}

// WithPrincipal returns ctx carrying p.
func WithPrincipal(ctx context.Context, p *Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the authenticated caller of a request; ok is false
// when the port runs without authentication (loopback or --insecure).
func PrincipalFrom(ctx context.Context) (p *Principal, ok bool) {
	p, ok = ctx.Value(principalKey{}).(*Principal)
	return p, ok
}

// Tokens maps bearer tokens, by their SHA-256, to principals.
type Tokens struct {
	entries []tokenEntry
}

type tokenEntry struct {
	sum [sha256.Size]byte
	p   *Principal
}

// TokenFile is the YAML form of a tokens file:
//
//	tokens:
//	  - name: acme-platform
//	    sha256: 5e88…   # hex SHA-256 of the token (preferred), or
//	    token: …        # the token itself
//	    tenants: [acme] # or ["*"]
//	    roles: [ingress]
type TokenFile struct {
	Tokens []TokenSpec `yaml:"tokens"`
}

// TokenSpec is one entry of a tokens file.
type TokenSpec struct {
	Name    string   `yaml:"name"`
	SHA256  string   `yaml:"sha256"`
	Token   string   `yaml:"token"`
	Tenants []string `yaml:"tenants"`
	Roles   []Role   `yaml:"roles"`
}

// NewTokens checks the specs and builds the lookup table.
func NewTokens(specs []TokenSpec) (*Tokens, error) {
	t := &Tokens{}
	for i, s := range specs {
		name := s.Name
		if name == "" {
			name = fmt.Sprintf("tokens[%d]", i)
		}
		var sum [sha256.Size]byte
		switch {
		case s.SHA256 != "" && s.Token != "":
			return nil, fmt.Errorf("%w: %s: give sha256 or token, not both", ErrConfig, name)
		case s.SHA256 != "":
			b, err := hex.DecodeString(s.SHA256)
			if err != nil || len(b) != sha256.Size {
				return nil, fmt.Errorf("%w: %s: sha256 must be 64 hex digits", ErrConfig, name)
			}
			copy(sum[:], b)
		case len(s.Token) >= 16:
			sum = sha256.Sum256([]byte(s.Token))
		default:
			return nil, fmt.Errorf("%w: %s: a token of at least 16 characters or its sha256 is required", ErrConfig, name)
		}
		if len(s.Roles) == 0 {
			return nil, fmt.Errorf("%w: %s: no roles", ErrConfig, name)
		}
		for _, r := range s.Roles {
			if !slices.Contains([]Role{RoleIngress, RoleDashboard, RoleMetrics, RoleOperator}, r) {
				return nil, fmt.Errorf("%w: %s: unknown role %q (ingress, dashboard, metrics, operator)", ErrConfig, name, r)
			}
		}
		if len(s.Tenants) == 0 && (slices.Contains(s.Roles, RoleIngress) || slices.Contains(s.Roles, RoleDashboard)) {
			return nil, fmt.Errorf("%w: %s: an ingress or dashboard token names its tenants (or \"*\")", ErrConfig, name)
		}
		for _, e := range t.entries {
			if e.sum == sum {
				return nil, fmt.Errorf("%w: %s: the same token twice", ErrConfig, name)
			}
		}
		t.entries = append(t.entries, tokenEntry{sum: sum, p: &Principal{Name: name, Tenants: slices.Clone(s.Tenants), Roles: slices.Clone(s.Roles)}})
	}
	return t, nil
}

// LoadTokens reads a tokens file (TokenFile).
func LoadTokens(path string) (*Tokens, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tokens: %w", err)
	}
	var f TokenFile
	if err := yaml.UnmarshalWithOptions(b, &f, yaml.Strict()); err != nil {
		return nil, fmt.Errorf("%w: tokens %s: %s", ErrConfig, path, yaml.FormatError(err, false, false))
	}
	t, err := NewTokens(f.Tokens)
	if err != nil {
		return nil, fmt.Errorf("tokens %s: %w", path, err)
	}
	return t, nil
}

// Merge returns the tokens of t and o together.
func (t *Tokens) Merge(o *Tokens) *Tokens {
	if t == nil {
		return o
	}
	if o == nil {
		return t
	}
	return &Tokens{entries: append(slices.Clone(t.entries), o.entries...)}
}

// Lookup returns the principal of a presented token, nil when unknown. Every
// entry is compared, in constant time, whatever matches.
func (t *Tokens) Lookup(token string) *Principal {
	if t == nil || token == "" {
		return nil
	}
	sum := sha256.Sum256([]byte(token))
	var found *Principal
	for _, e := range t.entries {
		if subtle.ConstantTimeCompare(sum[:], e.sum[:]) == 1 {
			found = e.p
		}
	}
	return found
}

// LocalTokenFile is the name, in the data directory, of the token rein
// generates for the default loopback setup.
const LocalTokenFile = "http-token"

// EnsureLocalToken returns the local operator token of dataDir, writing a
// new random one (mode 0600) on first start, so that
// curl -H "Authorization: Bearer $(cat data/http-token)" works.
func EnsureLocalToken(dataDir string) (path string, t *Tokens, err error) {
	path = filepath.Join(dataDir, LocalTokenFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		raw := make([]byte, 32)
		if _, err := rand.Read(raw); err != nil {
			return "", nil, fmt.Errorf("local token: %w", err)
		}
		b = []byte(hex.EncodeToString(raw) + "\n")
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			return EnsureLocalToken(dataDir)
		}
		if err != nil {
			return "", nil, fmt.Errorf("local token: %w", err)
		}
		if _, err := f.Write(b); err != nil {
			f.Close()
			return "", nil, fmt.Errorf("local token: %w", err)
		}
		if err := f.Close(); err != nil {
			return "", nil, fmt.Errorf("local token: %w", err)
		}
	} else if err != nil {
		return "", nil, fmt.Errorf("local token: %w", err)
	}
	tok := string(bytes.TrimSpace(b))
	t, err = NewTokens([]TokenSpec{{Name: "local", Token: tok, Tenants: []string{AllTenants}, Roles: []Role{RoleOperator}}})
	if err != nil {
		return "", nil, fmt.Errorf("local token %s: %w", path, err)
	}
	return path, t, nil
}

// bearer extracts the token of an Authorization: Bearer header.
func bearer(h string) (string, bool) {
	const prefix = "bearer "
	if len(h) <= len(prefix) || !strings.EqualFold(h[:len(prefix)], prefix) {
		return "", false
	}
	return strings.TrimSpace(h[len(prefix):]), true
}
