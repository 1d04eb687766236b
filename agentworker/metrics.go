package agentworker

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/reinception/rein/internal/telemetry"
)

// unknownTool is the tool label of calls to tools that were not declared.
const unknownTool = "_unknown"

// Tool call outcomes (the outcome label of rein_agentworker_tool_calls_total).
const (
	ToolOK     = "ok"     // the tool ran
	ToolError  = "error"  // the tool failed; the agent saw the error
	ToolFailed = "failed" // the backend could not run it; the task is retried
)

type metrics struct {
	turns      *prometheus.CounterVec
	turnSecs   prometheus.Observer
	toolCalls  *prometheus.CounterVec
	unverified prometheus.Counter
	releases   *prometheus.CounterVec
	declared   map[string]bool
}

func newMetrics(reg prometheus.Registerer, tools map[string]bool) *metrics {
	return &metrics{
		turns: telemetry.NewCounterVec(reg, telemetry.MAgentWorkerTurns,
			"Agent turns by outcome (reply, escalated, max_steps, human_path, agent_unavailable, failed, superseded).", "outcome"),
		turnSecs: telemetry.NewHistogramVec(reg, telemetry.MAgentWorkerTurnSeconds,
			"Time the agent took for one turn, from its task to its reply.", telemetry.LatencyBuckets).WithLabelValues(),
		toolCalls: telemetry.NewCounterVec(reg, telemetry.MAgentWorkerToolCalls,
			"Tool calls by tool and outcome (ok, error, failed).", "tool", "outcome"),
		unverified: telemetry.NewCounterVec(reg, telemetry.MAgentWorkerUnverifiedTasks,
			"Tasks refused because their signature is missing or wrong (dead-lettered unverified_task).").WithLabelValues(),
		releases: telemetry.NewCounterVec(reg, telemetry.MAgentWorkerReleases,
			"Conversations handed to a human given back to the agent, by reason (operator, quiet_period).", "reason"),
		declared: tools,
	}
}

func (m *metrics) toolCall(name, outcome string) {
	if !m.declared[name] {
		name = unknownTool
	}
	m.toolCalls.WithLabelValues(name, outcome).Inc()
}
