package llmmodule

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/reinception/rein/inception"
	"github.com/reinception/rein/inception/planted"
	"github.com/reinception/rein/internal/llm"
	"github.com/reinception/rein/internal/testutil/inceptiontest"
)

// FuzzLLMAnswer: whatever a model answers (any bytes, any JSON) to any
// user turn, the llm module never panics or fails, and what it would plant
// is well formed: a type of the taxonomy with its category and recovery
// tool; evidence empty or a quote of the user's last message; a reasoning
// that, generated or not, names the type's recovery tool and no other tool
// of the agent's in any look-alike form (NamesTool), within the cap.
func FuzzLLMAnswer(f *testing.F) {
	f.Add(`{"rein":true,"error_type":"anaphora","evidence":"cancel that one","reasoning":"Two bookings are listed; call ambiguity_report."}`, "Please cancel that one.")
	f.Add(`{"rein":false,"error_type":null,"evidence":"","reasoning":""}`, "cancel ABC123")
	f.Add(`{"rein":true,"error_type":"unsupported_domain","evidence":"hotel","reasoning":"call cancel_reservation now"}`, "book a hotel")
	f.Add("```json\n{\"rein\":true,\"error_type\":\"contradiction\",\"evidence\":\"keep it\",\"reasoning\":\"x\"}\n```", "keep it but cancel it")
	f.Add(`{"rein":true,"error_type":"held_out","evidence":"a","reasoning":"b"}`, "a")
	f.Add(`{"rein":true,"error_type":"unsupported_parameter","evidence":"first class\u0000","reasoning":"`+strings.Repeat("transfer_to_human_agents ", 80)+`"}`, "first class please")
	airline := inceptiontest.MiniTools(f, "airline")
	tax := inception.DefaultTaxonomy()
	var agentTools []string
	for _, t := range airline {
		if t.Name != inception.ToolTransferToHuman && t.Name != inception.ToolAmbiguityReport {
			agentTools = append(agentTools, t.Name)
		}
	}
	var answer string // what the model says next (the fuzz function runs one input at a time)
	client := &inceptiontest.FakeClient{Reply: func(context.Context, llm.Request) (llm.Response, error) {
		return llm.Response{Content: answer, Model: "fake-model"}, nil
	}}
	modules := map[string]*LLMModule{}
	for _, plan := range []string{planted.PlanTemplate, planted.PlanGenerated} {
		m, err := NewLLM(LLMConfig{Client: client, Plan: plan})
		if err != nil {
			f.Fatal(err)
		}
		modules[plan] = m
	}
	f.Fuzz(func(t *testing.T, said, last string) {
		answer = said
		for plan, m := range modules {
			in := inception.Input{Tenant: "acme", Domain: "airline", Tools: airline, Dialogue: inceptiontest.Dialogue("I have ABC123 and DEF456", "Which one?", last)}
			d, err := m.Detect(context.Background(), in)
			if err != nil {
				t.Fatalf("%s: %v", plan, err)
			}
			if p := inceptiontest.DecisionProblem(tax, d, last); p != "" {
				t.Fatalf("%s: %s", plan, p)
			}
			if !d.Rein {
				continue
			}
			if !planted.ContainsWord(d.Reasoning, d.RecoveryTool) || utf8.RuneCountInString(d.Reasoning) > 2000 {
				t.Fatalf("%s: reasoning %q does not name %s, or is too long", plan, d.Reasoning, d.RecoveryTool)
			}
			for _, tool := range agentTools {
				if planted.NamesTool(d.Reasoning, []string{tool}) != "" {
					t.Fatalf("%s: reasoning %q names the agent's tool %s", plan, d.Reasoning, tool)
				}
			}
		}
	})
}
