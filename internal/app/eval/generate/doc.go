// Package generate writes evaluation scenarios with a model (`rein eval
// scenarios generate`): for every (τ-bench task, error type, follow-up
// style) it asks the model, with the system prompt in prompt.md (embedded,
// SystemPrompt) and a tagged request (UserMessage: the task, its
// ground-truth actions, the user's records, the agent's tools, the error
// type's definition and examples from the taxonomy, the style, the seed),
// for an opening of three utterances plus the evidence and readings the
// validation reads; it validates each (checker.Validate: the error turn
// carries the error, the mishandling reply does not already recover, the
// follow-up has its style), asks again with the reason up to
// Config.Attempts answers (RetryMessage), and keeps the accepted ones as
// scenarios.
//
// Consumes: τ-bench data (tasks, users, reservations, orders, tools), the
// taxonomy, a model client (any llm provider; Purpose labels its calls,
// so the cassette recorder files them under cassettes/scenario_generator.jsonl).
// Produces: Output (accepted eval.Scenario values and Rejected openings
// with their reasons) and, with Write, the scenario JSONL file and its
// sibling RejectedPath. It publishes no events and exports no metrics.
//
// Reproducible: with the same seed, tasks and answers the files are byte
// for byte the same (no times in them; the output order is the job order
// whatever the concurrency); the answers themselves are made repeatable by
// recording the model's calls (llm.Recorder) and replaying them.
//
// Exports: Config, Generate, Output, Draft, Rejected, Write, RejectedPath,
// SystemPrompt, UserMessage, RetryMessage, Recovers, MaxUtterance, Purpose, SchemaName, the Reason
// constants, ErrInvalidConfig, Script.
package generate
