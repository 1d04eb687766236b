package llm

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

func TestConfigFromEnv(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		want    Config
		wantErr string // from Validate
	}{
		{name: "openai with fallback key",
			env:  map[string]string{EnvProvider: "OpenAI", EnvModel: "gpt-test", "OPENAI_API_KEY": "sk-1", "ANTHROPIC_API_KEY": "ak"},
			want: Config{Provider: "openai", Model: "gpt-test", APIKey: "sk-1"}},
		{name: "anthropic with fallback key",
			env:  map[string]string{EnvProvider: "anthropic", EnvModel: "claude-test", "OPENAI_API_KEY": "sk-1", "ANTHROPIC_API_KEY": "ak"},
			want: Config{Provider: "anthropic", Model: "claude-test", APIKey: "ak"}},
		{name: "explicit key wins, headers, timeout seconds, local base url",
			env: map[string]string{EnvProvider: "openai", EnvModel: "m", EnvAPIKey: "rk", "OPENAI_API_KEY": "sk", EnvBaseURL: "http://127.0.0.1:8000/v1",
				EnvHeaders: "X-A=1, X-B = two=2", EnvTimeout: "2.5", EnvMaxRetries: "5"},
			want: Config{Provider: "openai", Model: "m", APIKey: "rk", BaseURL: "http://127.0.0.1:8000/v1",
				Headers: map[string]string{"X-A": "1", "X-B": "two=2"}, Timeout: 2500 * time.Millisecond, MaxRetries: 5}},
		{name: "script infers scripted",
			env:  map[string]string{EnvScript: "demo.yaml", EnvTimeout: "150ms"},
			want: Config{Provider: "scripted", Script: "demo.yaml", Timeout: 150 * time.Millisecond}},
		{name: "cassette infers replay",
			env:  map[string]string{EnvCassette: "c.jsonl"},
			want: Config{Provider: "replay", Cassette: "c.jsonl"}},
		{name: "bad timeout is reported by Validate",
			env:     map[string]string{EnvScript: "demo.yaml", EnvTimeout: "soon"},
			want:    Config{Provider: "scripted", Script: "demo.yaml"},
			wantErr: EnvTimeout},
		{name: "bad header is reported by Validate",
			env:     map[string]string{EnvScript: "demo.yaml", EnvHeaders: "novalue"},
			want:    Config{Provider: "scripted", Script: "demo.yaml", Headers: map[string]string{}},
			wantErr: EnvHeaders},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := configFromLookup(func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok })
			err := got.Validate()
			got.envErr, got.envLookup, got.keyFrom = nil, nil, ""
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("config = %+v\nwant     %+v", got, tt.want)
			}
			if tt.wantErr == "" && err != nil {
				t.Errorf("Validate: %v", err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("Validate = %v, want mention of %s", err, tt.wantErr)
			}
		})
	}
}

