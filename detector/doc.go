// Package detector holds rein's inception modules and their error taxonomy.
//
// At every user turn an inception module sees the surface dialogue (oldest
// first, the last element being the user turn to judge), the agent's tool
// catalogue and the taxonomy, and returns a Decision: whether a known
// user-induced error is present (DESIGN.md §1) and, when so, the recovery
// reasoning to plant as the agent's first think step.
//
// Exports:
//   - Taxonomy: versioned YAML (DefaultTaxonomy embeds the six default types;
//     LoadTaxonomy/ParseTaxonomy refuse an invalid file with the field and
//     line). Every Decision records Taxonomy.Version.
//   - Module: NewLLM (one model call per turn through llm.Client: a static,
//     cacheable system prompt and a fenced dynamic dialogue; structured
//     answer validated against a JSON Schema), NewRules (offline, grounded in
//     the tool schemas and the taxonomy's domain notes; RulesPrecise or the
//     looser RulesRecall gate) and NewCascade (recall gate, then the model).
//   - RenderPlan/SanitizeEvidence: the planted reasoning is the taxonomy's
//     recovery plan with a sanitised evidence quote as its only slot.
//
// This package consumes no subjects and exports no metrics itself: the
// detector stage (stage*.go) consumes user turns, publishes
// dev.rein.detection.v1 and exports rein_detector_* metrics; the cascade
// exposes its gate counters (Cascade.Stats, Cascade.OnGate) for
// rein_detector_gate_total{result}.
package detector
