// Package run is the runner of `rein eval run`: it plays evaluation
// scenarios (package eval) through rein's real pipeline under the four
// conditions and records every play in a resumable run directory.
//
// The pipeline is behind one small interface, Starter: a function that
// starts the embedded JetStream server and the stages for a Spec (one
// condition on one domain) and returns a Pipeline, whose Turn publishes a
// user turn to REIN_TURNS and returns the Outcome read back from the
// streams (detection, planted thought, tool calls, reply, escalation).
// cmd/rein/eval.go implements it with the runtime `rein serve` uses; this
// package never imports the stages.
//
// A play (player.play): the opening's error turn is published as user
// turn 1 and answered with the opening's recorded mishandling
// (openingClient, the same in every condition), then the follow-up as
// user turn 2, then the user simulator (userSim, prompt UserSimPrompt)
// continues from the τ-bench task's instruction until it writes StopToken,
// the conversation goes to a human, or Config.MaxTurns. The final database
// is rebuilt by running the conversation's tool calls on a fresh session
// and scored with eval.Score.
//
// Conditions: none and npi and self-refine run the detector with a module
// that never activates; rein runs the configured module behind the trigger
// mode (TriggerFixed: only user turn 1; TriggerDynamic: every user turn).
// npi appends the taxonomy and its recovery plans to the agent's system
// prompt (NPIPrompt); self-refine asks the agent once per user turn to
// check its drafted reply against them (refineClient).
//
// Model calls carry no conversation id, so a tap ties them to the
// conversation being played by its first user message; two conversations
// with the same first message never run at once on one pipeline.
//
// Offline: with no agent model, simAgent — a deterministic simulator that
// follows a planted plan (the recovery tool, then the task's ground-truth
// actions) and mishandles otherwise — plays the agent; SimUser is the
// scripted user simulator (usersim.yaml). Their figures measure the
// harness, not a model.
//
// Consumes: scenarios, τ-bench data (tasks, domain data, policy.md),
// model clients. Produces, in Config.Dir: run.json (Manifest),
// scenarios.jsonl, results.jsonl (one eval.Result per finished play,
// appended and synced), plays/<condition>/<scenario>.t<trial>.json (Play:
// every turn, detection, call and reply, the trajectory and verdict), and
// the report files (WriteRunReport); pipelines/ holds the JetStream
// storage of the pipelines while they run. It exports no metrics.
//
// Exports: Config, Deps, Run, Summary, Spec, Pipeline, Starter, Outcome,
// Call, Detection, Play, TurnRecord, Line, Manifest, ReadManifest,
// ReadResults, BuildReport, WriteRunReport, NPIPrompt, UserSimPrompt,
// SimUser, NewProgress, Progress (also used by the scenario generator),
// EstimateUsage, Estimating, CharsPerToken.
//
// Tokens: every model client (agent, user simulator; the inception
// model's through cmd/rein) is wrapped in Estimating, which gives a call
// whose response reports no usage (the scripted simulators) the
// deterministic EstimateUsage; reported usage is kept.
package run
