package main

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/reinception/rein/agentworker"
	"github.com/reinception/rein/inception"
	"github.com/reinception/rein/internal/llm"
	"github.com/reinception/rein/streams/natsserver"
)

// setting is one entry of the effective configuration: what is in force
// and where it came from.
type setting struct {
	key, value, source string
}

// redacted stands for a secret that is set.
const redacted = "***"

// secretFlags are the flags whose values are never printed or logged.
var secretFlags = map[string]bool{"nats-password": true, "nats-token": true}

// inferModule applies the one rule that links two settings: with a model
// provider named (--provider, REIN_LLM_PROVIDER or rein.yaml; not one
// inferred from REIN_LLM_SCRIPT or a cassette, which may drive the agent
// alone) and --module left at its default, the inception module is llm;
// the source says so.
func inferModule(cmd *cobra.Command, m *moduleFlags) {
	f := cmd.Flags().Lookup("module")
	if f == nil || flagSource(f) != sourceDefault || m.provider == "" {
		return
	}
	m.module = inception.ModuleLLM
	setSource(f, fmt.Sprintf("default with a model provider (%s) configured", m.provider))
}

// provisionConfig is the streams section of rein.yaml over the defaults.
func provisionConfig(file *fileConfig) (natsserver.ProvisionConfig, error) {
	prov := natsserver.DefaultProvision()
	if err := file.decodeSection("streams", &prov); err != nil {
		return prov, err
	}
	return prov, nil
}

// effectiveSettings is what a server-side command will run with: the
// inception module and its model, taxonomy, domain, stages, NATS, HTTP and
// each stream's retention, secrets redacted.
func effectiveSettings(cmd *cobra.Command, sf *serverFlags, so *stageOptions, stages []string, file *fileConfig, prov natsserver.ProvisionConfig) []setting {
	src := func(name string) string { return flagSource(cmd.Flags().Lookup(name)) }
	var out []setting
	add := func(key, value, source string) { out = append(out, setting{key, value, source}) }
	lc := so.modules.llmConfig()
	add("module", so.modules.module, src("module"))
	add("provider", orNone(lc.Provider), llmSource(cmd, "provider", lc.Provider, llm.EnvProvider))
	add("model", orNone(lc.Model), llmSource(cmd, "model", lc.Model, llm.EnvModel))
	add("base_url", orNone(lc.BaseURL), llmSource(cmd, "base-url", lc.BaseURL, llm.EnvBaseURL))
	key := "none"
	if lc.APIKey != "" {
		key = redacted
	}
	add("api_key", key, "env "+llm.EnvAPIKey+", OPENAI_API_KEY or ANTHROPIC_API_KEY")
	add("taxonomy", taxonomyLabel(so.modules.taxonomy), src("taxonomy"))
	add("plan", so.modules.plan, src("plan"))
	add("domain", so.Detector.Domain, src("domain"))
	add("stages", strings.Join(stages, ","), src("stages"))
	add("agent", agentLabel(so, lc), src("agent-backend"))
	if sf.nats.url != "" {
		add("nats", "external "+sf.nats.url, src("nats-url"))
	} else {
		add("nats", fmt.Sprintf("embedded, listening on %s, data in %s", sf.listen, sf.dataDir), src("nats-listen")+"; data-dir: "+src("data-dir"))
	}
	add("nats_auth", natsAuthLabel(sf), "flags nats-*")
	add("http", orNone(sf.httpAddr), src("http"))
	streamSrc := sourceDefault
	if file.hasSection("streams") {
		streamSrc = "file " + file.where("streams")
	}
	for _, name := range natsserver.StreamNames {
		add("streams."+name, retentionLabel(prov.StreamConfig(name).MaxAge, prov.StreamConfig(name).MaxBytes,
			prov.StreamConfig(name).Replicas, prov.StreamConfig(name).Storage.String()), streamSrc)
	}
	add("kv_ttl", prov.KVTTL.String(), streamSrc)
	sinks := "none (outcomes stay in REIN_OUTCOMES)"
	if file.hasSection("sinks") {
		sinks = "configured in " + file.where("sinks")
	}
	sinksSrc := sourceDefault
	if file.hasSection("sinks") {
		sinksSrc = "file " + file.where("sinks")
	}
	add("sinks", sinks, sinksSrc)
	return out
}

