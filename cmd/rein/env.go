package main

import (
	"strings"

	"github.com/reinception/rein/internal/llm"
	"github.com/reinception/rein/streams/bus"
	"github.com/reinception/rein/streams/natsserver"
)

// modelEnv are the variables of the model providers (internal/llm), read
// by every command that calls a model.
var modelEnv = []struct{ name, help string }{
	{llm.EnvProvider, "model provider: openai, anthropic, replay or scripted (= --provider; with it set, serve's and demo's --module defaults to llm)"},
	{llm.EnvModel, "model name (= --model)"},
	{llm.EnvBaseURL, "OpenAI-compatible or Anthropic base URL (= --base-url)"},
	{llm.EnvAPIKey, "API key (else OPENAI_API_KEY or ANTHROPIC_API_KEY, by provider); never logged"},
	{llm.EnvAPIKeyFile, "a file holding the API key (a mounted secret); REIN_LLM_API_KEY wins when both are set"},
	{llm.EnvHeaders, "extra request headers, k=v,k=v"},
	{llm.EnvTimeout, "per-attempt timeout of a model call (a duration such as 45s, or seconds; default 60s)"},
	{llm.EnvMaxRetries, "retries of a failed attempt"},
	{llm.EnvScript, "script of the scripted simulator"},
	{llm.EnvCassette, "cassette of the replay provider"},
	{llm.EnvRecord, "append every request/response to this cassette"},
}

// otherEnv are the remaining variables rein reads.
var otherEnv = []struct{ name, help string }{
	{"REIN_CONFIG", "rein.yaml to read (= --config)"},
	{"REIN_NATS_PASSWORD", "password of --nats-user on an external NATS (never on the command line, where every local user sees it)"},
	{"REIN_NATS_TOKEN", "token of an external NATS (never on the command line)"},
	{"REIN_BENCH_WORKERS", "rein bench: parallel workers of the raw-chain baseline"},
}

// sourcesHelp is the precedence paragraph of the commands that read
// rein.yaml.
const sourcesHelp = `Every flag can also be set as REIN_<FLAG> in the environment (REIN_NATS_URL, REIN_DATA_DIR, …) or as a
key in --config rein.yaml; the command line wins over the environment, which wins over the file, for
every setting: --provider, --model and --base-url are also set by REIN_LLM_PROVIDER, REIN_LLM_MODEL and
REIN_LLM_BASE_URL. An unknown key in rein.yaml is an error naming its line. See rein --help for every
variable.`

// envHelp lists every variable rein reads, and the stream names that look
// like variables but are not.
func envHelp() string {
	var b strings.Builder
	b.WriteString("Environment:\n  REIN_<FLAG>           any flag of the command, e.g. REIN_NATS_URL for --nats-url (the command line wins over it, it over rein.yaml)\n")
	for _, group := range [][]struct{ name, help string }{otherEnv, modelEnv} {
		for _, v := range group {
			b.WriteString("  " + padRight(v.name, 22) + v.help + "\n")
		}
	}
	names := append(append([]string{}, natsserver.StreamNames...), bus.StreamReplay, bus.BucketConversations, bus.BucketMembers)
	b.WriteString("\nStream and bucket names (not variables): " + strings.Join(names, ", ") + ".")
	return b.String()
}

func padRight(s string, n int) string {
	if len(s) >= n {
		return s + " "
	}
	return s + strings.Repeat(" ", n-len(s))
}