// TestConfigKeyFollowsFlagProvider: a --provider flag applied after
// ConfigFromEnv gets its own vendor's key, never the other vendor's.
func TestConfigKeyFollowsFlagProvider(t *testing.T) {
	env := map[string]string{EnvProvider: "openai", "OPENAI_API_KEY": "sk-openai", "ANTHROPIC_API_KEY": "ak-anthropic"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	tests := []struct {
		provider, want string
	}{{"openai", "sk-openai"}, {"anthropic", "ak-anthropic"}, {"scripted", ""}}
	for _, tt := range tests {
		cfg := configFromLookup(lookup)
		cfg.Provider = tt.provider // as cmd/rein's --provider does
		if got := cfg.withInferredProvider().APIKey; got != tt.want {
			t.Errorf("provider %s: key %q, want %q", tt.provider, got, tt.want)
		}
	}
	env[EnvAPIKey] = "rk-explicit"
	cfg := configFromLookup(lookup)
	cfg.Provider = "anthropic"
	if got := cfg.withInferredProvider().APIKey; got != "rk-explicit" {
		t.Errorf("explicit key replaced: %q", got)
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string // "" = valid
	}{
		{"openai ok", Config{Provider: "openai", Model: "m", APIKey: "k"}, ""},
		{"openai local server needs no key", Config{Provider: "openai", Model: "m", BaseURL: "http://localhost:11434/v1"}, ""},
		{"missing provider", Config{}, "provider is required"},
		{"unknown provider", Config{Provider: "gemini"}, `unknown provider "gemini"`},
		{"missing model", Config{Provider: "anthropic", APIKey: "k"}, "needs a model"},
		{"missing key", Config{Provider: "anthropic", Model: "m"}, "needs an API key"},
		{"bad base url", Config{Provider: "openai", Model: "m", BaseURL: "127.0.0.1:8000"}, "base URL"},
		{"replay needs cassette", Config{Provider: "replay"}, "cassette"},
		{"record plus replay", Config{Provider: "replay", Cassette: "a", Record: "b"}, "cannot be combined"},
		{"scripted needs script", Config{Provider: "scripted"}, "script"},
		{"negative timeout", Config{Script: "s", Timeout: -time.Second}, "negative"},
		{"bad header name", Config{Script: "s", Headers: map[string]string{"a b": "1"}}, "header name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate = %v, want ErrInvalidConfig mentioning %q", err, tt.want)
			}
		})
	}
}

func TestConfigStringRedactsKey(t *testing.T) {
	s := Config{Provider: "openai", APIKey: "sk-secret", Headers: map[string]string{"X-Key": "hdr-secret"}}.String()
	if strings.Contains(s, "secret") {
		t.Fatalf("String leaks a secret: %s", s)
	}
}

func TestNewTwiceSameRegisterer(t *testing.T) {
	reg := prometheus.NewRegistry()
	cfg := Config{Script: "testdata/airline_demo.yaml"}
	for i := 0; i < 2; i++ {
		if _, err := New(cfg, reg); err != nil {
			t.Fatalf("New #%d: %v", i+1, err)
		}
	}
	if _, err := New(cfg, nil); err != nil {
		t.Fatalf("New with nil registerer: %v", err)
	}
}

func TestNewErrors(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want error
	}{
		{"invalid config", Config{Provider: "nope"}, ErrInvalidConfig},
		{"missing script", Config{Script: "testdata/does-not-exist.yaml"}, ErrScript},
		{"missing cassette", Config{Cassette: "testdata/does-not-exist.jsonl"}, ErrCassette},
		{"unwritable record file", Config{Script: "testdata/airline_demo.yaml", Record: "testdata/no/such/dir/x.jsonl"}, ErrInvalidConfig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(tt.cfg, nil); !errors.Is(err, tt.want) {
				t.Fatalf("New = %v, want %v", err, tt.want)
			}
		})
	}
}

// The key can come from a file (a mounted secret), so that it sits in no
// process environment; the variable wins over the file, and a missing or
// empty file is a configuration error, not a silent keyless client.
func TestAPIKeyFromAFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "key")
	if err := os.WriteFile(file, []byte("sk-from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	lookup := func(env map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	}
	c := configFromLookup(lookup(map[string]string{EnvProvider: "openai", EnvModel: "m", EnvAPIKeyFile: file}))
	if c.APIKey != "sk-from-file" || c.Validate() != nil {
		t.Errorf("key %q, validate %v; want the file's key", c.APIKey, c.Validate())
	}
	c = configFromLookup(lookup(map[string]string{EnvProvider: "openai", EnvModel: "m", EnvAPIKey: "sk-env", EnvAPIKeyFile: file}))
	if c.APIKey != "sk-env" {
		t.Errorf("key %q, want the variable's", c.APIKey)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{filepath.Join(dir, "missing"), empty} {
		c = configFromLookup(lookup(map[string]string{EnvProvider: "openai", EnvModel: "m", EnvAPIKeyFile: path}))
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), EnvAPIKeyFile) {
			t.Errorf("%s: validate %v, want an error naming %s", path, err, EnvAPIKeyFile)
		}
	}
}