// llmSource names where a model setting came from: a flag (which flag,
// environment or file applySources recorded), or REIN_LLM_* read by
// llm.ConfigFromEnv when no flag source set it.
func llmSource(cmd *cobra.Command, flag, value, env string) string {
	s := flagSource(cmd.Flags().Lookup(flag))
	switch {
	case s != sourceDefault || value == "":
		return s
	case strings.TrimSpace(os.Getenv(env)) == "" && flag == "provider":
		return "inferred from " + llm.EnvScript + " or " + llm.EnvCassette
	}
	return "env " + env
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func taxonomyLabel(path string) string {
	if path == "" {
		return "embedded default (" + inception.DefaultTaxonomy().Version + ")"
	}
	t, err := inception.LoadTaxonomy(path)
	if err != nil {
		return path + " (unreadable: " + err.Error() + ")"
	}
	return path + " (" + t.Version + ")"
}

func agentLabel(so *stageOptions, lc llm.Config) string {
	switch {
	case so.AgentWorker.Backend == agentworker.BackendNone:
		return "none (sidecar mode: the platform's own agent consumes rein.tasks.>)"
	case so.Given.AgentModel != nil:
		return "built-in simulator, tools " + so.AgentWorker.Backend
	case so.AgentScript != "":
		return "scripted simulator " + so.AgentScript + ", tools " + so.AgentWorker.Backend
	case lc.Provider == "":
		return "none: no model configured, sidecar mode"
	}
	return lc.Provider + " model " + orNone(lc.Model) + ", tools " + so.AgentWorker.Backend
}

// natsAuthLabel says how rein's connections authenticate. The embedded
// server always requires nkeys, so it is never "none" there.
func natsAuthLabel(sf *serverFlags) string {
	f := &sf.nats
	if f.url == "" {
		return "nkeys: one identity per stage, seeds in " + filepath.Join(sf.dataDir, "nats-keys")
	}
	if sf.natsKeysDir != "" {
		return "nkeys: one identity per stage, seeds in " + sf.natsKeysDir
	}
	var parts []string
	if f.nkey != "" {
		parts = append(parts, "nkey "+f.nkey)
	}
	if f.creds != "" {
		parts = append(parts, "creds "+f.creds)
	}
	if f.user != "" {
		parts = append(parts, "user "+f.user+" password "+secretLabel(f.password))
	}
	if f.token != "" {
		parts = append(parts, "token "+redacted)
	}
	if f.tlsCA != "" || f.tlsCert != "" {
		parts = append(parts, "tls")
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func secretLabel(s string) string {
	if s == "" {
		return "none"
	}
	return redacted
}

func retentionLabel(maxAge time.Duration, maxBytes int64, replicas int, storage string) string {
	age := "forever"
	if maxAge > 0 {
		age = maxAge.String()
	}
	size := "unlimited"
	if maxBytes > 0 {
		size = fmt.Sprintf("%d bytes", maxBytes)
	}
	return fmt.Sprintf("max_age %s, max_bytes %s, replicas %d, storage %s", age, size, replicas, strings.ToLower(storage))
}

// logAttrs renders settings for the start-up log line.
func logAttrs(settings []setting) []any {
	attrs := make([]any, 0, len(settings))
	var stream []any
	for _, s := range settings {
		if name, ok := strings.CutPrefix(s.key, "streams."); ok {
			stream = append(stream, slog.String(name, s.value))
			continue
		}
		attrs = append(attrs, slog.String(s.key, s.value))
	}
	return append(attrs, slog.Group("retention", stream...))
}

// flagValue is a flag's value for display, secrets redacted.
func flagValue(f *pflag.Flag) string {
	if secretFlags[f.Name] {
		return secretLabel(f.Value.String())
	}
	return f.Value.String()
}

// writeYAML prints settings and every other flag as YAML, each value with
// its source as a comment.
func writeYAML(b *strings.Builder, settings []setting, cmd *cobra.Command) {
	quote := func(value string) string {
		q, err := yaml.Marshal(value)
		if err != nil {
			return fmt.Sprintf("%q", value)
		}
		return strings.TrimSpace(string(q))
	}
	line := func(indent, key, value, source string) {
		fmt.Fprintf(b, "%s%s: %s  # %s\n", indent, key, value, source)
	}
	inStreams := false
	for _, s := range settings {
		name, isStream := strings.CutPrefix(s.key, "streams.")
		if isStream && !inStreams {
			b.WriteString("streams:\n")
			inStreams = true
		}
		if isStream {
			line("  ", name, quote(s.value), s.source)
			continue
		}
		inStreams = false
		line("", s.key, quote(s.value), s.source)
	}
	b.WriteString("flags:\n")
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Name == "help" {
			return
		}
		v := flagValue(f)
		switch f.Value.Type() {
		case "bool", "int", "float64", "duration", "stringSlice":
			// Already a YAML scalar or flow sequence.
		default:
			v = quote(v)
		}
		line("  ", f.Name, v, flagSource(f))
	})
}
