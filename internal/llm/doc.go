// Package llm holds rein's model providers behind one small interface,
// Client: a chat call with tools, structured output, token usage and a
// per-call deadline taken from ctx.
//
// Consumes: HTTP APIs of model servers (OpenAI chat completions or any
// compatible server, Anthropic Messages), cassette files, simulator scripts.
// Produces: Response values for the detector (purpose "inception"), the
// agent worker ("agent") and the user simulator ("user_simulator").
//
// # Providers
//
//   - openai: the official openai-go SDK. Config.BaseURL points it at any
//     OpenAI-compatible server (vLLM, Ollama, llama.cpp server, LiteLLM);
//     Config.Headers adds gateway headers. Tools become function tools, tool
//     results become tool messages, Request.ResponseSchema becomes
//     response_format json_schema. Usage includes prompt_tokens_details.cached_tokens.
//   - anthropic: the official anthropic-sdk-go SDK. Request.System is one
//     system block marked cache_control ephemeral (prompt caching of tools +
//     system). Structured output is a forced call of a tool named
//     ResponseSchema.Name whose input_schema is the schema; its input is
//     returned as Response.Content (JSON text), exactly like openai.
//     Usage.InputTokens includes cache reads and writes; CachedInputTokens is
//     the cache reads.
//   - replay: answers from a cassette (JSONL of CassetteEntry), offline and
//     deterministic. The key is RequestKey: a SHA-256 of CanonicalRequest
//     (purpose, system, messages without tool-call ids, tools, schema; JSON
//     normalised). A request not in the cassette fails with ErrCassetteMiss
//     naming its key. Config.Record wraps any other provider in a Recorder
//     that appends what it sees to a cassette.
//   - scripted: a deterministic SIMULATOR for tests, the demo and load
//     benchmarks, driven by a script file. It is not a model and never
//     claims to be one: Provider() is "scripted" and Model() is the
//     script's name.
//
// New(cfg, reg) builds one of them from a Config (ConfigFromEnv reads the
// REIN_LLM_* variables) and wraps it in the one retry policy: 429, 5xx, 408,
// 409, timeouts and connection errors are retried with exponential backoff
// and jitter, or after the server's Retry-After-Ms / Retry-After (seconds or
// HTTP-date), never past ctx's deadline. The SDKs' own retries are off.
// Failures unwrap to ErrRateLimited, ErrServer, ErrRejected or ErrTimeout;
// HTTP failures are *APIError.
//
// # Metrics (registered on the Registerer given to New; safe to call New twice)
//
//   - rein_model_requests_total{provider,model,purpose,outcome}: every attempt
//     (retries count), outcome ok, error, timeout or rate_limited.
//   - rein_model_tokens_total{provider,model,purpose,kind}: kind input (whole
//     prompt), output, cached_input.
//   - rein_model_request_seconds{provider,purpose}: duration of each attempt.
//
// A purpose's series are created (at zero) on its first call, so rates and
// ratios exist before the first failure. Purpose labels are kept bounded: short [a-z0-9_-] names pass, anything
// else is "other", empty is "unspecified".
//
// # Script format (scripted provider)
//
// A script is YAML (or JSON). testdata/airline_demo.yaml is a complete
// example that drives both the task agent and the inception module.
//
//	name: airline-demo          # the Model() label; defaults to the file name
//	description: free text
//	think_tool: think           # tool whose `thought` argument `when.thought` reads
//	rules:                      # tried in order; the first that matches answers
//	  - name: lookup            # used in errors and as {{.rule}}
//	    when:                   # every matcher given must hold; all optional
//	      purpose: agent        # Request.Purpose equals
//	      last_role: user       # role of the last message: user, tool, assistant
//	      turn: 2               # number of user messages so far equals
//	      schema: inception     # Request.ResponseSchema.Name equals
//	      has_tool: get_reservation_details   # the request offers this tool
//	      called: [think]       # these tools were already called this turn
//	      not_called: [get_reservation_details]  # ...and these were not
//	      last_tool: get_user_details          # the latest tool result came from this tool
//	      user: '(?i)reservation (?P<res_id>[A-Z0-9]{6})'  # regex on the last user message
//	      thought: 'ambiguity_report'          # regex on the latest think call's thought (this turn)
//	      tool_result: '"status": "(?P<status>\w+)"'      # regex on the latest tool result (this turn)
//	      system: 'airline'     # regex on Request.System
//	      differ: [user.uid, result.owner]  # two captured groups, both captured and different
//	    latency: 20ms           # wait before answering (honours ctx); default 0
//	    respond:
//	      content: 'Looking up {{.user.res_id}}.'   # text (template)
//	      json: {rein: false}   # OR structured content, marshalled to JSON text
//	      tool_calls:           # tool calls, arguments an object
//	        - name: get_reservation_details
//	          arguments: {reservation_id: '{{.user.res_id}}'}
//	      stop_reason: tool_calls   # default tool_calls when calls are present, else stop
//	      usage: {input: 0, output: 0, cached: 0}   # reported token counts; default 0
//	  - name: outage
//	    when: {purpose: inception, user: 'OUTAGE'}
//	    error: simulated outage # fail with ErrSimulated instead of answering
//	default:                    # answers when no rule matches (no `when`)
//	  respond: {content: 'How can I help?'}
//
// A "turn" is everything after the last user message. Templates are Go
// text/template, applied to each string in content, json and tool-call
// names and arguments (strings only, so user text can never break the JSON
// around it). The data: .user, .thought, .result, .system (maps of the
// named groups captured by the matching regexes; a missing group name is an
// error), .last_user, .last_thought, .last_result, .last_tool, .purpose,
// .turn, .rule; functions json (JSON-encode a value), lower, upper, trim.
// Tool-call ids are deterministic: call_s<turn>_<assistant step>_<index>.
//
// Regexes and templates are compiled once at load and literal answers are
// pre-encoded, so a call costs microseconds (BenchmarkScripted). A request
// that no rule matches and no default answers fails with ErrNoRule.
package llm
