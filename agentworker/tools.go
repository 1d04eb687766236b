package agentworker

import (
	"encoding/json"

	"github.com/reinception/rein/internal/llm"
	"github.com/reinception/rein/schemas"
)

// RecoveryTools are the tools the stage declares next to the backend's own
// when the backend lacks them: think (so that the planted step is a call
// of a declared tool), ambiguity_report and transfer_to_human_agents.
var RecoveryTools = []llm.Tool{
	{
		Name:        schemas.ToolThink,
		Description: "Write down a private reasoning step. Nothing is looked up or changed; the thought only becomes part of your own record of the conversation.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"thought":{"type":"string","description":"A thought to think about."}},"required":["thought"]}`),
	},
	{
		Name:        schemas.ToolAmbiguityReport,
		Description: "Record internally why the user's request is ambiguous (an unclear reference, several readings, or contradicting statements) before resolving it with the user. It changes no data and returns an acknowledgement.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"report":{"type":"string","description":"What is ambiguous and which readings are possible."}},"required":["report"]}`),
	},
	{
		Name:        schemas.ToolTransfer,
		Description: "Hand the conversation over to a human colleague, with a short summary of what the user needs. Use it when the user asks for a person, or when the request cannot be handled with your tools. The automated conversation ends.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"summary":{"type":"string","description":"A summary of the user's issue."}},"required":["summary"]}`),
	},
}

// Observations of the recovery tools.
const (
	ReportAck       = "Ambiguity report recorded."
	TransferSuccess = "Transfer successful"
)

// catalogue is the backend's tools followed by the recovery tools it lacks.
func catalogue(backend []llm.Tool) []llm.Tool {
	out := append([]llm.Tool(nil), backend...)
	have := map[string]bool{}
	for _, t := range backend {
		have[t.Name] = true
	}
	for _, t := range RecoveryTools {
		if !have[t.Name] {
			out = append(out, t)
		}
	}
	return out
}

// stringArg reads one string argument of a call, or the raw arguments
// when they are not an object holding it.
func stringArg(args json.RawMessage, name string) string {
	var m map[string]any
	if json.Unmarshal(args, &m) == nil {
		if s, ok := m[name].(string); ok {
			return s
		}
	}
	return string(args)
}
