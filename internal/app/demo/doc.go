// Package demo is the driver of `rein demo`: it plays the bundled sample
// conversations (demodata/conversations.yaml: each user-induced error type
// of the default taxonomy at least once, plus clean conversations) through
// a running pipeline and reports, per turn, the detection, the planted
// thought, the agent's tool calls, escalations and reports, then a summary.
//
// Consumes: everything the pipeline stores for its tenant
// (rein.*.demo.>) and the dead letters (rein.dlq.>), from a plain NATS
// subscription (Collector, which `rein eval run` reads outcomes with too).
// Produces: the user turns, rein.turns.demo.<conv>.user in REIN_TURNS.
// Exports no metrics. Conversations and ScriptedAgent are the bundled
// conversations and the offline agent (demodata/agent.yaml); Play plays
// them and writes the transcript or the JSON Summary. The runtime and its
// stages are started by the caller (cmd/rein).
package demo
