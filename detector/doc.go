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
// The detector stage (stage*.go: StageConfig, Deps, New, Run):
//
//   - consumes REIN_TURNS, every subject rein.turns.<tenant>.<conv>.user|agent
//     (durable "detector"): agent turns only extend the conversation's
//     surface context; each user turn is judged. Undecodable turns are
//     dead-lettered to rein.dlq.detector and removed from REIN_TURNS.
//   - produces one dev.rein.detection.v1 per user turn on
//     rein.detections.<tenant>.<conv>, id detection-<tenant>-<conv>-<turn>,
//     yes or no; a module error or deadline gives failed=true, no activation.
//   - exports rein_detector_decisions_total{tenant,outcome},
//     rein_detector_activations_total{tenant,error_type},
//     rein_detector_inception_seconds{module} and, for the cascade,
//     rein_detector_gate_total{result} from Cascade.Stats.
package detector
