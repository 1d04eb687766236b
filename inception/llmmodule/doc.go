// Package llmmodule holds the inception modules that call a model: the
// LLM module and the cascade that puts a cheap gate in front of it. A
// library below the stages; it consumes and produces no subjects.
//
// Exports:
//   - NewLLM (LLMConfig, LLMModule): one model call per turn through
//     llm.Client, with a static, cacheable system prompt
//     (BuildStaticPrompt: the taxonomy's visible types, their contrasts
//     and judging rules, the agent's tools) and a fenced dynamic dialogue
//     (BuildDynamicPrompt, DefaultDialogueBudget). The answer, at most
//     MaxAnswerBytes, is validated against a JSON Schema; its evidence is
//     grounded in the user's words and its plan rendered or checked by
//     the planted-text checks of inception/planted.
//   - Few-shot examples (fewshot.go, opt-in LLMConfig.Examples): a
//     tenant's labelled turns, at most MaxExamples, identifiers masked
//     (MaskIdentifiers), fenced as data in that tenant's static prompt.
//   - NewCascade (Cascade, CascadeStats): a gate module (the recall
//     rules) judges every turn and only the turns it passes reach the
//     model (GatePass, GateSkip label its counters); when the model
//     cannot judge, the gate's own decision stands, recorded as
//     FallbackModel. Gate returns the gate, NeedsContext tells when the
//     gate's decision needs the agent's replies; WithGate derives the
//     cascade with a promoted gate around the same model and counters.
package llmmodule
