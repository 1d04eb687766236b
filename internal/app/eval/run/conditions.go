package run

import (
	"fmt"
	"slices"
	"strings"

	"github.com/reinception/rein/inception"
	"github.com/reinception/rein/internal/app/eval"
)

// Trigger modes: when the inception module judges a user turn.
const (
	// TriggerFixed judges one user turn: the planting point (see
	// PlantOpening and PlantErrorTurn; for a clean scenario its first
	// turn, so that false activations are measured in this mode too).
	TriggerFixed = "fixed"
	// TriggerDynamic judges every user turn (rein's production mode).
	TriggerDynamic = "dynamic"
)

// Planting points of the fixed trigger: which user turn of an error
// scenario is judged.
const (
	// PlantOpening (the default, the paper's protocol) judges the opening's
	// follow-up, user turn 2: the module sees the error turn, the recorded
	// mishandling and the follow-up, and a planted thought precedes the
	// agent's first own decision.
	PlantOpening = "opening"
	// PlantErrorTurn (an ablation, rein's earlier default) judges the bare
	// error turn, user turn 1, before the recorded mishandling.
	PlantErrorTurn = "error-turn"
)

// conditionUsesModule reports whether the inception module runs under a
// condition (only rein's does; the others run the pipeline with a module
// that never activates).
func conditionUsesModule(c string) bool {
	return c == eval.ConditionRein || c == eval.ConditionReinNoTool
}

// validCondition reports whether c is one of eval.Conditions or
// eval.Ablations.
func validCondition(c string) bool {
	return slices.Contains(eval.Conditions, c) || slices.Contains(eval.Ablations, c)
}

// recoveryGuide renders the taxonomy the agent is told about under npi and
// asked to check against under self-refine: each type the module would be
// shown (held-out types left out, as from the module), its definition, its
// recovery plan and recovery tool.
func recoveryGuide(tax *inception.Taxonomy) string {
	var b strings.Builder
	for _, t := range tax.PromptTypes() {
		plan := strings.ReplaceAll(t.RecoveryPlan, `"`+inception.EvidenceSlot+`"`, "the user's words")
		plan = strings.ReplaceAll(plan, inception.EvidenceSlot, "the user's words")
		fmt.Fprintf(&b, "- %s (%s): %s\n  Recovery: %s (tool: %s)\n",
			t.Name, t.Category, oneLine(t.Definition), oneLine(plan), t.RecoveryTool)
	}
	return b.String()
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// NPIPrompt is the naive prompt-injection baseline's system prompt: the
// domain's policy with the error taxonomy and its recovery plans appended.
// It changes the agent's prompt on purpose; rein never does.
func NPIPrompt(policy string, tax *inception.Taxonomy) string {
	return strings.TrimRight(policy, "\n") + "\n\n" +
		"## Errors users make and how to recover from them\n\n" +
		"Users sometimes make requests that are ambiguous or that this service cannot fulfil. " +
		"Before acting on a user's message, check it for the errors below; when one is present, " +
		"follow its recovery and use its tool.\n\n" + recoveryGuide(tax)
}

// selfRefinePrompt asks the agent, once per user turn, to check its draft
// reply for the listed errors before answering.
func selfRefinePrompt(tax *inception.Taxonomy) string {
	return "Before this reply is sent, check it. Does the customer's latest request contain one of these errors, " +
		"and does your draft handle it?\n\n" + recoveryGuide(tax) +
		"\nIf an error is present and your draft does not recover from it, follow the recovery above (you may call its tool). " +
		"Otherwise give your reply again. Answer the customer directly; do not mention this check."
}
