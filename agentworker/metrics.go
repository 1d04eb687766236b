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
	// byTool holds each declared tool's counters (and unknownTool's), by
	// outcome: a call looks its counter up once, without hashing labels.
	byTool map[string]*toolCounters
}

// toolCounters are one tool's rein_agentworker_tool_calls_total series.
type toolCounters struct{ ok, error, failed prometheus.Counter }

func newMetrics(reg prometheus.Registerer, tools map[string]bool) *metrics {
	m := &metrics{
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
	}
	m.byTool = make(map[string]*toolCounters, len(tools)+1)
	for name := range tools {
		m.byTool[name] = m.counters(name)
	}
	m.byTool[unknownTool] = m.counters(unknownTool)
	return m
}

func (m *metrics) counters(tool string) *toolCounters {
	return &toolCounters{ok: m.toolCalls.WithLabelValues(tool, ToolOK), error: m.toolCalls.WithLabelValues(tool, ToolError),
		failed: m.toolCalls.WithLabelValues(tool, ToolFailed)}
}

func (m *metrics) toolCall(name, outcome string) {
	c, ok := m.byTool[name]
	if !ok {
		c = m.byTool[unknownTool]
	}
	switch outcome {
	case ToolOK:
		c.ok.Inc()
	case ToolError:
		c.error.Inc()
	default:
		c.failed.Inc()
	}
}
